"""The log file format and its writer: one file per node and attempt, one line per line of output.

```
INFO  2025-11-29T10:13:20.123Z out epoch 1 loss 0.25
WARN  2025-11-29T10:13:20.124Z err /x.py:3: UserWarning: lr is large
ERROR 2025-11-29T10:13:21.002Z err Traceback (most recent call last):
```

A fixed 35-byte prefix: the level (``INFO `` / ``WARN `` / ``ERROR``) first, so that every line of
a level is found by searching for ``"\\nERROR "`` in the raw bytes; the UTC arrival time to the
millisecond (lexically ordered and never decreasing within a file, so a time range is a binary
search); the stream; then the text as the program wrote it (UTF-8, ANSI codes kept). The file is
plain text: readable as it is when downloaded or opened in MLflow, and searched by scanning the
bytes (see logquery.py and bench/workload_logs.py for why this beats an index here).

Each batch of lines is appended with one ``write()`` on an ``O_APPEND`` descriptor: once written
it is the kernel's, so nothing is lost when the command (or the supervisor) crashes.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ..private import FILE_MODE, private_folder
from .levels import ERROR, INFO, WARNING

PREFIX = 35  # len("ERROR 2025-11-29T10:13:20.123Z out ")
LEVEL_WORDS = {INFO: b"INFO ", WARNING: b"WARN ", ERROR: b"ERROR"}
WORD_LEVELS = {v: k for k, v in LEVEL_WORDS.items()}
STREAMS = {"stdout": "out", "stderr": "err"}
STREAM_NAMES = {b"out": "stdout", b"err": "stderr"}
T_START, T_END = 6, 30
MAX_LINE = 64 * 1024  # longer lines are split in pieces of this many characters


def timestamp(t: float) -> str:
    """``2025-11-29T10:13:20.123Z`` for unix time ``t``."""
    ms = int(t * 1000)
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"


def parse_timestamp(text: str) -> float:
    """Unix time of a stored timestamp (or of any ISO 8601 time; naive means UTC)."""
    from datetime import datetime, timezone

    value = datetime.fromisoformat(text.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return value.timestamp()


def format_line(level: str, t: str, stream: str, text: str) -> str:
    return f"{LEVEL_WORDS[level].decode()} {t} {STREAMS.get(stream, stream)} {text}\n"


@dataclass
class LogStats:
    bytes: int = 0
    lines: int = 0
    errors: int = 0
    warnings: int = 0
    first_t: str | None = None
    last_t: str | None = None


class LogWriter:
    """Appends lines to one log file; thread-safe (stdout and stderr readers share it)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        private_folder(self.path.parent)
        self._fd: int | None = os.open(
            self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, FILE_MODE
        )
        self._lock = threading.Lock()
        self.stats = LogStats(bytes=os.fstat(self._fd).st_size)
        self._last_t = ""

    def write(self, stream: str, lines: list[tuple[str, str]], t: float | None = None) -> None:
        """Append ``lines`` — ``(level, text)`` pairs — that arrived at ``t`` on ``stream``."""
        if not lines:
            return
        short = STREAMS.get(stream, stream)
        with self._lock:
            if self._fd is None:
                raise ValueError(f"log file {self.path} is closed")
            stamp = timestamp(time.time() if t is None else t)
            if stamp < self._last_t:
                stamp = self._last_t  # the clock stepped back: keep the file ordered
            self._last_t = stamp
            head = f" {stamp} {short} "
            parts = []
            stats = self.stats
            for level, text in lines:
                parts.append(f"{LEVEL_WORDS[level].decode()}{head}{text}\n")
                if level == ERROR:
                    stats.errors += 1
                elif level == WARNING:
                    stats.warnings += 1
            data = "".join(parts).encode("utf-8", "replace")
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            stats.bytes += len(data)
            stats.lines += len(lines)
            stats.first_t = stats.first_t or stamp
            stats.last_t = stamp

    def append_raw(self, data: bytes) -> None:
        """Append complete lines already in this format (a remote node's log, brought home):
        byte for byte, with the node's own timestamps; the counters follow."""
        if not data:
            return
        if not data.endswith(b"\n"):
            raise ValueError("append_raw takes complete lines")
        with self._lock:
            if self._fd is None:
                raise ValueError(f"log file {self.path} is closed")
            view = memoryview(data)
            while view:
                written = os.write(self._fd, view)
                view = view[written:]
            stats = self.stats
            stats.bytes += len(data)
            stats.lines += data.count(b"\n")
            stats.errors += data.startswith(b"ERROR") + data.count(b"\nERROR")
            stats.warnings += data.startswith(b"WARN ") + data.count(b"\nWARN ")
            first = data[T_START:T_END].decode("ascii", "replace")
            last_line = data[data.rfind(b"\n", 0, len(data) - 1) + 1 :]
            last = last_line[T_START:T_END].decode("ascii", "replace")
            stats.first_t = stats.first_t or first
            stats.last_t = last
            self._last_t = max(self._last_t, last)

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
