"""Job runs as JSON: what ``air … --output json`` prints and what the server's workloads API can
answer, with links to the job, the experiment and each attempt's MLflow run when a UI is known.
"""

from __future__ import annotations

import time
from typing import Any

from .connection import Connection
from .store import TERMINAL, JobRun


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


def duration_s(job_or_attempt: Any) -> float | None:
    start = getattr(job_or_attempt, "started_at", None)
    if start is None:
        return None
    end = getattr(job_or_attempt, "ended_at", None)
    return max(0.0, (end if end is not None else time.time()) - start)


def job_json(job: JobRun, connection: Connection | None = None) -> dict[str, Any]:
    conn = connection_for(job, connection)
    attempts = []
    for attempt in job.attempts:
        links = conn.run_links(job.experiment_id, attempt.mlflow_run_id) if conn else {}
        attempts.append(
            {
                "attempt": attempt.attempt,
                "status": attempt.status,
                "reason": attempt.reason,
                "exit_code": attempt.exit_code,
                "signal": attempt.signal,
                "timed_out": attempt.timed_out,
                "mlflow_run_id": attempt.mlflow_run_id,
                "started_at": attempt.started_at,
                "ended_at": attempt.ended_at,
                "duration_s": duration_s(attempt),
                "backend": attempt.backend or "local",
                "nodes": [
                    {
                        "node": n.node,
                        "pid": n.pid,
                        "gpus": n.gpus,
                        "exit_code": n.exit_code,
                        "signal": n.signal,
                        "host": n.host,
                        "machine": n.machine,
                    }
                    for n in attempt.nodes
                ],
                "links": links,
            }
        )
    links: dict[str, Any] = {}
    if conn is not None:
        job_link = conn.job_link(job.id)
        if job_link:
            links["job"] = job_link
        experiment = conn.run_links(job.experiment_id, None).get("experiment")
        if experiment:
            links["experiment"] = experiment
    return {
        "id": job.id,
        "status": job.status,
        "reason": job.reason,
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
        "spec_path": job.spec_path,
        "source": job.source,
        "notebook": job.notebook,
        "user": job.user,
        "submitted_at": job.submitted_at,
        "started_at": job.started_at,
        "ended_at": job.ended_at,
        "duration_s": duration_s(job),
        "cancel_requested": job.cancel_requested is not None,
        "logs_purged": job.logs_purged_at is not None,
        "warnings": job.warnings,
        "attempts": attempts,
        "links": links,
    }


def compute_text(compute: dict[str, Any]) -> str:
    kind = compute.get("accelerator_type", "GPU")
    nodes = int(compute.get("num_nodes", 1))
    each = "CPU" if kind == "CPU" else f"{compute.get('num_accelerators', 1)} x {kind}"
    return each if nodes == 1 else f"{nodes} nodes x {each}"
