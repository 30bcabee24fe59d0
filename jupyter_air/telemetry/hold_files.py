"""Holding GPU sampling awake from another process (a notebook kernel, a workload supervisor).

The process that runs training writes a small file into ``<data_dir>/gpu-holds/`` for as long
as the training runs; the Jupyter server watches that folder and holds its poll loop awake while
a file is there and its process is alive. A file left behind by a process that died is ignored
and removed, so a crash cannot keep sampling awake forever. Without ``DATA_DIR`` (config.py: a
process not started under a Jupyter server running jupyter-air) holding does nothing.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
import uuid
from pathlib import Path

from ..config import DATA_DIR
from ..files import write_json
from ..pids import pid_alive
from ..private import private_folder

FOLDER = "gpu-holds"


def holds_folder(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / FOLDER


class HoldFile:
    """A hold on GPU sampling, released by ``release()`` or at the end of a ``with`` block."""

    def __init__(self, path: Path | None, reason: str) -> None:
        self.path = path
        self.reason = reason

    @classmethod
    def create(cls, reason: str, data_dir: str | os.PathLike[str] | None = None) -> HoldFile:
        data_dir = data_dir or DATA_DIR.text()
        if not data_dir:
            return cls(None, reason)
        folder = holds_folder(data_dir)
        try:
            private_folder(folder)
            path = folder / f"{os.getpid()}-{uuid.uuid4().hex[:8]}.json"
            write_json(path, {"pid": os.getpid(), "reason": reason, "t": time.time()})
        except OSError:  # a read-only data folder must not stop training
            return cls(None, reason)
        return cls(path, reason)

    def release(self) -> None:
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.path = None

    def __enter__(self) -> HoldFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def live_holds(data_dir: str | os.PathLike[str]) -> dict[str, str]:
    """``{file name: reason}`` of the holds whose process is alive; stale files are removed."""
    folder = holds_folder(data_dir)
    holds: dict[str, str] = {}
    try:
        entries = list(folder.glob("*.json"))
    except OSError:
        return holds
    for path in entries:
        try:
            info = json.loads(path.read_text())
            pid, reason = int(info["pid"]), str(info["reason"])
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if pid_alive(pid):
            holds[path.name] = reason
        else:
            with contextlib.suppress(OSError):
                path.unlink()
    return holds
