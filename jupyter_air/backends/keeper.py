"""Keeps a node's command from outliving whoever runs it: ``python -m jupyter_air.backends.keeper
--owner PID --started T --status FILE -- COMMAND…``.

Started by a Ray node's jupyter-air actor, in a session of its own, it detaches at once (Ray
stops the direct children of an actor's worker when the worker goes, and a keeper must outlive
that to do its job), runs the command in its process group and waits for it, then writes how it
ended to ``FILE`` (``{"code": N}``; negative: the signal). If its owner — the actor, checked by
pid and start time — goes away first (the supervisor that owns the actor died, the connection to
the cluster was lost, the node is shutting down), it stops everything the command started: its
process group, every descendant (torch elastic starts ranks in sessions of their own), whatever
carries the node's ``config.GROUP`` — SIGTERM, then SIGKILL after the grace period — so
nothing of the job keeps running unowned. Stopping the group from outside (what the actor does
to stop the node) stops the keeper with it.

``KeptProcess`` is the actor's side: the command as a process it can poll and stop.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from ..config import GROUP, KILL_GRACE_S

OWNER_CHECK_S = 0.2  # how often the keeper looks whether its owner is still there

GROUP_ENV = GROUP.name


def command(owner: int, started: float, status: Path, argv: list[str]) -> list[str]:
    """How a runner starts ``argv`` under a keeper."""
    return [
        sys.executable, "-m", "jupyter_air.backends.keeper",
        "--owner", str(owner), "--started", repr(started), "--status", str(status),
        "--", *argv,
    ]  # fmt: skip


class KeptProcess:
    """A command started under a keeper, as a ``Popen`` would be: ``pid`` is its process group,
    ``poll()`` its exit code (negative: killed by that signal) once the keeper wrote it, or once
    the whole group is gone without a word (SIGKILL from outside: -9)."""

    def __init__(self, process: subprocess.Popen[bytes], status: Path) -> None:
        self.process = process
        self.status = status
        self.pid = process.pid  # the session the keeper started: the group's id
        self.returncode: int | None = None

    def poll(self) -> int | None:
        from ..pids import KILLED, group_alive

        if self.returncode is not None:
            return self.returncode
        self.process.poll()  # the first half of the keeper, gone at once: reaped
        try:
            self.returncode = int(json.loads(self.status.read_text())["code"])
            return self.returncode
        except (OSError, ValueError, KeyError, TypeError):
            pass
        if self.process.returncode is not None and not group_alive(self.pid):
            self.returncode = KILLED
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                raise subprocess.TimeoutExpired(self.process.args, timeout or 0)
            time.sleep(0.05)
        return code


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if "--" not in argv:
        print(
            "usage: python -m jupyter_air.backends.keeper --owner PID --started T --status FILE "
            "-- COMMAND…",
            file=sys.stderr,
        )
        return 2
    split = argv.index("--")
    parser = argparse.ArgumentParser(prog="python -m jupyter_air.backends.keeper")
    parser.add_argument("--owner", type=int, required=True)
    parser.add_argument("--started", type=float, required=True)
    parser.add_argument("--status", type=Path, required=True)
    args = parser.parse_args(argv[:split])
    if os.fork() != 0:
        os._exit(0)  # detached: the owner's worker does not count this keeper as its child
    # the group's SIGTERM is for the command: the keeper outlives it to report how it ended
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    child = subprocess.Popen(argv[split + 1 :], preexec_fn=_default_signals)
    while True:
        try:  # the command's end is noticed at once; its owner is looked at between
            code: int | None = child.wait(timeout=OWNER_CHECK_S)
        except subprocess.TimeoutExpired:
            code = None
        if code is not None:
            _write(args.status, code)
            return 0
        if not _alive(args.owner, args.started):
            from ..pids import KILLED, kill_group

            _stop_everything(child)
            ended = child.poll()
            _write(args.status, ended if ended is not None else KILLED)
            kill_group(os.getpgid(0))  # what is left of the group, the keeper with it
            return 1


def _alive(pid: int, started: float) -> bool:
    from ..pids import is_running

    return is_running(pid, started)


def _default_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _write(path: Path, code: int) -> None:
    from ..files import write_json

    write_json(path, {"code": code})


def _stop_everything(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM to every descendant and whatever carries this node's group id, SIGKILL to what is
    left after the grace period."""
    import psutil

    me = psutil.Process()
    group = os.environ.get(GROUP_ENV)
    targets = set(me.children(recursive=True))
    if group:
        for process in psutil.process_iter():
            try:
                if process.pid != me.pid and process.environ().get(GROUP_ENV) == group:
                    targets.add(process)
            except (psutil.Error, OSError):
                continue
    from ..pids import process_start_time, stop_processes

    pids = [process.pid for process in targets]
    stop_processes(pids, KILL_GRACE_S.get(), {pid: process_start_time(pid) for pid in pids})


if __name__ == "__main__":
    sys.exit(main())
