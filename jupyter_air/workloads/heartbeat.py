"""The supervisor's heartbeat: how a read of a job run knows, without looking at any process,
that the supervisor of an active job run has gone quiet.

Every supervisor writes the time into its job run's ``supervisor_seen_at`` every ``EVERY_S``
seconds, from a thread of its own, for as long as it runs. A read (the REST API, ``air … -o
json``) then only compares times: an active job run whose supervisor was not seen for longer than
``STALE_AFTER_S`` is stale ("supervisor not seen for N s"). Whether the supervisor is really
gone, and ending its job run, is for the Jupyter server's background task and the CLI's explicit
commands (``jobs.refresh``), which look at the processes.
"""

from __future__ import annotations

import logging
import time

from ..repeating import Repeating
from .store import TERMINAL, JobRun, JobStore

log = logging.getLogger(__name__)

EVERY_S = 5.0
STALE_AFTER_S = 30.0  # six missed beats: a busy machine delays a few, not six


def last_seen(job: JobRun) -> float:
    """When the job run's supervisor last gave a sign of life (its start, before its first
    beat; the submission, before it started)."""
    return job.supervisor_seen_at or job.supervisor_started or job.submitted_at


def silent_s(job: JobRun, now: float | None = None) -> float | None:
    """For how long the supervisor of an active job run has not been seen, when that is longer
    than ``STALE_AFTER_S``; None when it is fresh or the job run has ended."""
    if job.status in TERMINAL:
        return None
    silent = (time.time() if now is None else now) - last_seen(job)
    return round(silent, 1) if silent > STALE_AFTER_S else None


def stale_text(seconds: float) -> str:
    return f"supervisor not seen for {seconds:.0f} s"


class Heartbeat:
    """Writes ``supervisor_seen_at`` every ``every_s`` seconds until stopped."""

    def __init__(self, store: JobStore, job_id: str, every_s: float = EVERY_S) -> None:
        self.store = store
        self.job_id = job_id
        self.every_s = every_s
        self._beats = Repeating(self.beat, every_s, "air-heartbeat")

    def start(self) -> Heartbeat:
        self.beat()
        self._beats.start()
        return self

    def beat(self) -> None:
        try:
            self.store.update_job(self.job_id, supervisor_seen_at=time.time())
        except Exception as error:  # a busy store: the next beat will do
            log.warning("heartbeat of job run %s not written: %s", self.job_id, error)

    def stop(self) -> None:
        self._beats.stop(timeout_s=self.every_s + 5)
