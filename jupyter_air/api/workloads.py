"""Job runs as the REST API (``air/api/workloads``) and ``air … --output json`` answer them:
the job run, its attempts (each with its MLflow run and links) and their node processes, and a
page of job runs. Built from the job store by ``workloads/views.py``."""

from __future__ import annotations

from typing import Annotated

from pydantic import Field

from .base import ApiModel
from .enums import JobStatus

UnixTime = Annotated[float, Field(description="unix seconds")]


class Compute(ApiModel):
    """What each attempt asked for: ``num_nodes`` nodes with ``num_accelerators`` each."""

    num_accelerators: int = 1
    accelerator_type: str = "GPU"
    num_nodes: int = 1
    backend: str | None = Field(
        None, description="'local' or 'ray' as the YAML said; null: chosen at submission"
    )


class JobNode(ApiModel):
    """One node's process of an attempt."""

    node: int
    pid: int | None = Field(None, description="the node's process (on its host)")
    gpus: str | None = Field(None, description="the CUDA_VISIBLE_DEVICES it got")
    exit_code: int | None = None
    signal: int | None = Field(None, description="the signal that ended it")
    host: str | None = None
    machine: str | None = Field(None, description="the backend's name for it (a Ray node id)")


class RunLinks(ApiModel):
    """Links into the MLflow UI: absolute paths on this server (``/…/air/mlflow/#/…``) or URLs
    of the user's own MLflow; null when no UI is known."""

    run: str | None = None
    system_metrics: str | None = None
    experiment: str | None = None


class CheckpointRestored(ApiModel):
    """The checkpoint an attempt started from: what was put back on its nodes."""

    attempt: int | None = Field(None, description="the attempt that saved it")
    run_id: str | None = Field(None, description="that attempt's MLflow run")
    saved_at: UnixTime | None = None
    bytes: int = 0
    files: int = 0


class CheckpointSaved(ApiModel):
    """What an attempt brought home from its nodes' checkpoint folders."""

    bytes: int = 0
    files: int = 0
    at: UnixTime | None = Field(None, description="when the last file came home")
    error: str | None = None


class AttemptCheckpoint(ApiModel):
    """An attempt's checkpoint (docs/checkpoints.md) and torch elastic's restarts in it."""

    restored: CheckpointRestored | None = None
    saved: CheckpointSaved | None = None
    restarts: int | None = Field(None, description="null while the attempt runs")


class JobAttempt(ApiModel):
    """One attempt of a job run (the first, or a retry), with its MLflow run."""

    attempt: int = Field(description="1 for the first, 2 for the first retry, …")
    status: JobStatus
    reason: str | None = None
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    mlflow_run_id: str | None = Field(
        None, description="null while MLflow did not answer (created later)"
    )
    started_at: UnixTime
    ended_at: UnixTime | None = None
    duration_s: float | None = Field(None, description="so far, while it runs")
    backend: str = Field("local", description="'local' or 'ray'")
    nodes: list[JobNode] = []
    links: RunLinks = RunLinks()
    checkpoint: AttemptCheckpoint | None = None


class JobLinks(ApiModel):
    """The job run's page in JupyterLab (``…/lab?air-workload=<id>``) and its experiment in the
    MLflow UI; null when no Jupyter server or UI is known."""

    job: str | None = None
    experiment: str | None = None


class JobWarning(ApiModel):
    """Something that went wrong around the job run (MLflow unreachable, …)."""

    t: UnixTime
    message: str


class JobCode(ApiModel):
    """The code the job run runs: a snapshot of its working folder taken at submission, or the
    folder itself (live), and its git commit when the folder is in a git repository."""

    source: str = Field(description="'snapshot' or 'live'")
    folder: str = Field(description="the working_dir submitted")
    path: str | None = Field(None, description="the snapshot, in the job's folder")
    files: int | None = Field(None, description="files in the snapshot")
    bytes: int | None = Field(None, description="their size")
    git: bool = Field(False, description="the folder is in a git repository")
    git_commit: str | None = Field(None, description="its HEAD at submission")
    git_dirty: bool | None = Field(
        None, description="the folder had changes not committed (untracked files too)"
    )


class JobQueue(ApiModel):
    """Where a QUEUED job run stands in its cluster's queue (first come, first served across
    every Jupyter server and shell that submits to the cluster)."""

    position: int = Field(description="1: next to start, once what it needs is free")
    total: int = Field(description="job runs waiting in this cluster's queue")
    ahead: list[str] = Field([], description="the first job runs ahead of it (ids)")
    reason: str = Field(description="why it waits, for people")
    since: UnixTime = Field(description="its place in line: when it was submitted")
    cluster: str | None = Field(None, description="the cluster's address")


class Job(ApiModel):
    """A job run: one submission of a workload, with every attempt."""

    id: str = Field(description="12 hexadecimal digits")
    status: JobStatus
    reason: str | None = Field(None, description="why it ended")
    queue: JobQueue | None = Field(None, description="while QUEUED: its place in line and why")
    finished: bool = Field(description="the status is SUCCEEDED, FAILED or CANCELLED")
    experiment_name: str
    experiment_id: str | None = None
    run_name: str
    command: str
    compute: Compute
    backend: str = Field("local", description="'local' or 'ray'")
    cluster: str | None = Field(None, description="the Ray cluster's address")
    gpus: list[list[int]] = Field([], description="per node, the GPU indices it gets")
    max_retries: int
    timeout_minutes: float | None = Field(None, description="per attempt")
    working_dir: str | None = None
    code: JobCode | None = Field(None, description="null for job runs submitted before snapshots")
    spec_path: str | None = Field(None, description="the workload YAML submitted")
    source: str | None = Field(None, description="'cli', 'magic', …")
    notebook: str | None = None
    user: str | None = None
    schedule_id: str | None = Field(None, description="the schedule that fired it (air schedule)")
    schedule_name: str | None = None
    submitted_at: UnixTime
    started_at: UnixTime | None = None
    ended_at: UnixTime | None = None
    duration_s: float | None = Field(None, description="so far, while it runs")
    cancel_requested: bool = Field(description="a cancellation was asked (it may be under way)")
    logs_purged: bool = Field(description="the logs were removed by the retention policy")
    supervisor_seen_at: UnixTime | None = Field(
        None, description="the last heartbeat of the job's supervisor (every few seconds)"
    )
    supervisor_silent_s: float | None = Field(
        None,
        description="while the job run is active and its supervisor has not been seen for "
        "longer than it should (stale): for how long, in seconds; else null",
    )
    warnings: list[JobWarning] = []
    attempts: list[JobAttempt] = []
    links: JobLinks = JobLinks()


class JobDetail(Job):
    """``GET air/api/workloads/{id}``: a job run with the workload YAML as submitted."""

    spec_yaml: str | None = Field(None, description="null for a cell run by %%air_run")


class WorkloadsPage(ApiModel):
    """``GET air/api/workloads``: a page of job runs, newest first."""

    workloads: list[Job]
    total: int = Field(description="job runs matching the filters, on every page")
    limit: int
    offset: int
