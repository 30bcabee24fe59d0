"""Starting the embedded MLflow server of a data folder, joining it, and leaving it.

``ensure_running(folder, what)`` is what every user calls: under the folder's start lock it takes
a lease for the calling process, joins the guard that runs (same address, same token), or — when
none does — stops what a dead guard left behind (MLflow's process group, found by its pid and
its store in the command line), and starts a new guard on the recorded port (when it is free) with
the recorded token. It returns at once: MLflow itself answers 5 to 55 s later (``wait_ready``).

``leave(folder, lease)`` releases a lease; the last user to leave stops the server (the guard
would notice within a second anyway; this makes a clean stop immediate).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from ..pids import group_alive, process_start_time, spawn_detached, stop_group, stop_process
from .records import (
    Endpoint,
    EndpointRecord,
    Lease,
    ServerFiles,
    free_port,
    live_leases,
    new_token,
)


def ensure_running(
    folder: str | os.PathLike[str],
    what: str,
    *,
    start_timeout_s: float = 180.0,
    python: str = sys.executable,
    lease_pid: int | None = None,
) -> tuple[Endpoint, Lease]:
    """The endpoint of the folder's server (started if need be) and a lease on it."""
    files = ServerFiles(folder)
    files.make()
    with files.lock():
        lease = Lease.take(files, what, pid=lease_pid)
        record = files.read_endpoint()
        if record is not None and record.guard_alive():
            return record.endpoint, lease
        stop_leftover(files)
        token = record.token if record is not None and record.token else new_token()
        # the recorded port: the guard waits for it to be free, and moves if it stays taken
        port = record.port if record is not None else free_port()
        files.write_endpoint(EndpointRecord(port, token))
        guard = _spawn_guard(files, start_timeout_s, python)
        files.write_endpoint(EndpointRecord(port, token, guard, process_start_time(guard)))
        return Endpoint(port, token), lease


def _spawn_guard(files: ServerFiles, start_timeout_s: float, python: str) -> int:
    env = dict(os.environ)
    env.pop("MLFLOW_TRACKING_URI", None)
    command = [
        python, "-m", "jupyter_air.mlflow_server.guard", str(files.folder),
        "--start-timeout", f"{start_timeout_s:g}",
    ]  # fmt: skip
    # outlives the process that started it, while leased; reaped by the starter if it ends first
    return spawn_detached(command, log_file=files.log_file, env=env, cwd=str(files.folder))


def stop_leftover(files: ServerFiles) -> bool:
    """Stop an MLflow of this folder whose guard is gone (SIGKILLed, crashed): its process
    group, recognised by its store in the command line. True when there was one."""
    status = files.read_status()
    pid = status.get("mlflow_pid")
    if not isinstance(pid, int) or not group_alive(pid) or not _runs_store(pid, files.store):
        return False
    stop_group(pid, grace_s=0.0)
    return True


def _runs_store(pid: int, store: Path) -> bool:
    import psutil

    try:
        return str(store) in " ".join(psutil.Process(pid).cmdline())
    except psutil.Error:
        return False


def leave(folder: str | os.PathLike[str], lease: Lease, *, timeout_s: float = 20.0) -> bool:
    """Release ``lease``; when no other process holds one, stop the server now and wait until
    its processes are gone. True when it was stopped."""
    files = ServerFiles(folder)
    with files.lock():
        lease.release()
        if live_leases(files):
            return False
        record = files.read_endpoint()
        if record is None:
            return False
        # from here on, a process that wants the server starts a new guard
        files.write_endpoint(EndpointRecord(record.port, record.token))
    if record.guard_alive():
        stop_process(record.guard_pid, record.guard_started, timeout_s)
    stop_leftover(files)
    return True


def wait_ready(endpoint: Endpoint, timeout_s: float = 180.0) -> bool:
    """Wait until the server answers ``/health``; False after ``timeout_s``."""
    from ..tracking.readiness import healthy

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if healthy(endpoint.url, timeout=2.0, token=endpoint.token):
            return True
        time.sleep(0.25)
    return False
