"""Bringing the MLflow runs of ended job runs in line with the job store.

A job run's end is decided by its supervisor and written to the job store at once, whether
MLflow answers or not. What MLflow must eventually show follows from the store alone:

- each attempt has a run (one is created, with the attempt's times and tags, for an attempt that
  started while MLflow was down);
- each run holds its attempt's logs (``logs/attempt_K/node_N.log``, for files whose last upload
  did not happen);
- each run that still says RUNNING ends with its attempt's status (FINISHED, FAILED, KILLED) and
  end time.

When all of that is done the job run is marked (``runs_closed_at``) and not looked at again.
Called by the supervisor at the end of its job (a few seconds at most), by ``air get run``, and
in the Jupyter server by a background task — as ``python -m jupyter_air.workloads.reconcile``,
its own process with bounded MLflow calls, so that nothing of it runs in the server's threads.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api.enums import RUN_TERMINAL, run_status_of
from ..mlflow_server.records import ServerFiles, mlflow_folder
from ..tracking.naming import TAG_ATTEMPT, TAG_ATTEMPTS, TAG_JOB
from .connection import server_token
from .store import TERMINAL, Attempt, JobRun, JobStore
from .tracking_calls import EMBEDDED, bound_mlflow_calls

log = logging.getLogger(__name__)

TAG_RECORDED_LATE = "jupyter_air.recorded_after_the_attempt"


@dataclass
class Report:
    closed: list[str] = field(default_factory=list)
    ended_runs: int = 0
    created_runs: int = 0
    uploads: int = 0
    failed: dict[str, str] = field(default_factory=dict)

    def __str__(self) -> str:
        text = (
            f"{len(self.closed)} job run(s) closed, {self.ended_runs} run(s) ended, "
            f"{self.created_runs} created, {self.uploads} log file(s) uploaded"
        )
        if self.failed:
            text += f"; not yet: {', '.join(f'{k} ({v})' for k, v in self.failed.items())}"
        return text


def run_status(attempt: Attempt) -> str:
    return run_status_of(attempt.status).value


def reconcile(
    store: JobStore, job_ids: list[str] | None = None, *, budget_s: float = 30.0
) -> Report:
    """Close the MLflow runs of ended job runs (``job_ids``, or every one not closed yet), for
    at most about ``budget_s`` seconds. A tracking server that does not answer stops the pass
    for the job runs it serves."""
    report = Report()
    deadline = time.monotonic() + budget_s
    unreachable: set[str] = set()
    for job_id in job_ids if job_ids is not None else store.jobs_with_open_runs():
        if time.monotonic() > deadline:
            break
        job = store.get_job(job_id)
        if job.status not in TERMINAL or job.runs_closed_at is not None:
            continue
        target = _tracking(store, job)
        if target is None:
            report.failed[job.id] = "no tracking server"
            continue
        uri, token = target
        if uri in unreachable:
            continue
        try:
            _close(store, job, uri, token, report)
        except Exception as error:
            unreachable.add(uri)
            report.failed[job.id] = str(error).splitlines()[0][:200] if str(error) else repr(error)
            log.info("job run %s: MLflow runs not closed yet: %s", job.id, error)
            continue
        store.update_job(job.id, runs_closed_at=time.time())
        report.closed.append(job.id)
    return report


def _tracking(store: JobStore, job: JobRun) -> tuple[str, str | None] | None:
    """The job's tracking server now: the embedded one's current address when it runs."""
    if job.tracking == EMBEDDED:
        record = ServerFiles(mlflow_folder(store.data_dir)).read_endpoint()
        if record is None or not record.guard_alive():
            return None
        return record.endpoint.url, record.endpoint.token
    if not job.tracking_uri:
        return None
    found = server_token(job.tracking_uri)  # another data folder's server (a Jupyter server's)
    token = found[0] if found else os.environ.get("MLFLOW_TRACKING_TOKEN") or None
    return job.tracking_uri, token


def _close(store: JobStore, job: JobRun, uri: str, token: str | None, report: Report) -> None:
    from ..tracking.rest import client_for

    if token:
        os.environ["MLFLOW_TRACKING_TOKEN"] = token  # the client reads it at each call
    client = client_for(uri)
    for attempt in job.attempts:
        run_id = attempt.mlflow_run_id
        if run_id is None:
            run_id = _create_run(client, job, attempt)
            store.update_attempt(job.id, attempt.attempt, mlflow_run_id=run_id)
            report.created_runs += 1
        for log_file in store.log_files(job.id, attempt.attempt):
            if log_file.uploaded_at is None and log_file.complete and Path(log_file.path).exists():
                client.log_artifact(run_id, log_file.path, f"logs/attempt_{attempt.attempt}")
                store.index_log_file(
                    job.id, attempt.attempt, log_file.node, log_file.path, uploaded_at=time.time()
                )
                report.uploads += 1
        run = client.get_run(run_id)
        if run.info.status not in RUN_TERMINAL:
            ended = attempt.ended_at or job.ended_at or time.time()
            client.set_terminated(run_id, run_status(attempt), end_time=int(ended * 1000))
            report.ended_runs += 1


def _create_run(client: Any, job: JobRun, attempt: Attempt) -> str:
    tags = {
        TAG_JOB: job.id,
        TAG_ATTEMPT: str(attempt.attempt),
        TAG_ATTEMPTS: str(job.max_retries + 1),
        TAG_RECORDED_LATE: "true",
        "mlflow.source.type": "JOB",
        "mlflow.source.name": job.notebook or job.spec_path or "air run",
    }
    if job.user:
        tags["mlflow.user"] = job.user
    experiment_id = job.experiment_id
    if experiment_id is None:
        experiment = client.get_experiment_by_name(job.experiment_name)
        experiment_id = experiment.experiment_id if experiment is not None else None
    if experiment_id is None:
        from ..tracking.experiments import TRAINING_EXPERIMENT_TAGS

        experiment_id = client.create_experiment(job.experiment_name, tags=TRAINING_EXPERIMENT_TAGS)
    run = client.create_run(
        experiment_id,
        start_time=int(attempt.started_at * 1000),
        tags=tags,
        run_name=job.run_name,
    )
    return str(run.info.run_id)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_air.workloads.reconcile",
        description="End the MLflow runs of ended job runs that MLflow did not record yet.",
    )
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--budget", type=float, default=60.0, help="seconds at most")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stderr)
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    bound_mlflow_calls()
    report = reconcile(JobStore.for_data_dir(args.data_dir), budget_s=args.budget)
    print(report, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
