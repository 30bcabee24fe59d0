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
bytes (see scan.py and bench/workload_logs.py for why this beats an index here).

Each batch of lines is appended with one ``write()`` on an ``O_APPEND`` descriptor: once written
it is the kernel's, so nothing is lost when the command (or the supervisor) crashes.

When the disk is full the lines wait in memory (up to ``MAX_PENDING_BYTES`` per file) and are
written, in order, as soon as a write goes through again; past that, lines are counted instead
of kept, and a WARN line says how many were lost, where they would have been.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path

from ..disk import no_space, no_space_text
from ..private import FILE_MODE, private_folder
from .levels import ERROR, INFO, WARNING

PREFIX = 35  # len("ERROR 2025-11-29T10:13:20.123Z out ")
LEVEL_WORDS = {INFO: b"INFO ", WARNING: b"WARN ", ERROR: b"ERROR"}
WORD_LEVELS = {v: k for k, v in LEVEL_WORDS.items()}
STREAMS = {"stdout": "out", "stderr": "err"}
STREAM_NAMES = {b"out": "stdout", b"err": "stderr"}
T_START, T_END = 6, 30
MAX_LINE = 64 * 1024  # longer lines are split in pieces of this many characters
MAX_PENDING_BYTES = 8 << 20  # lines kept in memory per file while the disk is full


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


class _Batch:
    """Lines not yet (wholly) written: what is left of their bytes, and what they count."""

    def __init__(self, data: bytes, stats: LogStats) -> None:
        self.size = len(data)
        self.left = memoryview(data)
        self.stats = stats


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
        self._pending: deque[_Batch] = deque()  # while the disk is full
        self.pending_bytes = 0
        self.lost_lines = 0  # taken while the disk was full and memory too: told by a WARN line
        self.lost_total = 0  # every line lost so, told or not
        self.full_since: float | None = None  # when a write first failed for want of space

    @property
    def full(self) -> str | None:
        """``no space left on <folder>`` while lines wait or were lost for want of space."""
        if self._pending or self.lost_lines:
            return no_space_text(self.path.parent)
        return None

    @property
    def overflowing(self) -> bool:
        """Lines are being lost: the disk is full and so is the memory they may wait in."""
        return self.lost_lines > 0

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
            counts = LogStats(lines=len(lines), first_t=stamp, last_t=stamp)
            for level, text in lines:
                parts.append(f"{LEVEL_WORDS[level].decode()}{head}{text}\n")
                if level == ERROR:
                    counts.errors += 1
                elif level == WARNING:
                    counts.warnings += 1
            self._append("".join(parts).encode("utf-8", "replace"), counts)

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
            first = data[T_START:T_END].decode("ascii", "replace")
            last_line = data[data.rfind(b"\n", 0, len(data) - 1) + 1 :]
            last = last_line[T_START:T_END].decode("ascii", "replace")
            counts = LogStats(
                lines=data.count(b"\n"),
                errors=data.startswith(b"ERROR") + data.count(b"\nERROR"),
                warnings=data.startswith(b"WARN ") + data.count(b"\nWARN "),
                first_t=first,
                last_t=last,
            )
            self._last_t = max(self._last_t, last)
            self._append(data, counts)

    def flush(self) -> bool:
        """Write what waits for room (a tick calls it while the command is quiet); whether
        nothing waits any more."""
        with self._lock:
            return self._fd is None or self._drain()

    # the lock is held from here on ---------------------------------------------------------
    def _append(self, data: bytes, counts: LogStats) -> None:
        self._drain()
        if self._pending and (
            self.lost_lines or self.pending_bytes + len(data) > MAX_PENDING_BYTES
        ):
            self.lost_lines += counts.lines  # told by a WARN line once there is room
            self.lost_total += counts.lines
            return
        self._queue(data, counts)
        self._drain()

    def _queue(self, data: bytes, counts: LogStats) -> None:
        self._pending.append(_Batch(data, counts))
        self.pending_bytes += len(data)

    def _drain(self) -> bool:
        """Write the waiting batches in order, then the line that tells of lost ones; whether
        all of it went."""
        assert self._fd is not None
        while self._pending:
            batch = self._pending[0]
            try:
                while batch.left:
                    written = os.write(self._fd, batch.left)
                    batch.left = batch.left[written:]
            except OSError as error:
                if not no_space(error):
                    raise
                self.full_since = self.full_since or time.time()
                return False
            self._pending.popleft()
            self.pending_bytes -= batch.size
            self._count(batch.size, batch.stats)
            if not self._pending and self.lost_lines:
                lost, self.lost_lines = self.lost_lines, 0
                stamp = self._last_t = max(self._last_t, timestamp(time.time()))
                text = f"[jupyter-air] {lost} lines lost here: {no_space_text(self.path.parent)}"
                line = f"{LEVEL_WORDS[WARNING].decode()} {stamp} err {text}\n".encode()
                self._queue(line, LogStats(lines=1, warnings=1, first_t=stamp, last_t=stamp))
        return True

    def _count(self, size: int, counts: LogStats) -> None:
        stats = self.stats
        stats.bytes += size
        stats.lines += counts.lines
        stats.errors += counts.errors
        stats.warnings += counts.warnings
        stats.first_t = stats.first_t or counts.first_t
        if counts.last_t:
            stats.last_t = counts.last_t

    def close(self) -> None:
        """Close the file; lines that still wait for room are lost then (``lost_lines``)."""
        with self._lock:
            if self._fd is not None:
                with contextlib.suppress(OSError):
                    self._drain()
                left = sum(batch.stats.lines for batch in self._pending)
                self.lost_lines += left
                self.lost_total += left
                self._pending.clear()
                self.pending_bytes = 0
                os.close(self._fd)
                self._fd = None

    def __enter__(self) -> LogWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
