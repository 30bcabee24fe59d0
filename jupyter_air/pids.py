"""Processes and process groups, in one place: whether a process still exists and is still the
one we started (live holders of MLflow servers, GPU holds, supervisors, ranks, versus ones left
by a crash or a new process that got a dead one's pid), and stopping a process group — SIGTERM,
then SIGKILL to what is left after the grace period, then checking it is gone. Every launcher of
jupyter-air starts what it runs in a session of its own and stops it with ``stop_group``: the
embedded MLflow server, workload nodes (on this machine or a Ray node), ``@distributed`` agents.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Iterable


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


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to process group ``pgid``; False when the group is gone (or not ours)."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop_groups(
    pgids: Iterable[int],
    grace_s: float = 10.0,
    processes: Iterable[subprocess.Popen[bytes]] = (),
) -> list[int]:
    """SIGTERM to every group, SIGKILL to those with a process left after ``grace_s``, then wait
    (a few seconds) until they are gone. ``processes``: the ``Popen`` of the group leaders this
    process started, reaped meanwhile. Returns the groups still alive at the end (a process stuck
    in the kernel, e.g. on a hung device)."""
    groups = [g for g in pgids if g]
    reap = list(processes)
    for pgid in groups:
        signal_group(pgid, signal.SIGTERM)
    remaining = list(groups)
    deadline = time.monotonic() + grace_s
    while remaining and time.monotonic() < deadline:
        for process in reap:
            process.poll()
        time.sleep(0.05)
        remaining = [g for g in remaining if group_alive(g)]
    for pgid in remaining:
        signal_group(pgid, signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while remaining and time.monotonic() < deadline:
        for process in reap:
            process.poll()
        time.sleep(0.05)
        remaining = [g for g in remaining if group_alive(g)]
    for process in reap:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=1)
    return remaining


def stop_group(
    pgid: int, grace_s: float = 10.0, process: subprocess.Popen[bytes] | None = None
) -> bool:
    """``stop_groups`` for one group; True when it is gone."""
    return not stop_groups([pgid], grace_s, [process] if process is not None else [])


def signal_name(code: int) -> str:
    """``SIGKILL`` for 9."""
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"
