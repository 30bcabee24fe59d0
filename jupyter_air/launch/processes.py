"""Process plumbing that keeps a launch from leaving orphans: the agent and every rank die with
the process that started them, and the kernel can check each rank by pid.

- ``die_with_parent``: Linux's ``PR_SET_PDEATHSIG`` (the kernel delivers a signal when the parent
  exits), with a check for a parent that died before the call.
- ``watch_parent``: a thread that signals this process when its parent is gone (where the
  parent's thread that started us might exit early, ``PDEATHSIG`` would fire too soon).
- ``RankProcess``: a rank's pid as the rank recorded it, checked against the process's start
  time before any signal, so a reused pid is never signalled.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ..config import AGENT_PID
from ..pids import kill_process, signal_group, signal_name

__all__ = [
    "AGENT_PID_ENV",
    "RankProcess",
    "die_with_parent",
    "signal_group",
    "signal_name",
    "stop_signal_name",
    "watch_parent",
]

PR_SET_PDEATHSIG = 1
AGENT_PID_ENV = AGENT_PID.name  # the agent's pid, for its ranks


def stop_signal_name(last_resort: bool) -> str:
    """What the run folder records for ranks the launch stopped: SIGTERM, or SIGKILL as the last
    resort."""
    return "SIGKILL" if last_resort else "SIGTERM"


def die_with_parent(sig: int, expected_parent: int | None = None) -> bool:
    """Ask Linux to send ``sig`` to this process when its parent exits. If the parent is already
    gone (it is no longer ``expected_parent``), send it now. False where unsupported."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):
        return False
    if expected_parent is not None and os.getppid() != expected_parent:
        os.kill(os.getpid(), sig)
    return True


def watch_parent(
    parent_pid: int, on_lost: Callable[[], None], interval_s: float = 0.2
) -> threading.Thread:
    """Call ``on_lost`` (once, from a daemon thread) when this process's parent is no longer
    ``parent_pid``: it died and we were re-parented."""

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        on_lost()

    thread = threading.Thread(target=watch, name="jupyter-air-parent-watch", daemon=True)
    thread.start()
    return thread


@dataclass(frozen=True)
class RankProcess:
    rank: int
    pid: int
    started: float  # time.time() when the rank recorded itself

    def alive(self) -> bool:
        """Running (not a zombie) and the same process that recorded itself."""
        import psutil

        from ..pids import SAME_PROCESS_S, process_start_time

        try:
            process = psutil.Process(self.pid)
            created = process_start_time(self.pid)
            if created is None or created > self.started + SAME_PROCESS_S:
                return False  # the pid was reused by a later process
            return process.status() != psutil.STATUS_ZOMBIE
        except (psutil.NoSuchProcess, psutil.AccessDenied):
            return False

    def signal(self, sig: int) -> None:
        if self.alive():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(self.pid, sig)

    def kill(self) -> None:
        """The last resort: SIGKILL, if it is still the same process."""
        if self.alive():
            kill_process(self.pid)


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
