"""Tokens of the embedded MLflow server that open one run only: what the nodes of a cluster on
other hosts get instead of the server's own token (issue: a node's process can read and write
every run of the server with that one).

Whoever relays the server to such nodes (``backends/ray_group.py``) ``grant``s a token for the
attempt's (or the call's) run and revokes it when the attempt ends. A grant is a file of the
server's folder (``scoped/<sha256 of the token>.json``: the run, its experiment, the granting
process), so the server learns of it without a restart and never keeps the token itself; a
grant whose process is gone no longer opens anything. ``TokenGate`` (``app.py``) asks ``allows``
for each request that carries such a token: reading and writing that run (metrics, params,
tags, its status, its artifacts), reading experiments and the logged models of the run's
experiment (MLflow's client asks for them when it lists a run's artifacts); nothing else (no
search of runs, no other run, no new run, no deletion, no UI).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import time
import urllib.parse
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..pids import is_running, process_start_time

FOLDER = "scoped"
CHECK_S = 1.0  # how long a grant read from its file is trusted before it is read again
MOST_BODY = 16 << 20  # a JSON request of a scoped token read whole to find its run (log-batch)

# MLflow REST calls a run's processes make, with where their run is
_READ_EXPERIMENTS = re.compile(r"^/api/2\.0/mlflow/experiments/(get|get-by-name)$")
_RUN_CALLS = re.compile(
    r"^/api/2\.0/mlflow/(runs/(get|update|log-metric|log-parameter|log-batch|set-tag|"
    r"delete-tag|log-inputs|log-model|log-outputs)|metrics/get-history|artifacts/list)$"
)
_LIST_ARTIFACTS = "/api/2.0/mlflow-artifacts/artifacts"
_SEARCH_MODELS = "/api/2.0/mlflow/logged-models/search"
_ARTIFACTS = re.compile(
    r"^/api/2\.0/mlflow-artifacts/artifacts/(?P<experiment>[^/]+)/(?P<run>[^/]+)(/|$)"
)


@dataclass(frozen=True)
class Grant:
    run_id: str
    experiment_id: str
    pid: int
    started: float


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def grant(folder: str | os.PathLike[str], run_id: str, experiment_id: str) -> str:
    """A new token that opens ``run_id`` only, for as long as this process runs or until
    ``revoke``."""
    token = secrets.token_urlsafe(32)
    path = Path(folder) / FOLDER / f"{_digest(token)}.json"
    path.parent.mkdir(mode=0o700, exist_ok=True)
    record = {
        "run_id": run_id,
        "experiment_id": experiment_id,
        "pid": os.getpid(),
        "started": process_start_time(os.getpid()),
    }
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as file:
        json.dump(record, file)
    return token


def revoke(folder: str | os.PathLike[str], token: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        (Path(folder) / FOLDER / f"{_digest(token)}.json").unlink()


class Grants:
    """The server's side: the grant a token carries, if any, while its file is there (read at
    most once a ``CHECK_S``) and its granting process runs."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder) / FOLDER
        self._seen: dict[str, tuple[float, Grant | None]] = {}

    def find(self, token: str) -> Grant | None:
        key = _digest(token)
        now = time.monotonic()
        seen = self._seen.get(key)
        if seen is not None and now - seen[0] < CHECK_S:
            # a revoked grant opens nothing from the next request on
            return seen[1] if seen[1] is None or (self.folder / f"{key}.json").exists() else None
        found: Grant | None = None
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            record = json.loads((self.folder / f"{key}.json").read_text())
            candidate = Grant(
                str(record["run_id"]),
                str(record["experiment_id"]),
                int(record["pid"]),
                float(record["started"]),
            )
            if is_running(candidate.pid, candidate.started):
                found = candidate
        if len(self._seen) > 10_000:
            self._seen.clear()
        self._seen[key] = (now, found)
        return found


def needs_body(method: str, path: str) -> bool:
    """Whether the run of a request is in its JSON body (read before it is allowed)."""
    return method in ("POST", "PATCH") and (bool(_RUN_CALLS.match(path)) or path == _SEARCH_MODELS)


def allows(grant: Grant, method: str, path: str, query: str, body: bytes | None) -> str | None:
    """None when ``grant`` allows the request; else why not, in words."""
    refused = f"this token opens run {grant.run_id} only"
    params = urllib.parse.parse_qs(query)
    if path == _LIST_ARTIFACTS:  # the folder listed is a parameter
        path = f"{path}/{(params.get('path') or [''])[0].lstrip('/')}"
    if any(part in (".", "..") for part in path.split("/")):
        return f"{refused}: {path} leaves its folder"
    artifacts = _ARTIFACTS.match(path)
    if artifacts:
        if artifacts["run"] == grant.run_id and artifacts["experiment"] == grant.experiment_id:
            return None
        return refused
    if _READ_EXPERIMENTS.match(path) and method == "GET":
        return None
    if path == _SEARCH_MODELS:  # what MLflow's client asks when it lists a run's artifacts
        try:
            asked_in = json.loads(body or b"{}").get("experiment_ids")
        except (ValueError, AttributeError):
            asked_in = None
        return None if asked_in == [grant.experiment_id] else f"{refused} and its experiment"
    if not _RUN_CALLS.match(path):
        return f"{refused}: {method} {path} is not a call of a run"
    asked: set[str] = set()
    for name in ("run_id", "run_uuid"):
        asked.update(params.get(name, []))
    if body:
        try:
            value: Any = json.loads(body)
        except ValueError:
            return "the request's body is not JSON"
        if isinstance(value, dict):
            asked.update(str(value[name]) for name in ("run_id", "run_uuid") if value.get(name))
    return None if asked and asked <= {grant.run_id} else refused
