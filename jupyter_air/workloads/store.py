"""The job store: job runs, their attempts and node processes, and the index of their log files,
in SQLite under ``<data>/workloads/jobs.db``.

WAL mode with a busy timeout: the supervisors of several jobs, the CLI, kernels and the Jupyter
server read and write it at once, and it outlives all of them. Every write is one short
``BEGIN IMMEDIATE`` transaction; every call opens its own connection, so a ``JobStore`` can be
shared by threads (the server calls it from its executor). The schema is versioned with
``PRAGMA user_version`` and migrated forward on open.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from ..api.enums import JOB_ACTIVE, JOB_TERMINAL, JobStatus
from .paths import check_job_id, store_path

SCHEMA_VERSION = 7

# the statuses of a job run (api/enums.py), by the names the workloads code uses
PENDING, RUNNING, SUCCEEDED, FAILED, CANCELLED = JobStatus
JOB_STATUSES = tuple(JobStatus)
TERMINAL = JOB_TERMINAL
ACTIVE = JOB_ACTIVE

_SCHEMA = [
    """CREATE TABLE jobs (
        id TEXT PRIMARY KEY,
        status TEXT NOT NULL,
        reason TEXT,
        experiment_name TEXT NOT NULL,
        experiment_id TEXT,
        run_name TEXT NOT NULL,
        command TEXT NOT NULL,
        compute TEXT NOT NULL,            -- JSON: num_accelerators, accelerator_type, num_nodes
        gpus TEXT NOT NULL DEFAULT '[]',  -- JSON: per node, the GPU indices it gets
        max_retries INTEGER NOT NULL,
        timeout_minutes REAL,
        working_dir TEXT,
        spec TEXT NOT NULL,               -- JSON of the validated spec
        spec_yaml TEXT,                   -- the file as submitted
        spec_path TEXT,
        source TEXT,                      -- 'cli', 'magic', ...
        notebook TEXT,
        user TEXT,
        tracking_uri TEXT,
        server_url TEXT,                  -- the Jupyter server it was submitted through
        mlflow_ui TEXT,
        submitted_at REAL NOT NULL,
        started_at REAL,
        ended_at REAL,
        supervisor_pid INTEGER,
        supervisor_started REAL,          -- the supervisor's process creation time
        cancel_requested REAL,
        logs_purged_at REAL
    )""",
    "CREATE INDEX jobs_submitted ON jobs (submitted_at DESC)",
    "CREATE INDEX jobs_status ON jobs (status, submitted_at DESC)",
    "CREATE INDEX jobs_experiment ON jobs (experiment_name, submitted_at DESC)",
    """CREATE TABLE attempts (
        job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
        attempt INTEGER NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        exit_code INTEGER,
        signal INTEGER,
        timed_out INTEGER NOT NULL DEFAULT 0,
        mlflow_run_id TEXT,
        started_at REAL NOT NULL,
        ended_at REAL,
        PRIMARY KEY (job_id, attempt)
    )""",
    """CREATE TABLE nodes (
        job_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        node INTEGER NOT NULL,
        pid INTEGER,
        started REAL,                     -- process creation time
        gpus TEXT,                        -- CUDA_VISIBLE_DEVICES it got
        exit_code INTEGER,
        signal INTEGER,
        ended_at REAL,
        PRIMARY KEY (job_id, attempt, node),
        FOREIGN KEY (job_id, attempt) REFERENCES attempts (job_id, attempt) ON DELETE CASCADE
    )""",
    """CREATE TABLE log_files (
        job_id TEXT NOT NULL,
        attempt INTEGER NOT NULL,
        node INTEGER NOT NULL,
        path TEXT NOT NULL,
        bytes INTEGER NOT NULL DEFAULT 0,
        lines INTEGER NOT NULL DEFAULT 0,
        errors INTEGER NOT NULL DEFAULT 0,
        warnings INTEGER NOT NULL DEFAULT 0,
        first_t TEXT,
        last_t TEXT,
        updated_at REAL,
        uploaded_at REAL,
        complete INTEGER NOT NULL DEFAULT 0,  -- the writer closed it: no more lines will come
        PRIMARY KEY (job_id, attempt, node),
        FOREIGN KEY (job_id) REFERENCES jobs (id) ON DELETE CASCADE
    )""",
]

# SCHEMA_MIGRATIONS[n] takes a store from version n to n + 1 (a new store gets _SCHEMA, then
# every migration from version 1)
SCHEMA_MIGRATIONS: dict[int, list[str]] = {
    1: [
        # 'embedded' (the data folder's own MLflow server) or 'external'
        "ALTER TABLE jobs ADD COLUMN tracking TEXT",
        # JSON list of {t, message}: what went wrong around the job (MLflow unreachable, …)
        "ALTER TABLE jobs ADD COLUMN warnings TEXT NOT NULL DEFAULT '[]'",
        # when every MLflow run of the ended job was seen ended (and its logs uploaded)
        "ALTER TABLE jobs ADD COLUMN runs_closed_at REAL",
        "CREATE INDEX jobs_runs_open ON jobs (runs_closed_at, ended_at)",
    ],
    2: [
        # where the nodes ran: 'local' or 'ray', and the cluster's address
        "ALTER TABLE jobs ADD COLUMN backend TEXT",
        "ALTER TABLE jobs ADD COLUMN cluster TEXT",
        "ALTER TABLE attempts ADD COLUMN backend TEXT",
        "ALTER TABLE attempts ADD COLUMN hosts TEXT",  # per node, comma-separated
        "ALTER TABLE nodes ADD COLUMN host TEXT",
        "ALTER TABLE nodes ADD COLUMN machine TEXT",  # the backend's name for it (Ray node id)
    ],
    3: [
        # the supervisor's heartbeat (workloads/heartbeat.py): reads tell a stale job run
        # from the times alone
        "ALTER TABLE jobs ADD COLUMN supervisor_seen_at REAL",
    ],
    4: [
        # air run --idempotency-key: the same key twice is the same job run (NULLs differ)
        "ALTER TABLE jobs ADD COLUMN idempotency_key TEXT",
        "CREATE UNIQUE INDEX jobs_idempotency_key ON jobs (idempotency_key)",
    ],
    5: [
        # air schedule: workloads run on a cron schedule by the Jupyter server
        """CREATE TABLE schedules (
            id TEXT PRIMARY KEY,
            name TEXT NOT NULL UNIQUE,
            cron TEXT NOT NULL,
            timezone TEXT NOT NULL,
            overlap TEXT NOT NULL DEFAULT 'skip',     -- skip | queue | allow
            catch_up TEXT NOT NULL DEFAULT 'latest',  -- latest | none
            paused INTEGER NOT NULL DEFAULT 0,
            spec_yaml TEXT NOT NULL,                  -- the workload file as submitted
            spec_path TEXT,
            user TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL,
            last_slot INTEGER,                        -- the latest slot fired or passed
            queued_slot INTEGER                       -- overlap queue: the slot waiting
        )""",
        # one row per slot: the unique key is what makes two servers fire a slot once
        # (a trigger's slot is NULL: NULLs differ)
        """CREATE TABLE schedule_firings (
            schedule_id TEXT NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
            slot INTEGER,
            fired_at REAL NOT NULL,
            outcome TEXT NOT NULL,                    -- submitted | skipped | queued | failed
            job_id TEXT,
            reason TEXT,
            UNIQUE (schedule_id, slot)
        )""",
        "CREATE INDEX schedule_firings_time ON schedule_firings (schedule_id, fired_at DESC)",
        "ALTER TABLE jobs ADD COLUMN schedule_id TEXT",
        "ALTER TABLE jobs ADD COLUMN schedule_name TEXT",
        "CREATE INDEX jobs_schedule ON jobs (schedule_id, submitted_at DESC)",
    ],
    6: [
        # the MLflow run page's logs (air/api/runs/{run}/logs): from a run to its attempt
        "CREATE INDEX attempts_mlflow_run ON attempts (mlflow_run_id)",
    ],
}
MAX_WARNINGS = 50


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


class JobStore:
    """The job store of one data folder (created on first use)."""

    def __init__(self, path: str | Path, *, timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        self._ready = False

    @classmethod
    def for_data_dir(cls, data: str | Path) -> JobStore:
        return cls(store_path(Path(data)))

    @property
    def data_dir(self) -> Path:
        """The data folder this store belongs to (``<data>/workloads/jobs.db``)."""
        return self.path.parent.parent

    # connection ----------------------------------------------------------------------------
    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        if not self._ready:
            self._open()
        conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
        try:
            conn.row_factory = sqlite3.Row
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA synchronous = NORMAL")
            yield conn
        finally:
            conn.close()

    @contextlib.contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

    def _open(self) -> None:
        from ..private import create_private, private_folder, secure_data_dir

        if self.path == store_path(self.data_dir):  # a data folder's (not a file of a test's)
            secure_data_dir(self.data_dir)
        private_folder(self.path.parent)
        create_private(self.path)  # SQLite gives its -wal and -shm files the same mode
        conn = sqlite3.connect(self.path, timeout=self.timeout_s, isolation_level=None)
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if str(mode).lower() != "wal":
                raise StoreError(f"the job store {self.path} cannot use WAL mode (got {mode})")
            conn.execute("BEGIN IMMEDIATE")
            try:
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise StoreError(
                        f"the job store {self.path} was written by a newer jupyter-air (schema "
                        f"{version}, this one knows {SCHEMA_VERSION}): upgrade jupyter-air"
                    )
                if version == 0:
                    for statement in _SCHEMA:
                        conn.execute(statement)
                    version = 1
                for step in range(version, SCHEMA_VERSION):
                    for statement in SCHEMA_MIGRATIONS[step]:
                        conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
        finally:
            conn.close()
        self._ready = True

    def schema_version(self) -> int:
        with self._connect() as conn:
            return int(conn.execute("PRAGMA user_version").fetchone()[0])

    # jobs ----------------------------------------------------------------------------------
    def create_job(self, **fields: Any) -> JobRun:
        """Insert a job run (status PENDING). ``fields``: the columns of ``jobs``. Raises
        AlreadySubmitted when its ``idempotency_key`` is another job run's."""
        job_id = check_job_id(fields["id"])
        row = {"status": PENDING, "submitted_at": time.time(), **fields}
        for name in _JOB_JSON:
            if name in row and not isinstance(row[name], str):
                row[name] = json.dumps(row[name])
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        try:
            with self._write() as conn:
                conn.execute(f"INSERT INTO jobs ({columns}) VALUES ({marks})", row)
        except sqlite3.IntegrityError:
            existing = self.job_by_idempotency_key(fields.get("idempotency_key"))
            if existing is None or existing.id == job_id:
                raise
            raise AlreadySubmitted(existing) from None
        return self.get_job(job_id)

    def job_by_idempotency_key(self, key: str | None) -> JobRun | None:
        if not key:
            return None
        with self._connect() as conn:
            row = conn.execute("SELECT id FROM jobs WHERE idempotency_key = ?", (key,)).fetchone()
        return self.get_job(row["id"]) if row else None

    def get_job(self, job_id: str, *, with_attempts: bool = True) -> JobRun:
        check_job_id(job_id)
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                raise JobNotFound(job_id)
            job = _job(row)
            if with_attempts:
                job.attempts = self._attempts(conn, [job_id]).get(job_id, [])
        return job

    def resolve_id(self, text: str) -> str:
        """A job id from what a person typed: the id, or a unique prefix of it (≥ 4 digits)."""
        text = (text or "").strip().lower()
        if len(text) == 12:
            check_job_id(text)
            with self._connect() as conn:
                if conn.execute("SELECT 1 FROM jobs WHERE id = ?", (text,)).fetchone():
                    return text
            raise JobNotFound(text)
        if len(text) < 4 or not all(c in "0123456789abcdef" for c in text):
            raise JobNotFound(text, f"{text!r} is not a job run id (12 hexadecimal digits)")
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT id FROM jobs WHERE id >= ? AND id < ? LIMIT 2", (text, text + "g")
            ).fetchall()
        if not rows:
            raise JobNotFound(text)
        if len(rows) > 1:
            raise JobNotFound(text, f"{text!r} matches several job runs: give more digits")
        return rows[0]["id"]

    def list_jobs(
        self,
        *,
        status: str | Iterable[str] | None = None,
        experiment: str | None = None,
        limit: int = 50,
        offset: int = 0,
        with_attempts: bool = True,
        **more: Any,
    ) -> list[JobRun]:
        """Job runs, newest first; ``status``: one or several statuses; ``more``: the
        filters of ``JobFilter`` (experiment glob, user, compute)."""
        where, args = _job_filter(status, experiment, JobFilter(**more))
        sql = "SELECT * FROM jobs" + where + " ORDER BY submitted_at DESC, id LIMIT ? OFFSET ?"
        args.extend([max(0, int(limit)), max(0, int(offset))])
        with self._connect() as conn:
            jobs = [_job(row) for row in conn.execute(sql, args)]
            if with_attempts and jobs:
                attempts = self._attempts(conn, [j.id for j in jobs])
                for job in jobs:
                    job.attempts = attempts.get(job.id, [])
        return jobs

    def count_jobs(
        self,
        *,
        status: str | Iterable[str] | None = None,
        experiment: str | None = None,
        **more: Any,
    ) -> int:
        where, args = _job_filter(status, experiment, JobFilter(**more))
        sql = "SELECT COUNT(*) FROM jobs" + where
        with self._connect() as conn:
            return int(conn.execute(sql, args).fetchone()[0])

    def update_job(self, job_id: str, **fields: Any) -> None:
        if not fields:
            return
        for name in _JOB_JSON:
            if name in fields and not isinstance(fields[name], str):
                fields[name] = json.dumps(fields[name])
        sets = ", ".join(f"{name} = :{name}" for name in fields)
        with self._write() as conn:
            conn.execute(f"UPDATE jobs SET {sets} WHERE id = :_id", {**fields, "_id": job_id})

    def set_supervisor(self, job_id: str, pid: int, started: float | None) -> None:
        self.update_job(job_id, supervisor_pid=pid, supervisor_started=started)

    def mark_running(self, job_id: str) -> bool:
        """PENDING → RUNNING; False when the job is no longer pending (cancelled meanwhile)."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE jobs SET status = ?, started_at = ? WHERE id = ? AND status = ?",
                (RUNNING, time.time(), job_id, PENDING),
            )
            return cursor.rowcount == 1

    def finish_job(self, job_id: str, status: str, reason: str | None) -> bool:
        """End a job run (once: False when it had already ended)."""
        if status not in TERMINAL:
            raise ValueError(f"a job run ends {sorted(TERMINAL)}, not {status!r}")
        with self._write() as conn:
            cursor = conn.execute(
                f"UPDATE jobs SET status = ?, reason = ?, ended_at = ? WHERE id = ? "
                f"AND status NOT IN ({', '.join('?' * len(TERMINAL))})",
                (status, reason, time.time(), job_id, *sorted(TERMINAL)),
            )
            return cursor.rowcount == 1

    def add_warning(self, job_id: str, message: str) -> None:
        """Record something that went wrong around the job run (shown with it); the same
        message twice in a row is kept once, and only the last MAX_WARNINGS are kept."""
        with self._write() as conn:
            row = conn.execute("SELECT warnings FROM jobs WHERE id = ?", (job_id,)).fetchone()
            if row is None:
                return
            warnings = json.loads(row[0] or "[]")
            if warnings and warnings[-1].get("message") == message:
                return
            warnings = [*warnings, {"t": time.time(), "message": message}][-MAX_WARNINGS:]
            conn.execute(
                "UPDATE jobs SET warnings = ? WHERE id = ?", (json.dumps(warnings), job_id)
            )

    def jobs_with_open_runs(self, limit: int = 100) -> list[str]:
        """Ended job runs whose MLflow runs were not all seen ended yet, oldest first."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT id FROM jobs WHERE ended_at IS NOT NULL AND runs_closed_at IS NULL "
                "ORDER BY ended_at LIMIT ?",
                (limit,),
            ).fetchall()
        return [row["id"] for row in rows]

    def request_cancel(self, job_id: str) -> JobRun:
        with self._write() as conn:
            conn.execute(
                "UPDATE jobs SET cancel_requested = COALESCE(cancel_requested, ?) WHERE id = ?",
                (time.time(), job_id),
            )
        return self.get_job(job_id)

    def cancel_requested(self, job_id: str) -> bool:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT cancel_requested FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
        return bool(row and row[0])

    def delete_job(self, job_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM nodes WHERE job_id = ?", (job_id,))
            conn.execute("DELETE FROM jobs WHERE id = ?", (job_id,))

    # schedules -------------------------------------------------------------------------------
    def create_schedule(self, *, most: int | None = None, **fields: Any) -> Schedule:
        """Insert a schedule (``fields``: the columns of ``schedules``); raises ScheduleExists
        when its name is taken, TooManySchedules when ``most`` are there already."""
        now = time.time()
        row = {"created_at": now, "updated_at": now, **fields}
        row["paused"] = int(bool(row.get("paused", False)))
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        try:
            with self._write() as conn:
                if most is not None:
                    (count,) = conn.execute("SELECT COUNT(*) FROM schedules").fetchone()
                    if count >= most:
                        raise TooManySchedules(f"{count} schedules")
                conn.execute(f"INSERT INTO schedules ({columns}) VALUES ({marks})", row)
        except sqlite3.IntegrityError:
            raise ScheduleExists(str(fields["name"])) from None
        return self.get_schedule(str(fields["id"]))

    def get_schedule(self, text: str) -> Schedule:
        """A schedule by its id, else by its name."""
        with self._connect() as conn:
            row = conn.execute("SELECT * FROM schedules WHERE id = ?", (text,)).fetchone()
            if row is None:
                row = conn.execute("SELECT * FROM schedules WHERE name = ?", (text,)).fetchone()
        if row is None:
            raise ScheduleNotFound(text)
        return _schedule(row)

    def list_schedules(self, *, paused: bool | None = None, limit: int = 1000) -> list[Schedule]:
        """Schedules by name; ``paused``: only paused (True) or only active (False) ones."""
        sql, args = "SELECT * FROM schedules", [max(0, int(limit))]
        if paused is not None:
            sql += f" WHERE paused = {int(paused)}"
        with self._connect() as conn:
            return [_schedule(row) for row in conn.execute(sql + " ORDER BY name LIMIT ?", args)]

    def set_schedule_paused(self, schedule_id: str, paused: bool) -> Schedule:
        with self._write() as conn:
            conn.execute(
                "UPDATE schedules SET paused = ?, updated_at = ? WHERE id = ?",
                (int(paused), time.time(), schedule_id),
            )
        return self.get_schedule(schedule_id)

    def delete_schedule(self, schedule_id: str) -> None:
        """Remove a schedule and its firings; its job runs stay (with its id and name)."""
        with self._write() as conn:
            conn.execute("DELETE FROM schedule_firings WHERE schedule_id = ?", (schedule_id,))
            conn.execute("DELETE FROM schedules WHERE id = ?", (schedule_id,))

    def claim_firing(
        self, schedule_id: str, slot: int | None, outcome: str, *, queue: bool = False
    ) -> int | None:
        """Record that the schedule fires ``slot`` (its firing row first, in one transaction):
        the firing's id when this call inserted it, None when the slot was fired already (by
        another server on this data folder) or the schedule is gone or paused meanwhile.
        ``queue``: the slot waits for the previous run (overlap queue)."""
        with self._write() as conn:
            row = conn.execute(
                "SELECT paused FROM schedules WHERE id = ?", (schedule_id,)
            ).fetchone()
            if row is None or (row["paused"] and slot is not None):
                return None
            cursor = conn.execute(
                "INSERT OR IGNORE INTO schedule_firings (schedule_id, slot, fired_at, outcome) "
                "VALUES (?, ?, ?, ?)",
                (schedule_id, slot, time.time(), outcome),
            )
            if cursor.rowcount != 1:
                return None
            if slot is not None:
                self._pass_slot(conn, schedule_id, slot)
            if queue:
                conn.execute(
                    "UPDATE schedules SET queued_slot = ? WHERE id = ?", (slot, schedule_id)
                )
            return cursor.lastrowid

    def pass_slot(self, schedule_id: str, slot: int) -> None:
        """A slot not fired (catch_up none): the schedule goes on from after it."""
        with self._write() as conn:
            self._pass_slot(conn, schedule_id, slot)

    @staticmethod
    def _pass_slot(conn: sqlite3.Connection, schedule_id: str, slot: int) -> None:
        conn.execute(
            "UPDATE schedules SET last_slot = MAX(COALESCE(last_slot, ?), ?) WHERE id = ?",
            (slot, slot, schedule_id),
        )

    def take_queued(self, schedule_id: str, slot: int) -> bool:
        """Take the queued slot to fire it (once: False when another server took it)."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE schedules SET queued_slot = NULL WHERE id = ? AND queued_slot = ?",
                (schedule_id, slot),
            )
            return cursor.rowcount == 1

    def record_firing(
        self,
        firing_id: int,
        outcome: str,
        *,
        job_id: str | None = None,
        reason: str | None = None,
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE schedule_firings SET outcome = ?, job_id = ?, reason = ? WHERE rowid = ?",
                (outcome, job_id, reason, firing_id),
            )

    def firing_for_slot(self, schedule_id: str, slot: int) -> Firing | None:
        with self._connect() as conn:
            row = conn.execute(
                "SELECT rowid AS id, * FROM schedule_firings WHERE schedule_id = ? AND slot = ?",
                (schedule_id, slot),
            ).fetchone()
        return Firing(**dict(row)) if row else None

    def firings(self, schedule_id: str, limit: int = 20) -> list[Firing]:
        """The schedule's latest firings, newest first."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT rowid AS id, * FROM schedule_firings WHERE schedule_id = ? "
                "ORDER BY fired_at DESC, rowid DESC LIMIT ?",
                (schedule_id, max(0, int(limit))),
            ).fetchall()
        return [Firing(**dict(row)) for row in rows]

    # attempts and nodes ----------------------------------------------------------------------
    def start_attempt(self, job_id: str, attempt: int, mlflow_run_id: str | None = None) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT INTO attempts (job_id, attempt, status, mlflow_run_id, started_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (job_id, attempt, RUNNING, mlflow_run_id, time.time()),
            )

    def update_attempt(self, job_id: str, attempt: int, **fields: Any) -> None:
        if not fields:
            return
        sets = ", ".join(f"{name} = :{name}" for name in fields)
        with self._write() as conn:
            conn.execute(
                f"UPDATE attempts SET {sets} WHERE job_id = :_id AND attempt = :_attempt",
                {**fields, "_id": job_id, "_attempt": attempt},
            )

    def attempt_of_run(self, run_id: str) -> tuple[str, int] | None:
        """The job run and attempt whose MLflow run is ``run_id``, if one is."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT job_id, attempt FROM attempts WHERE mlflow_run_id = ?", (run_id,)
            ).fetchone()
        return (row["job_id"], int(row["attempt"])) if row else None

    def finish_attempt(
        self,
        job_id: str,
        attempt: int,
        status: str,
        reason: str | None,
        *,
        exit_code: int | None = None,
        signal: int | None = None,
        timed_out: bool = False,
    ) -> None:
        self.update_attempt(
            job_id,
            attempt,
            status=status,
            reason=reason,
            exit_code=exit_code,
            signal=signal,
            timed_out=int(timed_out),
            ended_at=time.time(),
        )

    def set_node(
        self,
        job_id: str,
        attempt: int,
        node: int,
        *,
        pid: int | None,
        started: float | None,
        gpus: str | None,
        host: str | None = None,
        machine: str | None = None,
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR REPLACE INTO nodes (job_id, attempt, node, pid, started, gpus, host, "
                "machine) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, attempt, node, pid, started, gpus, host, machine),
            )

    def finish_node(
        self, job_id: str, attempt: int, node: int, exit_code: int | None, signal: int | None
    ) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE nodes SET exit_code = ?, signal = ?, ended_at = ? "
                "WHERE job_id = ? AND attempt = ? AND node = ?",
                (exit_code, signal, time.time(), job_id, attempt, node),
            )

    def _attempts(self, conn: sqlite3.Connection, ids: list[str]) -> dict[str, list[Attempt]]:
        marks = ", ".join("?" * len(ids))
        out: dict[str, list[Attempt]] = {}
        nodes: dict[tuple[str, int], list[NodeProcess]] = {}
        for row in conn.execute(
            f"SELECT * FROM nodes WHERE job_id IN ({marks}) ORDER BY node", ids
        ):
            nodes.setdefault((row["job_id"], row["attempt"]), []).append(
                NodeProcess(
                    node=row["node"],
                    pid=row["pid"],
                    started=row["started"],
                    gpus=row["gpus"],
                    exit_code=row["exit_code"],
                    signal=row["signal"],
                    ended_at=row["ended_at"],
                    host=row["host"],
                    machine=row["machine"],
                )
            )
        for row in conn.execute(
            f"SELECT * FROM attempts WHERE job_id IN ({marks}) ORDER BY attempt", ids
        ):
            key = (row["job_id"], row["attempt"])
            out.setdefault(row["job_id"], []).append(
                Attempt(
                    job_id=row["job_id"],
                    attempt=row["attempt"],
                    status=row["status"],
                    reason=row["reason"],
                    exit_code=row["exit_code"],
                    signal=row["signal"],
                    timed_out=bool(row["timed_out"]),
                    mlflow_run_id=row["mlflow_run_id"],
                    started_at=row["started_at"],
                    ended_at=row["ended_at"],
                    backend=row["backend"],
                    hosts=row["hosts"],
                    nodes=nodes.get(key, []),
                )
            )
        return out

    # the log index -------------------------------------------------------------------------
    def index_log_file(self, job_id: str, attempt: int, node: int, path: str, **stats: Any) -> None:
        """Create or update the index row of one log file (``stats``: bytes, lines, errors,
        warnings, first_t, last_t, uploaded_at, complete)."""
        row = {"job_id": job_id, "attempt": attempt, "node": node, "path": path}
        row.update(stats)
        row["updated_at"] = time.time()
        columns = ", ".join(row)
        marks = ", ".join(f":{name}" for name in row)
        updates = ", ".join(f"{name} = excluded.{name}" for name in row if name not in _LOG_KEY)
        with self._write() as conn:
            conn.execute(
                f"INSERT INTO log_files ({columns}) VALUES ({marks}) "
                f"ON CONFLICT (job_id, attempt, node) DO UPDATE SET {updates}",
                row,
            )

    def log_files(self, job_id: str, attempt: int | None = None) -> list[LogFile]:
        sql = "SELECT * FROM log_files WHERE job_id = ?"
        args: list[str | int] = [job_id]
        if attempt is not None:
            sql += " AND attempt = ?"
            args.append(attempt)
        sql += " ORDER BY attempt, node"
        with self._connect() as conn:
            return [_log_file(row) for row in conn.execute(sql, args)]

    def purgeable_jobs(self, ended_before: float) -> list[str]:
        """Ended job runs whose logs are older than ``ended_before`` and not purged yet."""
        with self._connect() as conn:
            rows = conn.execute(
                "SELECT id FROM jobs WHERE ended_at IS NOT NULL AND ended_at < ? "
                "AND logs_purged_at IS NULL ORDER BY ended_at",
                (ended_before,),
            ).fetchall()
        return [row["id"] for row in rows]

    def mark_logs_purged(self, job_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM log_files WHERE job_id = ?", (job_id,))
            conn.execute("UPDATE jobs SET logs_purged_at = ? WHERE id = ?", (time.time(), job_id))


_LOG_KEY = frozenset({"job_id", "attempt", "node"})


@dataclass(frozen=True)
class JobFilter:
    """What ``air list runs --filter`` selects by, besides the status and the experiment."""

    experiment_glob: str | None = None  # * ? [...] as a shell matches, case-sensitive
    user: str | None = None
    accelerator_type: str | None = None  # any case
    num_accelerators: int | None = None  # per node
    schedule: str | None = None  # a schedule's id or name


def _job_filter(
    status: str | Iterable[str] | None, experiment: str | None, more: JobFilter | None = None
) -> tuple[str, list[str | int]]:
    """The ``WHERE`` clause (empty, or starting with a space) and its arguments for job runs of
    ``status`` (one or several), ``experiment`` and ``more``."""
    where: list[str] = []
    args: list[str | int] = []
    more = more or JobFilter()
    clauses: tuple[tuple[str | int | None, str], ...] = (
        (more.experiment_glob, "experiment_name GLOB ?"),
        (more.user, "user = ?"),
        (more.accelerator_type, "UPPER(json_extract(compute, '$.accelerator_type')) = UPPER(?)"),
        (more.num_accelerators, "json_extract(compute, '$.num_accelerators') = ?"),
    )
    for value, clause in clauses:
        if value is not None:
            where.append(clause)
            args.append(value)
    if more.schedule is not None:
        where.append("(schedule_id = ? OR schedule_name = ?)")
        args.extend([more.schedule, more.schedule])
    if status:
        statuses = [status] if isinstance(status, str) else list(status)
        where.append(f"status IN ({', '.join('?' * len(statuses))})")
        args.extend(statuses)
    if experiment:
        where.append("experiment_name = ?")
        args.append(experiment)
    return (" WHERE " + " AND ".join(where) if where else ""), args


def _job(row: sqlite3.Row) -> JobRun:
    data = dict(row)
    for name in _JOB_JSON:
        empty: Any = [] if name in ("gpus", "warnings") else {}
        data[name] = json.loads(data[name]) if data.get(name) else empty
    return JobRun(**data)


def _schedule(row: sqlite3.Row) -> Schedule:
    data = dict(row)
    data["paused"] = bool(data["paused"])
    return Schedule(**data)


def _log_file(row: sqlite3.Row) -> LogFile:
    data = dict(row)
    data["complete"] = bool(data["complete"])
    return LogFile(**data)
