"""How times, durations and outcomes read for people: one wording for ``air``, the run displays
in cell outputs and the magics (the panels word them the same way in ``src/*/format.ts``)."""

from __future__ import annotations

import time
from typing import Protocol

NONE = "-"


class _Ended(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def reason(self) -> str | None: ...


def seconds_text(seconds: float) -> str:
    """``2.3 s``, ``2 min 5 s``, ``2 h 5 min``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def duration_text(seconds: float | None) -> str:
    return NONE if seconds is None else seconds_text(seconds)


def time_text(t: float | None) -> str:
    """A unix time in this machine's time zone, to the second."""
    return NONE if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def status_text(status: str, reason: str | None) -> str:
    """``FAILED (node 1 exited with code 3)``."""
    return status + (f" ({reason})" if reason else "")


def outcome_text(job: _Ended) -> str:
    """How a job run ended: ``Job run 3f2a9c1b0d4e SUCCEEDED: the command succeeded``."""
    return f"Job run {job.id} {job.status}: {job.reason}"
