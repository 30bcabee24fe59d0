"""Processes and process groups, in one place: whether a process still exists and is still the
one we started (live holders of MLflow servers, GPU holds, supervisors, ranks, versus ones left
by a crash or a new process that got a dead one's pid), and stopping a process group — SIGTERM,
then SIGKILL to what is left after the grace period, then checking it is gone. Every launcher of
jupyter-air starts what it runs in a session of its own and stops it with ``stop_group``: the
embedded MLflow server, workload nodes (on this machine or a Ray node), ``@distributed`` agents.
Also: starting a process detached (``spawn_detached``: supervisors), and finding and stopping the
processes that carry a job's id (``config.JOB_ID``, or a node group's) in their environment,
whatever process group they ended up in; and keeping an interrupt from cutting a stop short
(``ignore_sigint``).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path


def pid_alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (zombies included; any owner)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    return True


# A process is told from a later one that got its pid by its creation time, kept as seconds
# since the epoch (a record outlives a reboot, when pids start again from 1). The kernel keeps
# that time as clock ticks since boot; psutil adds /proc/stat's boot time, a whole second that
# moves by one whenever the wall clock is nudged across a second boundary, so the same process
# could read one second off and be taken for another (a healthy supervisor "stopped
# unexpectedly", a live MLflow "gone"). Here the boot's epoch time is read with its fraction,
# and two times are the same process within SAME_PROCESS_S: a clock stepped since the record by
# less than that passes, and a pid reused within it would need the pid space to wrap in seconds.
SAME_PROCESS_S = 5.0
KILLED = -signal.SIGKILL  # how a process that SIGKILL ended reports (Popen.returncode)
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _boot_epoch() -> float:
    """When this machine booted, in seconds since the epoch, with its fraction."""
    return time.time() - time.clock_gettime(time.CLOCK_BOOTTIME)


def _since_boot(pid: int) -> float | None:
    """Process ``pid``'s creation, in seconds since boot (None when it does not exist)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as stat:
            data = stat.read()
    except OSError:
        return None
    # after the command name (in parentheses, which may hold anything), field 22 is 19th
    return int(data[data.rindex(b")") + 2 :].split()[19]) / _TICKS


def process_start_time(pid: int) -> float | None:
    """The creation time of process ``pid``, seconds since the epoch (None when it does not
    exist)."""
    since_boot = _since_boot(pid) if os.path.isdir("/proc") else None
    if since_boot is not None:
        return since_boot + _boot_epoch()
    import psutil  # no /proc (macOS)

    try:
        return float(psutil.Process(pid).create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return None


def same_process(pid: int, started: float) -> bool:
    """Whether process ``pid`` (which exists) was created at ``started``, as
    ``process_start_time`` gave it."""
    now = process_start_time(pid)
    return now is not None and abs(now - float(started)) < SAME_PROCESS_S


def is_running(pid: int | None, started: float | None = None) -> bool:
    """Whether ``pid`` is alive (not a zombie) and, given ``started`` (its creation time as
    ``process_start_time`` gave it), still the same process."""
    if not pid:
        return False
    import psutil

    try:
        if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or same_process(pid, started)
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
    """SIGTERM to every group, SIGKILL to those with a process left after ``grace_s`` (at once,
    without SIGTERM, when it is 0), then wait (a few seconds) until they are gone. ``processes``:
    the ``Popen`` of the group leaders this process started, reaped meanwhile. Returns the groups
    still alive at the end (a process stuck in the kernel, e.g. on a hung device)."""
    groups = [g for g in pgids if g]
    reap = list(processes)
    if grace_s > 0:
        for pgid in groups:
            signal_group(pgid, signal.SIGTERM)
    remaining = _wait_gone(groups, grace_s, reap)
    for pgid in remaining:
        signal_group(pgid, signal.SIGKILL)
    remaining = _wait_gone(remaining, 5.0, reap)
    for process in reap:
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(timeout=1)
    return remaining


def _wait_gone(
    groups: list[int], timeout_s: float, reap: list[subprocess.Popen[bytes]]
) -> list[int]:
    """The groups still alive after ``timeout_s`` at most (sooner when none is), the processes in
    ``reap`` reaped meanwhile."""
    remaining = list(groups)
    deadline = time.monotonic() + timeout_s
    while remaining and time.monotonic() < deadline:
        for process in reap:
            process.poll()
        time.sleep(0.05)
        remaining = [g for g in remaining if group_alive(g)]
    return remaining


def stop_group(
    pgid: int, grace_s: float = 10.0, process: subprocess.Popen[bytes] | None = None
) -> bool:
    """``stop_groups`` for one group; True when it is gone."""
    return not stop_groups([pgid], grace_s, [process] if process is not None else [])


def kill_group(pgid: int) -> bool:
    """SIGKILL to what is left in group ``pgid`` after its leader ended (a child it left running
    holds the pipes open); False when nothing was."""
    return signal_group(pgid, signal.SIGKILL)


def kill_process(pid: int) -> bool:
    """SIGKILL to process ``pid`` (its caller checked it is still the one it started); False
    when it is gone (or not ours)."""
    try:
        os.kill(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def stop_processes(
    pids: Iterable[int], grace_s: float = 10.0, started: dict[int, float | None] | None = None
) -> list[int]:
    """SIGTERM to each process, SIGKILL to those still there after ``grace_s`` (at once, without
    SIGTERM, when it is 0), then wait (a few seconds) until they are gone. ``started``: a pid's
    creation time, so that a process that got the pid of one that ended meanwhile is never
    signalled. Returns those still alive."""
    known = started or {}
    targets = [p for p in pids if p]

    def left() -> list[int]:
        return [p for p in targets if is_running(p, known.get(p))]

    def send(sig: int) -> None:
        for pid in left():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, sig)

    if grace_s > 0:
        send(signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    send(signal.SIGKILL)
    deadline = time.monotonic() + 5.0
    while left() and time.monotonic() < deadline:
        time.sleep(0.05)
    return left()


def stop_process(pid: int | None, started: float | None = None, grace_s: float = 10.0) -> bool:
    """``stop_processes`` for one process (created at ``started``); True when it is gone."""
    return not pid or not stop_processes([pid], grace_s, {pid: started})


def signal_name(code: int) -> str:
    """``SIGKILL`` for 9."""
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def spawn_detached(
    argv: list[str], *, log_file: Path, env: Mapping[str, str], cwd: str | os.PathLike[str]
) -> int:
    """Start ``argv`` in a new session with no inherited stdio (output to ``log_file``), so it
    outlives this process, its terminal and its kernel. A thread reaps it if this process is
    still there when it ends (no zombie)."""
    from .private import open_private, private_folder

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


def job_processes(job_id: str, variable: str) -> list[int]:
    """Pids of this user's processes that belong to job ``job_id`` (``variable`` in their
    environment says so: ``config.JOB_ID``'s name, or a node group's)."""
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


def kill_job_processes(job_id: str, variable: str, grace_s: float = 5.0) -> list[int]:
    """Stop whatever still runs for job ``job_id``: SIGTERM, then SIGKILL. Returns the pids."""
    pids = job_processes(job_id, variable)
    stop_processes(pids, grace_s, {pid: process_start_time(pid) for pid in pids})
    return pids


@contextlib.contextmanager
def ignore_sigint() -> Iterator[None]:
    """SIGINT ignored in this block (on the main thread): stopping the ranks is not cut short."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
