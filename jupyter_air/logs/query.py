"""Reading the logs of job runs: filtered pages for the CLI and the Logs view, and downloads.

``query_logs`` answers one question — lines of one node of one attempt, filtered by level, text
(a case-insensitive substring of the line's text), time range, and a position — by scanning the
log file's bytes (scan.py). A million lines are searched in a fraction of a second (figures in
docs/workloads.md, from bench/workload_logs.py).

Positions are opaque cursors (``"attempt:node:offset"``, an offset being a line boundary): every
line carries ``pos``, the boundary just after it; a page carries ``next`` (continue forward from
here: following) and ``prev`` (lines before the first one: scrolling up). With ``attempt=None``
(the latest attempt) a forward read that reaches the end of a finished attempt goes on into the
next one, so following a job sees its retries.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api.enums import JOB_TERMINAL
from ..workloads.paths import log_path
from .filters import Filters, InvalidQuery, LogFilter, TimeBound, make_cursor, parse_cursor
from .scan import (
    MAX_CHUNK,
    LogBuffer,
    LogLine,
    boundary,
    read_lines,
    scan_backward,
    scan_forward,
    time_window,
)

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from ..workloads.store import JobRun, JobStore

DEFAULT_LIMIT = 1000
MAX_LIMIT = 100_000


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
        with LogBuffer(log_path(data_dir, job.id, chosen, node)) as buf:
            hi = buf.hi if end is None else boundary(buf, end)
            lo, hi = time_window(buf, 0, hi, filt)
            spans, start, more = scan_backward(buf.data, lo, hi, filt, limit)
            page.lines = read_lines(buf.data, spans, chosen, node)
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
            page.complete = job.status in JOB_TERMINAL
            return page
        with LogBuffer(log_path(data_dir, job.id, current, node)) as buf:
            start = boundary(buf, offset)
            lo, hi = time_window(buf, start, buf.hi, filt)
            spans, end, more = scan_forward(buf.data, lo, hi, filt, limit - len(page.lines))
            page.lines.extend(read_lines(buf.data, spans, current, node))
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
    if job.status in JOB_TERMINAL:
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
    job: JobRun | None = None,
    **filters: Unpack[Filters],
) -> Iterator[bytes]:
    """Every line of one log file that matches the filters, in the stored format, as chunks of
    bytes (for a streamed HTTP response or a file). Only lines written so far."""
    job = job or store.get_job(job_id)
    page = query_logs(store, job_id, attempt=attempt, node=node, limit=1, job=job)
    chosen = attempt or page.attempt
    if chosen == 0:
        return
    filt = LogFilter.make(**filters)
    data_dir = store.data_dir
    with LogBuffer(log_path(data_dir, job.id, chosen, node)) as buf:
        lo, hi = time_window(buf, 0, buf.hi, filt)
        if filt.levels is None and not filt.q:
            for start in range(lo, hi, MAX_CHUNK):
                yield bytes(buf.data[start : min(hi, start + MAX_CHUNK)])
            return
        position = lo
        while position < hi:
            spans, end, more = scan_forward(buf.data, position, hi, filt, 50_000)
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
    **filters: Unpack[Filters],
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
                    store, job_id, attempt=attempt, node=node, job=job, **filters
                ):
                    out.write(chunk)
            written.append(target)
    return written
