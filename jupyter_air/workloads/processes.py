"""Processes of job runs: starting the detached supervisor, knowing a process is still the one we
started (pid and creation time), and stopping every process of a job — its nodes' process
groups, and anything that left them but still carries the job's ``config.JOB_ID``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from ..config import JOB_ID

JOB_ENV = JOB_ID.name


def spawn_detached(
    argv: list[str], *, log_file: Path, env: Mapping[str, str], cwd: str | os.PathLike[str]
) -> int:
    """Start ``argv`` in a new session with no inherited stdio (output to ``log_file``), so it
    outlives this process, its terminal and its kernel. A thread reaps it if this process is
    still there when it ends (no zombie)."""
    from ..private import open_private, private_folder

    private_folder(log_file.parent)
    with open_private(log_file) as out:
        process = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            close_fds=True,
            env=dict(env),
            cwd=cwd,
        )
    threading.Thread(target=process.wait, name="jupyter-air-reaper", daemon=True).start()
    return process.pid


def job_processes(job_id: str, variable: str = JOB_ENV) -> list[int]:
    """Pids of this user's processes that belong to job ``job_id`` (``variable`` in their
    environment says so)."""
    import psutil

    me, uid = os.getpid(), os.getuid()
    found = []
    for process in psutil.process_iter(["pid", "uids"]):
        try:
            if process.pid == me or process.info["uids"].real != uid:
                continue
            if process.status() == psutil.STATUS_ZOMBIE:
                continue
            if process.environ().get(variable) == job_id:
                found.append(process.pid)
        except (psutil.Error, OSError):
            continue
    return found


def kill_job_processes(job_id: str, grace_s: float = 5.0, variable: str = JOB_ENV) -> list[int]:
    """Stop whatever still runs for job ``job_id``: SIGTERM, then SIGKILL. Returns the pids."""
    from ..pids import process_start_time, stop_processes

    pids = job_processes(job_id, variable)
    stop_processes(pids, grace_s, {pid: process_start_time(pid) for pid in pids})
    return pids


def python() -> str:
    return sys.executable
