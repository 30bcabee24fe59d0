"""Scanning one log file's bytes (logfile.py's format) for the lines a filter matches: the time
range is a binary search on the ordered timestamps, a level is a search for ``"\\nERROR "``, a
text search lowercases the scanned block once and uses ``bytes.find``. Forward (pages, following,
downloads) and backward (the last lines, scrolling up), in blocks that grow up to 1 MiB."""

from __future__ import annotations

import contextlib
import mmap
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .filters import InvalidQuery, LogFilter, make_cursor
from .logfile import LEVEL_WORDS, PREFIX, STREAM_NAMES, T_END, T_START, WORD_LEVELS

MAX_CHUNK = 1024 * 1024  # measured: larger blocks fall out of the CPU caches and scan slower
_FIRST_CHUNK = 256 * 1024
_BACK_CHUNK = 1024 * 1024


@dataclass
class LogLine:
    t: str  # arrival time, ISO 8601 UTC to the millisecond
    node: int
    attempt: int
    stream: str  # "stdout" | "stderr"
    level: str  # "info" | "warning" | "error"
    text: str
    pos: str  # cursor just after this line

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class LogBuffer:
    """A log file mapped read-only; ``hi`` is the end of its last complete line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: Any = b""
        self.hi = 0
        self._file: Any = None
        self._map: mmap.mmap | None = None

    def __enter__(self) -> LogBuffer:
        try:
            self._file = open(self.path, "rb")  # closed in __exit__
        except FileNotFoundError:
            return self
        size = os.fstat(self._file.fileno()).st_size
        if size:
            self._map = mmap.mmap(self._file.fileno(), size, access=mmap.ACCESS_READ)
            self.data = self._map
            last = self._map.rfind(b"\n")
            self.hi = last + 1
        return self

    def __exit__(self, *exc: object) -> None:
        if self._map is not None:
            with contextlib.suppress(BufferError):
                self._map.close()
        if self._file is not None:
            self._file.close()


def boundary(buf: LogBuffer, offset: int) -> int:
    if offset == 0 or offset == buf.hi:
        return offset
    if offset > buf.hi or buf.data[offset - 1 : offset] != b"\n":
        raise InvalidQuery("that log position is not the start of a line in this log")
    return offset


def time_window(buf: LogBuffer, lo: int, hi: int, filt: LogFilter) -> tuple[int, int]:
    data = buf.data
    if filt.since:
        lo = _first_at_or_after(data, lo, hi, filt.since.encode())
    if filt.until:
        hi = _first_at_or_after(data, lo, hi, filt.until.encode())
    return lo, hi


def _first_at_or_after(data: Any, lo: int, hi: int, stamp: bytes) -> int:
    """The start of the first line in [lo, hi) stamped ``stamp`` or later (hi when none)."""
    a, b = lo, hi
    while a < b:
        mid = (a + b) // 2
        start = data.rfind(b"\n", a, mid) + 1 or a
        start = max(start, a)
        end = data.find(b"\n", mid, b) + 1
        if end <= 0:
            end = b
        if data[start + T_START : start + T_END] < stamp:
            a = end
        else:
            b = start
    return a


def scan_forward(
    data: Any, lo: int, hi: int, filt: LogFilter, limit: int
) -> tuple[list[tuple[int, int]], int, bool]:
    """Up to ``limit`` matching line spans in [lo, hi), in order; the boundary reached; whether
    the limit was reached."""
    spans: list[tuple[int, int]] = []
    position, size = lo, _FIRST_CHUNK
    matcher = _Matcher(filt)
    while position < hi:
        end = min(hi, position + size)
        if end < hi:
            cut = data.rfind(b"\n", position, end)
            end = cut + 1 if cut >= 0 else data.find(b"\n", end, hi) + 1
        chunk = data[position:end]
        found = matcher.spans(chunk, limit - len(spans))
        spans.extend((position + s, position + e) for s, e in found)
        if len(spans) >= limit:
            return spans, spans[-1][1], True
        position = end
        size = min(size * 2, MAX_CHUNK)
    return spans, hi, False


def scan_backward(
    data: Any, lo: int, hi: int, filt: LogFilter, limit: int
) -> tuple[list[tuple[int, int]], int, bool]:
    """The last ``limit`` matching spans in [lo, hi), in order; where the earliest one starts
    (lo when fewer were found); whether the limit was reached."""
    collected: list[list[tuple[int, int]]] = []
    count = 0
    end = hi
    matcher = _Matcher(filt)
    while end > lo:
        start = max(lo, end - _BACK_CHUNK)
        if start > lo:
            cut = data.rfind(b"\n", lo, start)
            start = cut + 1 if cut >= 0 else lo
            if start >= end:  # one line longer than the chunk
                cut = data.rfind(b"\n", lo, end - 1)
                start = cut + 1 if cut >= 0 else lo
        found = matcher.spans(data[start:end], None)
        if found:
            need = limit - count
            found = found[-need:]
            collected.append([(start + s, start + e) for s, e in found])
            count += len(found)
            if count >= limit:
                spans = [span for block in reversed(collected) for span in block]
                return spans, spans[0][0], True
        end = start
    spans = [span for block in reversed(collected) for span in block]
    return spans, lo, False


class _Matcher:
    """Finds the lines of a block (whole lines, from a line start) that match a filter."""

    def __init__(self, filt: LogFilter) -> None:
        levels = filt.levels
        self.words = None if levels is None else tuple(LEVEL_WORDS[lvl] for lvl in levels)
        self.term: bytes | None = None  # find this in the block (lowercased unless exact)
        self.exact = False  # search the block as it is (a text without case)
        self.pattern: re.Pattern[bytes] | None = None  # else this, in the lowercased block
        q = filt.q
        if q:
            if q.isascii():
                self.term = q.lower().encode()
            elif q.lower() == q.upper():
                self.term, self.exact = q.encode(), True
            else:
                self.pattern = _caseless(q)

    def spans(self, chunk: bytes, limit: int | None) -> list[tuple[int, int]]:
        if self.term is not None or self.pattern is not None:
            return self._text(chunk, limit)
        if self.words is not None:
            return self._levels(chunk, limit)
        return _all_lines(chunk, limit)

    def _text(self, chunk: bytes, limit: int | None) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        words, term, pattern = self.words, self.term, self.pattern
        haystack = chunk if self.exact else chunk.lower()  # same length, same offsets
        if term is not None:

            def find(i: int) -> int:
                return haystack.find(term, i)
        else:
            assert pattern is not None

            def find(i: int) -> int:
                match = pattern.search(haystack, i)
                return match.start() if match else -1

        i = 0
        while limit is None or len(out) < limit:
            hit = find(i)
            if hit < 0:
                break
            start = chunk.rfind(b"\n", 0, hit) + 1
            text_start = start + PREFIX
            if hit < text_start:  # in the prefix (time, level): look again in the text
                i = text_start
                continue
            end = chunk.find(b"\n", hit) + 1 or len(chunk)
            if words is None or chunk[start : start + 5] in words:
                out.append((start, end))
            i = end
        return out

    def _levels(self, chunk: bytes, limit: int | None) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        words = self.words
        assert words is not None
        if len(words) == 1:
            needle = b"\n" + words[0]
            if chunk[:5] == words[0]:
                out.append((0, chunk.find(b"\n") + 1 or len(chunk)))
            i = 0
            while limit is None or len(out) < limit:
                hit = chunk.find(needle, i)
                if hit < 0:
                    break
                start = hit + 1
                end = chunk.find(b"\n", start) + 1 or len(chunk)
                out.append((start, end))
                i = end - 1
            return out
        # several levels: walk the lines (cheap compared to the level test per line)
        start, size = 0, len(chunk)
        while start < size and (limit is None or len(out) < limit):
            end = chunk.find(b"\n", start) + 1 or size
            if chunk[start : start + 5] in words:
                out.append((start, end))
            start = end
        return out


def _all_lines(chunk: bytes, limit: int | None) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    start, size = 0, len(chunk)
    while start < size and (limit is None or len(out) < limit):
        end = chunk.find(b"\n", start) + 1 or size
        out.append((start, end))
        start = end
    return out


def read_lines(data: Any, spans: list[tuple[int, int]], attempt: int, node: int) -> list[LogLine]:
    lines = []
    for start, end in spans:
        raw = data[start:end]
        if raw.endswith(b"\n"):
            raw = raw[:-1]
        level = WORD_LEVELS.get(raw[:5])
        stream = STREAM_NAMES.get(raw[31:34])
        if level is None or stream is None or len(raw) < PREFIX - 1:  # not our format
            lines.append(
                LogLine("", node, attempt, "stdout", "info", raw.decode("utf-8", "replace"), "")
            )
        else:
            lines.append(
                LogLine(
                    t=raw[T_START:T_END].decode("ascii", "replace"),
                    node=node,
                    attempt=attempt,
                    stream=stream,
                    level=level,
                    text=raw[PREFIX:].decode("utf-8", "replace"),
                    pos="",
                )
            )
        lines[-1].pos = make_cursor(attempt, node, end)
    return lines


def _caseless(q: str) -> re.Pattern[bytes]:
    """A pattern for ``q`` in any case, to search a block whose ASCII letters were lowercased:
    ASCII characters as they are lowercased, the others in each of their cases."""
    parts = []
    for ch in q:
        if ch.isascii():
            parts.append(re.escape(ch.lower().encode()))
        else:
            variants = sorted({ch, ch.lower(), ch.upper()} - {""})
            encoded = [v.encode() for v in variants]
            parts.append(b"(?:" + b"|".join(re.escape(v) for v in encoded) + b")")
    return re.compile(b"".join(parts))
