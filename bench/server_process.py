"""A server the benchmarks start in a process of their own on loopback (a Jupyter server with
jupyter-air): a free port for it, the wait until it answers, and its stop."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Callable


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_ready(process: subprocess.Popen, ask: Callable[[], object], timeout_s: float) -> bool:
    """Whether ``ask()`` succeeded (no ``OSError``) within ``timeout_s``; False as soon as the
    process has exited."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            ask()
            return True
        except OSError:
            if process.poll() is not None:
                return False
            time.sleep(0.2)
    return False


def stop_process(process: subprocess.Popen, timeout_s: float) -> None:
    """SIGTERM, then SIGKILL if it still runs after ``timeout_s``."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout_s)
