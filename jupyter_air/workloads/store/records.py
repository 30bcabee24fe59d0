"""What the job store returns: job runs with their attempts and nodes, log files, schedules
and their firings, the statuses, the store's errors, and how a row becomes each of them.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass, field, fields
from typing import Any

from ...api.enums import JOB_ACTIVE, JOB_TERMINAL, JobStatus

# the statuses of a job run (api/enums.py), by the names the workloads code uses
PENDING, QUEUED, RUNNING, SUCCEEDED, FAILED, CANCELLED = JobStatus
JOB_STATUSES = tuple(JobStatus)
TERMINAL = JOB_TERMINAL
ACTIVE = JOB_ACTIVE


class StoreError(RuntimeError):
    pass


class AlreadySubmitted(Exception):
    """A job run with this idempotency key exists: ``job`` (the unique index decided)."""

    def __init__(self, job: JobRun) -> None:
        super().__init__(f"job run {job.id} was already submitted with this idempotency key")
        self.job = job


class ScheduleNotFound(LookupError):
    def __init__(self, text: str) -> None:
        super().__init__(f"No schedule {text!r} in the job store (give its id or its name)")
        self.text = text


class ScheduleExists(StoreError):
    def __init__(self, name: str) -> None:
        super().__init__(f"a schedule named {name!r} exists already: give another --name")
        self.name = name


class TooManySchedules(StoreError):
    """The data folder holds the most schedules it keeps (checked in the insert's transaction,
    so two writers at the limit cannot both get past it)."""


class JobNotFound(LookupError):
    def __init__(self, job_id: str, detail: str = "") -> None:
        super().__init__(detail or f"No job run {job_id!r} in the job store")
        self.job_id = job_id


@dataclass
class NodeProcess:
    node: int
    pid: int | None
    started: float | None
    gpus: str | None
    exit_code: int | None = None
    signal: int | None = None
    ended_at: float | None = None
    host: str | None = None
    machine: str | None = None


@dataclass
class Attempt:
    job_id: str
    attempt: int
    status: str
    reason: str | None
    exit_code: int | None
    signal: int | None
    timed_out: bool
    mlflow_run_id: str | None
    started_at: float
    ended_at: float | None
    backend: str | None = None
    hosts: str | None = None
    nodes: list[NodeProcess] = field(default_factory=list)
    checkpoint: dict[str, Any] | None = None  # restored, saved, restarts (checkpoints.py)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class LogFile:
    job_id: str
    attempt: int
    node: int
    path: str
    bytes: int
    lines: int
    errors: int
    warnings: int
    first_t: str | None
    last_t: str | None
    updated_at: float | None
    uploaded_at: float | None
    complete: bool

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class JobRun:
    id: str
    status: str
    reason: str | None
    experiment_name: str
    experiment_id: str | None
    run_name: str
    command: str
    compute: dict[str, Any]
    gpus: list[list[int]]
    max_retries: int
    timeout_minutes: float | None
    working_dir: str | None
    spec: dict[str, Any]
    spec_yaml: str | None
    spec_path: str | None
    source: str | None
    notebook: str | None
    user: str | None
    tracking_uri: str | None
    server_url: str | None
    mlflow_ui: str | None
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    supervisor_pid: int | None
    supervisor_started: float | None
    cancel_requested: float | None
    logs_purged_at: float | None
    tracking: str | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)
    runs_closed_at: float | None = None
    backend: str | None = None
    cluster: str | None = None
    supervisor_seen_at: float | None = None
    idempotency_key: str | None = None
    schedule_id: str | None = None
    schedule_name: str | None = None
    # while QUEUED: {position (1: next), ahead, reason, since, cluster} (backends/queue_line.py)
    queue: dict[str, Any] | None = None
    attempts: list[Attempt] = field(default_factory=list)

    @property
    def finished(self) -> bool:
        return self.status in TERMINAL

    @property
    def num_nodes(self) -> int:
        return int(self.compute.get("num_nodes", 1))

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Schedule:
    """A workload run on a cron schedule (``workloads/schedules.py`` fires it)."""

    id: str
    name: str
    cron: str
    timezone: str
    overlap: str  # skip | queue | allow
    catch_up: str  # latest | none
    paused: bool
    spec_yaml: str
    spec_path: str | None
    user: str | None
    created_at: float
    updated_at: float
    last_slot: int | None  # the latest slot fired (or passed, catch_up none)
    queued_slot: int | None  # overlap queue: the slot waiting for the previous run to end

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Firing:
    """What a schedule did for one slot (``slot`` None: ``air schedule trigger``)."""

    id: int
    schedule_id: str
    slot: int | None
    fired_at: float
    outcome: str  # submitted | skipped | queued | failed
    job_id: str | None
    reason: str | None


_JOB_JSON = ("compute", "gpus", "spec", "warnings")


def _job(row: sqlite3.Row) -> JobRun:
    data = dict(row)
    for name in _JOB_JSON:
        empty: Any = [] if name in ("gpus", "warnings") else {}
        data[name] = json.loads(data[name]) if data.get(name) else empty
    data["queue"] = json.loads(data["queue"]) if data.get("queue") else None
    return JobRun(**data)


def _schedule(row: sqlite3.Row) -> Schedule:
    data = dict(row)
    data["paused"] = bool(data["paused"])
    return Schedule(**data)


def _columns(cls: type, row: sqlite3.Row) -> dict[str, Any]:
    """The columns of ``row`` that are fields of the dataclass ``cls``."""
    names = {f.name for f in fields(cls)}
    return {name: value for name, value in dict(row).items() if name in names}


def _node(row: sqlite3.Row) -> NodeProcess:
    return NodeProcess(**_columns(NodeProcess, row))


def _attempt(row: sqlite3.Row, nodes: list[NodeProcess]) -> Attempt:
    data = _columns(Attempt, row)
    data["timed_out"] = bool(data["timed_out"])
    data["checkpoint"] = _json_object(data.get("checkpoint"))
    return Attempt(**data, nodes=nodes)


def _json_object(text: str | None) -> dict[str, Any] | None:
    """A JSON column holding an object; None when empty or not one."""
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _log_file(row: sqlite3.Row) -> LogFile:
    data = dict(row)
    data["complete"] = bool(data["complete"])
    return LogFile(**data)
