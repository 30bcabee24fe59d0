"""Helpers shared by the tests of jupyter_air.launch (imported by them; no fixtures here)."""

from __future__ import annotations

import io
import json
import threading
import time
from pathlib import Path

from jupyter_air.launch.processes import RankProcess


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
