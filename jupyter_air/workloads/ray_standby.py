"""A Ray job run's supervisor started before the job run exists, so that its nodes start at once.

Before its first command, a Ray job run's supervisor pays for its interpreter and imports, a Ray
driver (``ray.init``) and a new Ray worker for each node runner: about 2 s, where the local
backend's whole first line takes 0.45 s. A *standby* is that supervisor started ahead of time
(its process: ``standby_process.py``; this module is how submissions find and hand it a job run):

- When a Ray job run ends, its supervisor starts one standby for its data folder
  (``start_standby``), in the environment it had itself. The standby imports what a supervisor
  imports, connects to the cluster and makes a node runner on each Ray node with a CPU (at most
  ``STANDBY_NODES``), then offers itself in ``<data>/workloads/standby/<key>.json``: a port on
  127.0.0.1, a token (the file is its owner's only: 0600 in a 0700 folder), its pid.
- ``air run`` (and every other submission) hands a Ray job run to a standby whose key matches
  (``hand_over``): the same interpreter, the same cluster, and the same environment a new
  supervisor would get (``PWD`` aside, and what ``import ray`` sets). The standby checks the
  token and the job run in the store, stops offering itself, and becomes that job run's
  supervisor: its output goes to the job's ``supervisor.log``, it runs the job run exactly as
  ``python -m jupyter_air.workloads.supervisor`` would, and its runners are its own actors, so
  a supervisor that dies still takes its nodes' commands with it. Without a matching standby,
  or when the hand-over fails in any way, the submission starts a supervisor as before.
- ``air run`` also asks a standby of its cluster for the cluster's nodes (its shape check), so
  it needs no ``import ray`` of its own.
- A standby ends by itself ``KEEP_RUNNERS_S`` after it was made (0: none is started), when its
  offer file is removed, when its data folder is gone, when a file of jupyter_air it loaded
  changed (an upgrade), or with its cluster (Ray ends a driver whose cluster stops answering).

One standby per key and data folder (a lock file); a second is not started while one is there.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import logging
import os
import signal
import socket
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import DATA_DIR, KEEP_RUNNERS_S
from ..private import open_private, private_folder

if TYPE_CHECKING:
    from ..backends.ray_backend import RayNode

log = logging.getLogger("jupyter_air.workloads.ray_standby")

STANDBY_NODES = 8  # node runners a standby makes ahead (a bigger job run makes the rest)
ANSWER_S = 10.0  # how long a submission waits for a standby's answer before starting its own
# what may differ between the standby's environment and a new supervisor's: the working folder,
# and what ``import ray`` sets in a process (a submission that imported Ray passes it on)
VOLATILE = ("PWD", "OLDPWD", "RAY_CLIENT_MODE")
LOG_LIMIT = 1 << 20  # a standby log larger than this is started afresh


def standby_folder(data: str | os.PathLike[str]) -> Path:
    return Path(data) / "workloads" / "standby"


def standby_key(env: Mapping[str, str], cluster: str | None) -> str:
    """Which standby may serve a supervisor of this environment on this cluster."""
    kept = sorted((k, v) for k, v in env.items() if k not in VOLATILE)
    text = json.dumps([sys.executable, cluster or "", kept])
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _offers(data: str | os.PathLike[str]) -> list[dict[str, Any]]:
    found = []
    folder = standby_folder(data)
    with contextlib.suppress(OSError):
        for path in folder.glob("*.json"):
            with contextlib.suppress(OSError, ValueError):
                found.append(json.loads(path.read_text()))
    return found


def _ask(offer: dict[str, Any], request: dict[str, Any]) -> tuple[dict[str, Any], socket.socket]:
    """``request`` sent to the standby of ``offer``; its answer and the open connection."""
    conn = socket.create_connection(("127.0.0.1", int(offer["port"])), timeout=1.0)
    try:
        conn.settimeout(ANSWER_S)
        conn.sendall((json.dumps({"token": offer["token"], **request}) + "\n").encode())
        line = conn.makefile("rb").readline(1 << 20)
        return json.loads(line), conn
    except BaseException:
        conn.close()
        raise


# a submission's side ------------------------------------------------------------------------------
def hand_over(
    data: str | os.PathLike[str],
    job_id: str,
    env: Mapping[str, str],
    cwd: str,
    cluster: str | None,
) -> tuple[int, float | None] | None:
    """Job run ``job_id`` handed to a standby ready for a supervisor of ``env`` on ``cluster``:
    its pid and start time; None when there is none or it did not take it (start one)."""
    key = standby_key(env, cluster)
    path = standby_folder(data) / f"{key}.json"
    try:
        offer = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    try:
        answer, conn = _ask(offer, {"ask": "job", "job": job_id, "cwd": cwd, "key": key})
    except (OSError, ValueError) as error:
        log.info("the standby supervisor did not answer (%s): starting one", error)
        return None
    with conn:
        if "pid" not in answer:
            log.info("the standby supervisor refused: %s", answer.get("refused"))
            return None
        try:
            conn.sendall(b"go\n")  # from here on the job run is the standby's
        except OSError:
            return None
    return int(answer["pid"]), answer.get("started")


def standby_nodes(data: str | os.PathLike[str], cluster: str | None) -> list[RayNode] | None:
    """The live nodes of ``cluster`` as a standby of this data folder sees them (its driver
    asks the cluster now); None when no standby of that cluster answers."""
    from ..backends.ray_backend import RayNode

    for offer in _offers(data):
        if offer.get("cluster") != (cluster or ""):
            continue
        try:
            answer, conn = _ask(offer, {"ask": "nodes"})
            conn.close()
            return [RayNode(**node) for node in answer["nodes"]]
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return None


def start_standby(
    data: str | os.PathLike[str],
    env: Mapping[str, str],
    cluster: str | None,
    cwd: str,
    *,
    mlflow: Path | None = None,
) -> int | None:
    """A standby started for supervisors of ``env`` on ``cluster`` (its pid); None when one is
    there already or ``KEEP_RUNNERS_S`` is 0. It holds the jupyter-air MLflow server in the
    folder ``mlflow`` (the job runs' own) running while it waits: the next job run finds both
    ready."""
    from ..mlflow_server.records import Lease, ServerFiles
    from ..pids import spawn_detached

    if not KEEP_RUNNERS_S.get(env):
        return None
    folder = private_folder(standby_folder(data))
    key = standby_key(env, cluster)
    if _locked(folder / f"{key}.lock"):
        return None
    logged = folder / f"{key}.log"
    with contextlib.suppress(OSError):
        if logged.stat().st_size > LOG_LIMIT:
            logged.unlink()
    argv = [
        sys.executable,
        "-m",
        "jupyter_air.workloads.standby_process",
        "--cluster",
        cluster or "",
    ]
    pid = spawn_detached(argv, log_file=logged, env={**env, DATA_DIR.name: str(data)}, cwd=cwd)
    if mlflow is not None:
        Lease.take(ServerFiles(mlflow), "standby supervisor", pid=pid)
    return pid


def end_standbys(data: str | os.PathLike[str]) -> list[int]:
    """Every standby of this data folder, ready or still getting ready, told to end (SIGTERM,
    by its pid, as its lock file names it while it holds it); their pids."""
    from ..pids import is_running

    ended = []
    for path in standby_folder(data).glob("*.lock"):
        if not _locked(path):
            continue  # nobody waits there (a standby that became a supervisor let it go)
        with contextlib.suppress(OSError, ValueError):
            holder = json.loads(path.read_text())
            pid, started = holder["pid"], holder["started"]
            if isinstance(pid, int) and is_running(pid, started):
                os.kill(pid, signal.SIGTERM)
                ended.append(pid)
    return ended


def _locked(path: Path) -> bool:
    """Whether another process holds the lock file ``path``."""
    try:
        with open_private(path) as file:
            fcntl.flock(file.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    except OSError:
        return True  # cannot tell: start none
    return False
