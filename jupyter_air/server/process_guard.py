"""Runs a command and stops it when the process that started it goes away.

``python -m jupyter_air.server.process_guard <parent pid> <command…>``. The embedded MLflow server
runs under this guard, in the guard's process group: stopping the group stops both, and if the
Jupyter server dies without stopping it (SIGKILL, a crash, a test runner killing it) the guard
notices within a second and stops the whole group, so no MLflow server is left behind.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

from ..pids import pid_alive


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) < 2 or not argv[0].isdigit():
        print(
            "usage: python -m jupyter_air.server.process_guard PARENT_PID COMMAND…", file=sys.stderr
        )
        return 2
    parent = int(argv[0])
    child = subprocess.Popen(argv[1:])
    while True:
        code = child.poll()
        if code is not None:
            return code
        if not pid_alive(parent) or os.getppid() != parent:
            _stop_group(child)
            return 0
        time.sleep(1.0)


def _stop_group(child: subprocess.Popen[bytes]) -> None:
    """SIGTERM to everything in this group but the guard, then SIGKILL to the whole group."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.killpg(0, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(timeout=10)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    os.killpg(0, signal.SIGKILL)


if __name__ == "__main__":
    sys.exit(main())
