"""Whether a process still exists, and whether it is still the one we started: used to tell live
holders (MLflow servers and their users, GPU holds, supervisors, ranks) from ones left behind by
a crash, and from a new process that got a dead one's pid."""

from __future__ import annotations

import os


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (zombies included; any owner)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


def process_start_time(pid: int) -> float | None:
    """The creation time of process ``pid`` (None when it does not exist)."""
    import psutil

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return None


def is_running(pid: int | None, started: float | None = None) -> bool:
    """Whether ``pid`` is alive (not a zombie) and, given ``started`` (its creation time as
    ``process_start_time`` gave it), still the same process."""
    if not pid:
        return False
    import psutil

    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(process.create_time() - float(started)) < 1.0
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError, TypeError):
        return False


def group_alive(pgid: int) -> bool:
    """Whether process group ``pgid`` has a process that is not a zombie."""
    import psutil

    try:
        os.killpg(pgid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    for process in psutil.process_iter(["pid", "status"]):
        try:
            if os.getpgid(process.pid) == pgid and process.status() != psutil.STATUS_ZOMBIE:
                return True
        except (psutil.Error, OSError):
            continue
    return False
