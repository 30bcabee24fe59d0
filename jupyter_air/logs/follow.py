"""Following a job run: its log lines as they are written, across retries, and its attempts as
they start and end, until the job run ends. Used by ``air logs --follow``, ``air run --follow``
and the magics; polls the log files and the store (a few reads per second).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..api.enums import JobStatus
from ..workloads.jobs import refresh
from .query import query_logs
from .scan import LogLine

if TYPE_CHECKING:
    from ..workloads.store import Attempt, JobRun, JobStore

QUEUED = JobStatus.QUEUED


@dataclass
class AttemptStarted:
    attempt: Attempt
    job: JobRun


@dataclass
class AttemptEnded:
    attempt: Attempt
    job: JobRun


@dataclass
class JobEnded:
    job: JobRun


@dataclass
class Queued:
    """The job run waits in its cluster's queue: its place or the reason changed."""

    job: JobRun

    def text(self) -> str:
        """``Queued (2nd of 3): 2nd in line, behind job run …``"""
        from ..rendering import queue_place

        queue = self.job.queue or {}
        return f"Queued ({queue_place(queue)}): {self.reason()}"

    def where(self) -> str:
        """``2nd of 3: 2nd in line, behind job run …``, for a status line."""
        from ..rendering import queue_place

        return f"{queue_place(self.job.queue)}: {self.reason()}"

    def reason(self) -> str:
        return str((self.job.queue or {}).get("reason") or "waiting for resources")


Event = LogLine | AttemptStarted | AttemptEnded | JobEnded | Queued


def follow(
    store: JobStore,
    job_id: str,
    *,
    attempt: int | None = None,
    node: int | Sequence[int] = 0,
    level: str | Iterable[str] | None = None,
    q: str | None = None,
    after: str | None = None,
    poll_s: float = 0.25,
    batch: int = 5000,
) -> Iterator[Event]:
    """Events of a job run until it ends (the last event is JobEnded). ``node``: one node or
    several (their lines interleaved as they are read). ``after``: a cursor to start from (a
    page's ``next``, one node only); default: the start of ``attempt`` (None: the latest, then
    the ones after it)."""
    nodes = [node] if isinstance(node, int) else list(node)
    cursors: dict[int, str | None] = {n: None for n in nodes}
    if after is not None:
        if len(nodes) != 1:
            raise ValueError("after= goes with one node")
        cursors[nodes[0]] = after
    started: set[int] = set()
    ended: set[int] = set()
    told: dict[str, object] | None = None
    while True:
        job = refresh(store, store.get_job(job_id))  # read before the logs: see below
        if job.status == QUEUED and job.queue and job.queue != told:
            told = job.queue
            yield Queued(job)
        for item in job.attempts:
            if item.attempt not in started:
                started.add(item.attempt)
                yield AttemptStarted(item, job)
        more = False
        for n in nodes:
            page = query_logs(
                store,
                job_id,
                attempt=attempt,
                node=n,
                level=level,
                q=q,
                after=cursors[n],
                limit=batch,
                job=job,
            )
            yield from page.lines
            cursors[n] = page.next
            more = more or page.more
        for item in job.attempts:
            if item.ended_at is not None and item.attempt not in ended:
                ended.add(item.attempt)
                yield AttemptEnded(item, job)
        if more:
            continue
        # the job had ended before its logs were read: they were complete, nothing comes after
        if job.finished:
            yield JobEnded(job)
            return
        time.sleep(poll_s)
