"""Helpers shared by the tests of jupyter_air.launch (imported by them; no fixtures here)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import threading
import time
from pathlib import Path

from jupyter_air.launch.processes import RankProcess

DRIVER = """
import faulthandler, signal, sys
from jupyter_air import distributed

faulthandler.register(signal.SIGUSR1, all_threads=True)  # where it is stuck, on SIGUSR1
# Ctrl-C raises KeyboardInterrupt, as in a kernel, whatever this process inherited (Python keeps
# SIGINT ignored when it starts ignored, as under a shell's background job)
signal.signal(signal.SIGINT, signal.default_int_handler)

@distributed({options})
def forever():
    import os, time
    print("rank", os.environ["RANK"], "running", flush=True)
    time.sleep(300)

try:
    forever.distributed()
except KeyboardInterrupt:
    print("KeyboardInterrupt reached the caller", flush=True)
    sys.exit(130)
"""


def start_driver(tmp_path: Path, options: str) -> subprocess.Popen[str]:
    """A script in ``tmp_path`` that calls ``@distributed(options)`` on ranks that print that
    they run and sleep, and exits 130 when interrupted; started in its own session, as a kernel
    is (SIGINT goes to its whole group), its output (stderr too) on ``stdout``."""
    script = tmp_path / "driver.py"
    script.write_text(DRIVER.format(options=options))
    return subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=tmp_path,
        start_new_session=True,
    )


def run_dirs(data_dir: Path) -> list[Path]:
    """The run folders of the calls made with ``JUPYTER_AIR_DATA_DIR=data_dir``, oldest first."""
    root = data_dir / "runs"
    return sorted(root.iterdir()) if root.exists() else []


def launch_processes(run_dir: Path) -> list[RankProcess]:
    """The agent and every rank that recorded itself in a run folder."""
    found = []
    for path in sorted(run_dir.glob("pid-*.json")):
        info = json.loads(path.read_text())
        rank = int(path.stem.split("-")[1])
        found.append(RankProcess(rank, info["pid"], info["started"]))
    agent = run_dir / "agent.json"
    if agent.exists():
        info = json.loads(agent.read_text())
        found.append(RankProcess(-1, info["pid"], info["started"]))
    return found


def wait_all_gone(processes: list[RankProcess], timeout_s: float = 10.0) -> list[RankProcess]:
    """Wait until none of them runs; those still running at the deadline."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        alive = [p for p in processes if p.alive()]
        if not alive:
            return []
        time.sleep(0.05)
    return [p for p in processes if p.alive()]


def wait_for(condition, timeout_s: float = 30.0, interval_s: float = 0.05):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(interval_s)
    raise AssertionError(f"not true after {timeout_s} s: {condition}")


class TimedStream(io.TextIOBase):
    """A stand-in for sys.stdout that remembers when each piece of text arrived."""

    def __init__(self) -> None:
        self.parts: list[tuple[float, str]] = []
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self.parts.append((time.monotonic(), text))
        return len(text)

    def flush(self) -> None:
        pass

    @property
    def text(self) -> str:
        with self._lock:
            return "".join(t for _, t in self.parts)

    def first_time(self, needle: str) -> float | None:
        seen = ""
        with self._lock:
            for when, text in self.parts:
                seen += text
                if needle in seen:
                    return when
        return None
