"""Process plumbing that keeps a launch from leaving orphans: the agent and every rank die with
the process that started them, and the kernel can check each rank by pid.

- ``die_with_parent``: Linux's ``PR_SET_PDEATHSIG`` (the kernel delivers a signal when the parent
  exits), with a check for a parent that died before the call.
- ``watch_parent``: a thread that signals this process when its parent is gone (where the
  parent's thread that started us might exit early, ``PDEATHSIG`` would fire too soon).
- ``RankProcess``: a rank's pid as the rank recorded it, checked against the process's start
  time before any signal, so a reused pid is never signalled; ``RankWatch``: a call's ranks on
  this machine, read from the pid files they write in the run folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import AGENT_PID
from ..pids import ignore_sigint, kill_process, signal_group, signal_name

if TYPE_CHECKING:
    from .rundir import RunDir

__all__ = [
    "AGENT_PID_ENV",
    "RankProcess",
    "RankWatch",
    "die_with_parent",
    "ignore_sigint",
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


class RankWatch:
    """A call's ranks on this machine, by the pid files they write in the run folder; with
    ``restarted`` (torch elastic's restarts), a rank's file names a new process each round."""

    def __init__(self, run_dir: RunDir, nproc: int, *, restarted: bool = False) -> None:
        self.run_dir, self.nproc, self.restarted = run_dir, nproc, restarted
        self.known: dict[int, RankProcess] = {}

    def read(self) -> None:
        for rank in range(self.nproc):
            known = self.known.get(rank)
            if known is None or self.restarted:
                info = self.run_dir.read_json(self.run_dir.pid(rank))
                if info and (known is None or known.pid != int(info["pid"])):
                    self.known[rank] = RankProcess(rank, int(info["pid"]), float(info["started"]))

    def alive(self) -> list[RankProcess]:
        self.read()
        return [process for process in self.known.values() if process.alive()]

    def failed(self) -> bool:
        """Whether a rank recorded an error, or ended without its result."""
        self.read()
        run_dir = self.run_dir
        for rank in range(self.nproc):
            if run_dir.error(rank).exists():
                return True
            process = self.known.get(rank)
            if process is not None and not run_dir.result(rank).exists() and not process.alive():
                return True
        return False
