"""Every status list of jupyter-air, once: job runs (and their attempts), MLflow runs, log
levels and streams, and the MLflow server's state.

Standard library only: the job store, the supervisor and the CLI import it without pydantic.
Each member is a ``str`` (it compares, formats and serialises as its value), so values read
back from SQLite or JSON need no conversion.
"""

from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    """An enum whose members are their values wherever text is expected."""

    def __str__(self) -> str:
        return str(self.value)


class JobStatus(TextEnum):
    """The status of a job run, and of each of its attempts (never PENDING or QUEUED), in the
    order of its life. QUEUED: its next attempt waits in its cluster's queue for resources
    (``backends/queue_line.py``)."""

    PENDING = "PENDING"
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"
    CANCELLED = "CANCELLED"


JOB_ACTIVE = frozenset({JobStatus.PENDING, JobStatus.QUEUED, JobStatus.RUNNING})
JOB_TERMINAL = frozenset({JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED})


class RunStatus(TextEnum):
    """The status of an MLflow run (MLflow's own ``RunStatus`` names)."""

    RUNNING = "RUNNING"
    SCHEDULED = "SCHEDULED"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"


RUN_TERMINAL = frozenset({RunStatus.FINISHED, RunStatus.FAILED, RunStatus.KILLED})


def run_status_of(job_status: str) -> RunStatus:
    """How the MLflow run of an attempt ends when the attempt ends with ``job_status``."""
    if job_status == JobStatus.SUCCEEDED:
        return RunStatus.FINISHED
    if job_status == JobStatus.CANCELLED:
        return RunStatus.KILLED
    return RunStatus.FAILED


class LogLevel(TextEnum):
    """The level of a log line, read from the line itself (``logs/levels.py``)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"


class LogStream(TextEnum):
    """Where a node's command wrote a log line."""

    STDOUT = "stdout"
    STDERR = "stderr"


class MlflowMode(TextEnum):
    """Which tracking server the Jupyter server uses: its own (``embedded``), the user's
    ``MLFLOW_TRACKING_URI`` (``external``), or none (``disabled``)."""

    EMBEDDED = "embedded"
    EXTERNAL = "external"
    DISABLED = "disabled"


class MlflowState(TextEnum):
    """The state of that tracking server as the panels show it."""

    STARTING = "starting"
    READY = "ready"
    FAILED = "failed"
    STOPPED = "stopped"
    EXTERNAL = "external"
    DISABLED = "disabled"
