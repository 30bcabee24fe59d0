"""Keeps a node's command from outliving whoever runs it: ``python -m
jupyter_air.backends.keeper PARENT_PID -- COMMAND…``.

Started as the leader of a session of its own by a Ray node's jupyter-air actor, it runs the
command in its group and waits for it, exiting as the command did (its exit code, or killed by
the same signal). If its parent goes away first — the actor killed because the supervisor that
owns it died, the connection to the cluster lost, the node shutting down — it stops the whole
group (SIGTERM, SIGKILL after the grace period), so nothing of the job keeps running unowned.
Stopping the group from outside (what the actor does to stop the node) stops the keeper with it.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

GRACE_ENV = "JUPYTER_AIR_KILL_GRACE_S"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 3 or not argv[0].isdigit() or argv[1] != "--":
        print(
            "usage: python -m jupyter_air.backends.keeper PARENT_PID -- COMMAND…", file=sys.stderr
        )
        return 2
    parent = int(argv[0])
    # the group's SIGTERM is for the command: the keeper outlives it to report how it ended
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    child = subprocess.Popen(argv[2:], preexec_fn=_default_signals)
    while True:
        code = child.poll()
        if code is not None:
            return _exit_like(code)
        if os.getppid() != parent:
            _stop_group(child)
            return 1
        time.sleep(0.2)


def _default_signals() -> None:
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _exit_like(code: int) -> int:
    """Exit with the command's code; a command killed by a signal: the same signal."""
    if code >= 0:
        return code
    signal.signal(-code, signal.SIG_DFL)
    os.kill(os.getpid(), -code)
    time.sleep(1)  # SIGSTOP-like signals that do not end a process
    return 128 - code


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    try:
        grace = max(0.0, float(os.environ.get(GRACE_ENV, "10")))
    except ValueError:
        grace = 10.0
    os.killpg(0, signal.SIGTERM)  # the keeper ignores it
    deadline = time.monotonic() + grace
    while child.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
