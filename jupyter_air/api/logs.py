"""The log pages of a job run as the REST API (``air/api/workloads/{id}/logs``) and ``air logs
--output json`` answer them. Log lines are whatever a command printed (HTML, ANSI escapes):
clients only ever show them as text."""

from __future__ import annotations

from pydantic import Field

from .base import ApiModel
from .enums import JobStatus, LogLevel, LogStream


class LogLine(ApiModel):
    """One line a node's command wrote."""

    t: str = Field(description="arrival time, ISO 8601 UTC to the millisecond")
    node: int
    attempt: int
    stream: LogStream
    level: LogLevel
    text: str
    pos: str = Field(description="the cursor just after this line")


class LogPage(ApiModel):
    """``GET air/api/workloads/{id}/logs``: lines of one node of one attempt."""

    job_id: str
    node: int
    attempt: int = Field(description="the attempt of the last line read (0: none yet)")
    lines: list[LogLine]
    next: str = Field(description="continue forward (following) from here")
    prev: str | None = Field(description="the lines before the first one; null at the start")
    more: bool = Field(description="the limit was reached: there may be more lines that way")
    complete: bool = Field(description="nothing more will ever be written after next")
    purged: bool = Field(description="the logs were removed by the retention policy")
    job_status: JobStatus
    attempts: int = Field(description="attempts of the job run so far")
