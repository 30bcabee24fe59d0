"""Reading the logs of job runs: filtered pages for the CLI and the Logs view, and downloads.

``query_logs`` answers one question — lines of one node of one attempt, filtered by level, text
(a case-insensitive substring of the line's text), time range, and a position — by scanning the
log file's bytes (logfile.py's format): the time range is a binary search on the ordered
timestamps, a level is a search for ``"\\nERROR "``, a text search lowercases the scanned block
once and uses ``bytes.find``. A million lines are searched in a fraction of a second (figures in
docs/workloads.md, from bench/workload_logs.py).

Positions are opaque cursors (``"attempt:node:offset"``, an offset being a line boundary): every
line carries ``pos``, the boundary just after it; a page carries ``next`` (continue forward from
here: following) and ``prev`` (lines before the first one: scrolling up). With ``attempt=None``
(the latest attempt) a forward read that reaches the end of a finished attempt goes on into the
next one, so following a job sees its retries.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from .levels import LEVELS
from .logfile import LEVEL_WORDS, PREFIX, STREAM_NAMES, T_END, T_START, WORD_LEVELS, timestamp
from .paths import log_path
from .store import TERMINAL, JobRun, JobStore

DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000
_FIRST_CHUNK = 256 * 1024
_MAX_CHUNK = 1024 * 1024  # measured: larger blocks fall out of the CPU caches and scan slower
_BACK_CHUNK = 1024 * 1024

TimeBound = float | int | str | datetime | None


class InvalidQuery(ValueError):
    """A log query that cannot be answered as asked (bad cursor, node, level, time...)."""


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


@dataclass
class LogPage:
    job_id: str
    node: int
    attempt: int  # the attempt of the last line read (0: the job has no attempt yet)
    lines: list[LogLine] = field(default_factory=list)
    next: str = ""  # continue forward (following) from here
    prev: str | None = None  # lines before the first one; None at the start
    more: bool = False  # the limit was reached: there may be more lines in that direction
    complete: bool = False  # nothing more will ever be written after ``next``
    purged: bool = False  # the logs were removed by retention
    job_status: str = ""
    attempts: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {
            **{k: v for k, v in asdict(self).items() if k != "lines"},
            "lines": [line.to_dict() for line in self.lines],
        }


@dataclass(frozen=True)
class LogFilter:
    levels: frozenset[str] | None = None  # None: every level
    q: str | None = None
    since: str | None = None  # stored-timestamp form, inclusive
    until: str | None = None  # exclusive

    @classmethod
    def make(
        cls,
        level: str | Iterable[str] | None = None,
        q: str | None = None,
        since: TimeBound = None,
        until: TimeBound = None,
    ) -> LogFilter:
        return cls(_levels(level), (q or None), _bound(since), _bound(until))

    @property
    def empty(self) -> bool:
        return self.levels is None and not self.q and not self.since and not self.until


# cursors ------------------------------------------------------------------------------------
def make_cursor(attempt: int, node: int, offset: int) -> str:
    return f"{attempt}:{node}:{offset}"


def parse_cursor(cursor: str) -> tuple[int, int, int]:
    try:
        attempt, node, offset = (int(part) for part in str(cursor).split(":"))
    except ValueError:
        raise InvalidQuery(f"{cursor!r} is not a log position") from None
    if attempt < 0 or node < 0 or offset < 0:
        raise InvalidQuery(f"{cursor!r} is not a log position")
    return attempt, node, offset


# the query ----------------------------------------------------------------------------------
def query_logs(
    store: JobStore,
    job_id: str,
    *,
    attempt: int | None = None,
    node: int = 0,
    level: str | Iterable[str] | None = None,
    q: str | None = None,
    since: TimeBound = None,
    until: TimeBound = None,
    after: str | None = None,
    before: str | None = None,
    tail: bool = False,
    limit: int = DEFAULT_LIMIT,
    job: JobRun | None = None,
) -> LogPage:
    """Lines of node ``node`` of ``attempt`` (None: the latest, following into later ones when
    reading forward from ``after``), matching every filter given:

    - ``level``: "info", "warning", "error", or several of them;
    - ``q``: text the line contains, case-insensitive;
    - ``since`` (inclusive) / ``until`` (exclusive): unix seconds, ISO 8601 or datetime;
    - ``after``: a cursor (a line's ``pos``, a page's ``next``): lines after it;
    - ``before``: a cursor (a page's ``prev``): the last ``limit`` lines before it;
    - ``tail``: the last ``limit`` lines instead of the first.
    """
    job = job or store.get_job(job_id)
    if limit < 1 or limit > MAX_LIMIT:
        raise InvalidQuery(f"limit must be between 1 and {MAX_LIMIT}")
    if isinstance(node, bool) or not isinstance(node, int) or not 0 <= node < job.num_nodes:
        raise InvalidQuery(
            f"job run {job.id} has {job.num_nodes} node{'s' if job.num_nodes != 1 else ''} "
            f"(0 to {job.num_nodes - 1}), not {node!r}"
        )
    latest = len(job.attempts)
    if attempt is not None and (isinstance(attempt, bool) or not 1 <= attempt <= max(latest, 1)):
        raise InvalidQuery(f"job run {job.id} has no attempt {attempt!r} (it has {latest})")
    if after is not None and before is not None:
        raise InvalidQuery("give after or before, not both")
    filt = LogFilter.make(level, q, since, until)
    page = LogPage(
        job_id=job.id,
        node=node,
        attempt=attempt or latest,
        job_status=job.status,
        attempts=latest,
        purged=job.logs_purged_at is not None,
    )
    data_dir = store.data_dir

    if before is not None or (tail and after is None):
        chosen, end = attempt or latest, None
        if before is not None:
            chosen, cursor_node, end = parse_cursor(before)
            _check_cursor(cursor_node, node, attempt, chosen, latest)
        page.attempt = chosen
        if chosen == 0:
            page.next = make_cursor(0, node, 0)
            return page
        with _LogBuffer(log_path(data_dir, job.id, chosen, node)) as buf:
            hi = buf.hi if end is None else _boundary(buf, end)
            lo, hi = _time_window(buf, 0, hi, filt)
            spans, start, more = _scan_backward(buf.data, lo, hi, filt, limit)
            page.lines = _lines(buf.data, spans, chosen, node)
            page.more = more
            page.prev = make_cursor(chosen, node, start) if start > 0 else None
            page.next = make_cursor(chosen, node, spans[-1][1] if spans else hi)
            if before is None:
                page.next = make_cursor(chosen, node, buf.hi)
        page.complete = _final(job, chosen) and not (before is not None)
        return page

    current, offset = attempt or latest, 0
    if after is not None:
        current, cursor_node, offset = parse_cursor(after)
        _check_cursor(cursor_node, node, attempt, current, latest)
    follow_on = attempt is None
    while True:
        page.attempt = current
        if current == 0:  # before the first attempt
            page.next = make_cursor(0, node, 0)
            if follow_on and latest >= 1:
                current, offset = 1, 0
                continue
            page.complete = job.status in TERMINAL
            return page
        with _LogBuffer(log_path(data_dir, job.id, current, node)) as buf:
            start = _boundary(buf, offset)
            lo, hi = _time_window(buf, start, buf.hi, filt)
            spans, end, more = _scan_forward(buf.data, lo, hi, filt, limit - len(page.lines))
            page.lines.extend(_lines(buf.data, spans, current, node))
            if spans and not page.prev and spans[0][0] > 0 and current == (attempt or current):
                page.prev = make_cursor(current, node, spans[0][0])
            page.next = make_cursor(current, node, end if more else buf.hi)
            page.more = more
        final = _final(job, current)
        if more or not final or not follow_on or current >= latest:
            page.complete = final and not more
            return page
        current, offset = current + 1, 0


def _check_cursor(
    cursor_node: int, node: int, attempt: int | None, cursor_attempt: int, latest: int
) -> None:
    if cursor_node != node:
        raise InvalidQuery(f"that position is in node {cursor_node}'s log, not node {node}'s")
    if attempt is not None and cursor_attempt != attempt:
        raise InvalidQuery(f"that position is in attempt {cursor_attempt}, not {attempt}")
    if cursor_attempt > latest:
        raise InvalidQuery(f"that position is in attempt {cursor_attempt}, which does not exist")


def _final(job: JobRun, attempt: int) -> bool:
    """Whether the log of ``attempt`` will not grow any more."""
    if job.status in TERMINAL:
        return True
    for item in job.attempts:
        if item.attempt == attempt:
            return item.ended_at is not None and attempt < len(job.attempts)
    return False


# downloads ----------------------------------------------------------------------------------
def download_logs(
    store: JobStore,
    job_id: str,
    *,
    attempt: int | None = None,
    node: int = 0,
    level: str | Iterable[str] | None = None,
    q: str | None = None,
    since: TimeBound = None,
    until: TimeBound = None,
    job: JobRun | None = None,
) -> Iterator[bytes]:
    """Every line of one log file that matches the filters, in the stored format, as chunks of
    bytes (for a streamed HTTP response or a file). Only lines written so far."""
    job = job or store.get_job(job_id)
    page = query_logs(store, job_id, attempt=attempt, node=node, limit=1, job=job)
    chosen = attempt or page.attempt
    if chosen == 0:
        return
    filt = LogFilter.make(level, q, since, until)
    data_dir = store.data_dir
    with _LogBuffer(log_path(data_dir, job.id, chosen, node)) as buf:
        lo, hi = _time_window(buf, 0, buf.hi, filt)
        if filt.levels is None and not filt.q:
            for start in range(lo, hi, _MAX_CHUNK):
                yield bytes(buf.data[start : min(hi, start + _MAX_CHUNK)])
            return
        position = lo
        while position < hi:
            spans, end, more = _scan_forward(buf.data, position, hi, filt, 50_000)
            if spans:
                yield b"".join(buf.data[s:e] for s, e in spans)
            if not more:
                break
            position = end


def download_to(
    store: JobStore,
    job_id: str,
    folder: str | os.PathLike[str],
    *,
    attempts: Iterable[int] | None = None,
    nodes: Iterable[int] | None = None,
    level: str | Iterable[str] | None = None,
    q: str | None = None,
    since: TimeBound = None,
    until: TimeBound = None,
) -> list[Path]:
    """Write ``<folder>/<job id>/attempt_K/node_N.log`` for the attempts and nodes asked (all by
    default), each with its lines that match the filters. Returns the files written."""
    job = store.get_job(job_id)
    chosen_attempts = list(attempts) if attempts is not None else [a.attempt for a in job.attempts]
    chosen_nodes = list(nodes) if nodes is not None else list(range(job.num_nodes))
    written = []
    for attempt in chosen_attempts:
        for node in chosen_nodes:
            target = Path(folder) / job.id / f"attempt_{attempt}" / f"node_{node}.log"
            target.parent.mkdir(parents=True, exist_ok=True)
            with open(target, "wb") as out:
                for chunk in download_logs(
                    store,
                    job_id,
                    attempt=attempt,
                    node=node,
                    level=level,
                    q=q,
                    since=since,
                    until=until,
                    job=job,
                ):
                    out.write(chunk)
            written.append(target)
    return written


# scanning -----------------------------------------------------------------------------------
class _LogBuffer:
    """A log file mapped read-only; ``hi`` is the end of its last complete line."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.data: Any = b""
        self.hi = 0
        self._file: Any = None
        self._map: mmap.mmap | None = None

    def __enter__(self) -> _LogBuffer:
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


def _boundary(buf: _LogBuffer, offset: int) -> int:
    if offset == 0 or offset == buf.hi:
        return offset
    if offset > buf.hi or buf.data[offset - 1 : offset] != b"\n":
        raise InvalidQuery("that log position is not the start of a line in this log")
    return offset


def _time_window(buf: _LogBuffer, lo: int, hi: int, filt: LogFilter) -> tuple[int, int]:
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


def _scan_forward(
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
        size = min(size * 2, _MAX_CHUNK)
    return spans, hi, False


def _scan_backward(
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


def _lines(data: Any, spans: list[tuple[int, int]], attempt: int, node: int) -> list[LogLine]:
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


def _levels(level: str | Iterable[str] | None) -> frozenset[str] | None:
    if level is None or level == "":
        return None
    names = [level] if isinstance(level, str) else list(level)
    out = set()
    for name in names:
        for part in str(name).split(","):
            part = part.strip().lower()
            if not part:
                continue
            part = {"warn": "warning", "err": "error"}.get(part, part)
            if part not in LEVELS:
                raise InvalidQuery(f"level must be info, warning or error, not {name!r}")
            out.add(part)
    if not out or out == set(LEVELS):
        return None
    return frozenset(out)


def _bound(value: TimeBound) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return timestamp(value.timestamp())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return timestamp(float(value))
    if isinstance(value, str):
        text = value.strip()
        try:
            return timestamp(float(text))
        except ValueError:
            pass
        from .logfile import parse_timestamp

        try:
            return timestamp(parse_timestamp(text))
        except ValueError:
            raise InvalidQuery(
                f"{value!r} is not a time (unix seconds or ISO 8601, e.g. 2025-11-29T10:13:20Z)"
            ) from None
    raise InvalidQuery(f"{value!r} is not a time")
