"""Job runs as the API shows them (``jupyter_air.api.workloads``): what ``air … --output json``
prints and what the server's workloads API answers, with links to the job, the experiment and
each attempt's MLflow run when a UI is known, and the supervisor's staleness from its heartbeat.
A view only reads what the job run holds: it looks at no process.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

from .connection import Connection
from .heartbeat import silent_s
from .store import QUEUED, TERMINAL, Attempt, JobRun

if TYPE_CHECKING:  # imported on first use: the views module imports no pydantic
    from ..api.workloads import Job, JobAttempt, JobDetail


class _Timed(Protocol):
    @property
    def started_at(self) -> float | None: ...

    @property
    def ended_at(self) -> float | None: ...


def connection_for(job: JobRun, current: Connection | None) -> Connection | None:
    """Where links of ``job`` point: the current Jupyter server, else the one it was submitted
    through."""
    if current is not None and (current.mlflow_ui or current.server_url):
        return current
    if job.server_url or job.mlflow_ui:
        return Connection(
            tracking_uri=job.tracking_uri or "",
            server_url=job.server_url,
            mlflow_ui=job.mlflow_ui,
            source="job",
        )
    return current


def duration_s(job_or_attempt: _Timed, now: float | None = None) -> float | None:
    """How long it ran (so far, while it runs); None before it started."""
    start = job_or_attempt.started_at
    if start is None:
        return None
    end = job_or_attempt.ended_at
    return max(0.0, (end if end is not None else (now or time.time())) - start)


def job_view(job: JobRun, connection: Connection | None = None) -> Job:
    """The API's view of a job run."""
    from ..api.workloads import Job

    return Job.model_validate(_fields(job, connection_for(job, connection)))


def job_detail(job: JobRun, connection: Connection | None = None) -> JobDetail:
    """``GET air/api/workloads/{id}``: the view with the workload YAML."""
    from ..api.workloads import JobDetail

    fields = _fields(job, connection_for(job, connection))
    return JobDetail.model_validate({**fields, "spec_yaml": job.spec_yaml})


def job_json(job: JobRun, connection: Connection | None = None) -> dict[str, Any]:
    """The view as JSON data (``air … --output json``)."""
    return job_view(job, connection).model_dump(mode="json")


def _fields(job: JobRun, conn: Connection | None) -> dict[str, Any]:
    now = time.time()
    silent = silent_s(job, now)
    links: dict[str, str | None] = {}
    if conn is not None:
        experiment = conn.run_links(job.experiment_id, None).get("experiment")
        links = {"job": conn.job_link(job.id), "experiment": experiment}
    return {
        "id": job.id,
        "status": job.status,
        "reason": job.reason,
        "queue": job.queue if job.status == QUEUED else None,
        "finished": job.status in TERMINAL,
        "experiment_name": job.experiment_name,
        "experiment_id": job.experiment_id,
        "run_name": job.run_name,
        "command": job.command,
        "compute": job.compute,
        "backend": job.backend or "local",
        "cluster": job.cluster,
        "gpus": job.gpus,
        "max_retries": job.max_retries,
        "timeout_minutes": job.timeout_minutes,
        "working_dir": job.working_dir,
        "code": job.spec.get("code") if isinstance(job.spec.get("code"), dict) else None,
        "spec_path": job.spec_path,
        "source": job.source,
        "notebook": job.notebook,
        "user": job.user,
        "schedule_id": job.schedule_id,
        "schedule_name": job.schedule_name,
        "submitted_at": job.submitted_at,
        "started_at": job.started_at,
        "ended_at": job.ended_at,
        "duration_s": duration_s(job, now),
        "cancel_requested": job.cancel_requested is not None,
        "logs_purged": job.logs_purged_at is not None,
        "supervisor_seen_at": job.supervisor_seen_at,
        "supervisor_silent_s": silent,
        "warnings": job.warnings,
        "attempts": [_attempt(job, attempt, conn, now) for attempt in job.attempts],
        "links": links,
    }


def _attempt(job: JobRun, attempt: Attempt, conn: Connection | None, now: float) -> JobAttempt:
    from ..api.workloads import JobAttempt, JobNode, RunLinks

    links = conn.run_links(job.experiment_id, attempt.mlflow_run_id) if conn else {}
    return JobAttempt(
        attempt=attempt.attempt,
        status=attempt.status,
        reason=attempt.reason,
        exit_code=attempt.exit_code,
        signal=attempt.signal,
        timed_out=attempt.timed_out,
        mlflow_run_id=attempt.mlflow_run_id,
        started_at=attempt.started_at,
        ended_at=attempt.ended_at,
        duration_s=duration_s(attempt, now),
        backend=attempt.backend or "local",
        nodes=[JobNode.model_validate(n, from_attributes=True) for n in attempt.nodes],
        links=RunLinks(**links),
        checkpoint=attempt.checkpoint,
    )


def compute_text(compute: dict[str, Any]) -> str:
    kind = compute.get("accelerator_type", "GPU")
    nodes = int(compute.get("num_nodes", 1))
    each = "CPU" if kind == "CPU" else f"{compute.get('num_accelerators', 1)} x {kind}"
    return each if nodes == 1 else f"{nodes} nodes x {each}"
