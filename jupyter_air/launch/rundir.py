"""The run folder of one ``.distributed()`` call: the one place the kernel, the launcher agent and
the ranks exchange files (payload, launch settings, per-rank logs, results, errors, outcome).

It lives under ``config.DATA_DIR/runs/`` when the kernel was started by a jupyter-air
server, else under the system's temporary folder. It is removed after a success and kept after a
failure, so that logs and error files can be read; the error names it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from ..config import DATA_DIR
from ..files import write_json

KEEP_FAILED_S = 7 * 24 * 3600  # run folders of failed calls are removed after a week


class RunDir:
    """Paths inside a run folder (no I/O but the small JSON helpers)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    # layout ---------------------------------------------------------------------------------
    @property
    def payload(self) -> Path:
        return self.path / "payload.pkl"

    @property
    def launch(self) -> Path:
        return self.path / "launch.json"

    @property
    def outcome(self) -> Path:
        return self.path / "outcome.json"

    @property
    def agent_info(self) -> Path:
        return self.path / "agent.json"

    @property
    def agent_log(self) -> Path:
        return self.path / "agent.log"

    def log_dir(self, rank: int) -> Path:
        return self.path / "logs" / f"rank-{rank}"

    def stdout(self, rank: int) -> Path:
        return self.log_dir(rank) / "stdout.log"

    def stderr(self, rank: int) -> Path:
        return self.log_dir(rank) / "stderr.log"

    def elastic_error_file(self, rank: int) -> Path:
        return self.log_dir(rank) / "error.json"

    def result(self, rank: int) -> Path:
        return self.path / f"result-{rank}.pkl"

    def error(self, rank: int) -> Path:
        return self.path / f"error-{rank}.pkl"

    def pid(self, rank: int) -> Path:
        return self.path / f"pid-{rank}.json"

    def rank_pids(self) -> dict[int, dict[str, Any]]:
        """Global rank → its pid file (``pid``, ``started``, ``local_rank``), for the ranks of
        this folder's node that have written one."""
        found = {}
        for path in self.path.glob("pid-*.json"):
            info = self.read_json(path)
            rank = path.stem.partition("-")[2]
            if info is not None and rank.isdigit() and isinstance(info.get("pid"), int):
                found[int(rank)] = info
        return found

    @property
    def restarts(self) -> Path:
        """torch elastic's restarts of the ranks (``max_restarts``): one entry a restart."""
        return self.path / "restarts.json"

    def round_dir(self, restart: int) -> Path:
        """What the ranks left before restart ``restart`` (results, errors, logs, stops)."""
        return self.path / f"before-restart-{restart}"

    def stops(self, who: str) -> Path:
        """The ranks that ``who`` (the driver, the agent) signalled to stop, and when."""
        return self.path / f"stops-{who}.json"

    # small helpers ----------------------------------------------------------------------------
    def read_json(self, path: Path) -> dict[str, Any] | None:
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)

    def __str__(self) -> str:
        return str(self.path)


STOPPERS = ("driver", "agent")  # the processes that stop ranks, each with its own record


def record_stops(run_dir: RunDir, who: str, ranks: list[int], signal: str) -> None:
    """Note that ``who`` is about to send ``signal`` to ``ranks``: a rank stopped by the launch
    itself is never the cause of its failure. The first time each rank was signalled is kept.
    Only ``who``'s own process writes its record, so read-modify-write is safe."""
    if not ranks:
        return
    path = run_dir.stops(who)
    stops = run_dir.read_json(path) or {}
    now = time.time()
    for rank in ranks:
        stops.setdefault(str(rank), {"time": now, "signal": signal})
    write_json(path, stops)


def read_stops(run_dir: RunDir) -> dict[int, float]:
    """When each rank was first signalled to stop by the launch (driver or agent)."""
    first: dict[int, float] = {}
    # the driver's, each agent's (one per node: stops-agent.json, or stops-agent-node-K.json
    # when several nodes' folders are brought together)
    records = sorted(run_dir.path.glob("stops-*.json"))
    for path in records:
        for key, info in (run_dir.read_json(path) or {}).items():
            with contextlib.suppress(TypeError, ValueError, KeyError):
                rank, when = int(key), float(info["time"])
                first[rank] = min(when, first.get(rank, when))
    return first


def runs_root() -> Path:

    data_dir = DATA_DIR.text()
    if data_dir:
        return Path(data_dir) / "runs"
    return Path(tempfile.gettempdir()) / f"jupyter-air-runs-{_user_tag()}"


def create_run_dir(function_name: str) -> RunDir:
    """A new, private run folder for one call of ``function_name``."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", function_name)[:40] or "fn"
    name = f"{stamp}-{safe}-{uuid.uuid4().hex[:8]}"
    for root in (runs_root(), Path(tempfile.gettempdir()) / f"jupyter-air-runs-{_user_tag()}"):
        with contextlib.suppress(OSError):
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
            prune_old_runs(root)
            path = root / name
            path.mkdir(mode=0o700)
            return RunDir(path)
    return RunDir(tempfile.mkdtemp(prefix=f"jupyter-air-{safe}-"))


def prune_old_runs(root: Path, max_age_s: float = KEEP_FAILED_S) -> None:
    """Remove the run folders kept from failed calls more than ``max_age_s`` ago (never one
    whose launcher still runs)."""
    cutoff = time.time() - max_age_s
    with contextlib.suppress(OSError):
        for path in root.iterdir():
            with contextlib.suppress(OSError):
                if path.is_dir() and path.stat().st_mtime < cutoff and not _running(RunDir(path)):
                    shutil.rmtree(path, ignore_errors=True)


def _running(run_dir: RunDir) -> bool:
    info = run_dir.read_json(run_dir.agent_info)
    if not info:
        return False
    from .processes import RankProcess

    return RankProcess(-1, int(info["pid"]), float(info["started"])).alive()


def _user_tag() -> str:
    getuid = getattr(os, "getuid", None)
    return str(getuid()) if getuid else "user"
