"""The job store: job runs, their attempts and node processes, and the index of their log files,
in SQLite under ``<data>/workloads/jobs.db``.

WAL mode with a busy timeout: the supervisors of several jobs, the CLI, kernels and the Jupyter
server read and write it at once, and it outlives all of them. Every write is one short
``BEGIN IMMEDIATE`` transaction; every call opens its own connection, so a ``JobStore`` can be
shared by threads (the server calls it from its executor). The schema is versioned with
``PRAGMA user_version`` and migrated forward on open.
"""

from __future__ import annotations

from pathlib import Path

from ..paths import store_path
from .filters import JobFilter
from .job_rows import MAX_WARNINGS, JobRows
from .records import (
    ACTIVE,
    CANCELLED,
    FAILED,
    JOB_STATUSES,
    PENDING,
    QUEUED,
    RUNNING,
    SUCCEEDED,
    TERMINAL,
    AlreadySubmitted,
    Attempt,
    Firing,
    JobNotFound,
    JobRun,
    LogFile,
    NodeProcess,
    Schedule,
    ScheduleExists,
    ScheduleNotFound,
    StoreError,
    TooManySchedules,
)
from .schedule_rows import ScheduleRows
from .schema import _SCHEMA, SCHEMA_MIGRATIONS, SCHEMA_VERSION

__all__ = [
    "ACTIVE", "CANCELLED", "FAILED", "JOB_STATUSES", "MAX_WARNINGS", "PENDING", "QUEUED",
    "RUNNING",
    "SCHEMA_MIGRATIONS", "SCHEMA_VERSION", "SUCCEEDED", "TERMINAL", "_SCHEMA", "AlreadySubmitted",
    "Attempt", "Firing", "JobFilter", "JobNotFound", "JobRun", "JobStore", "LogFile",
    "NodeProcess", "Schedule", "ScheduleExists", "ScheduleNotFound", "StoreError",
    "TooManySchedules",
]  # fmt: skip


class JobStore(JobRows, ScheduleRows):
    """The job store of one data folder (created on first use): job runs with their attempts,
    nodes and log files (job_rows.py, attempt_rows.py), schedules (schedule_rows.py)."""

    @classmethod
    def for_data_dir(cls, data: str | Path) -> JobStore:
        return cls(store_path(Path(data)))
