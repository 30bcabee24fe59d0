"""The job store's job runs: create, read, list, count, update, end, cancel, delete."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from ..paths import check_job_id
from .attempt_rows import AttemptRows
from .filters import JobFilter, _job_filter
from .records import (
    _JOB_JSON,
    PENDING,
    QUEUED,
    RUNNING,
    TERMINAL,
    AlreadySubmitted,
    JobNotFound,
    JobRun,
    _job,
)

MAX_WARNINGS = 50


@dataclass
class GpuClaim:
    """What ``claim_gpus`` found: the GPUs taken per node (None: wait), the job runs waiting
    ahead for any of them (oldest first), who holds each GPU of the pool that is held, and how
    many others wait for any of them."""

    gpus: list[list[int]] | None
    ahead: list[dict[str, Any]] = field(default_factory=list)
    held: dict[int, str] = field(default_factory=dict)
    waiting: int = 0


class JobRows(AttemptRows):
    """Job runs (with their attempts)."""

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

    def mark_queued(self, job_id: str, queue: dict[str, Any]) -> bool:
        """RUNNING (or QUEUED) → QUEUED with its place in line and why it waits; False when the
        job run has ended meanwhile."""
        with self._write() as conn:
            cursor = conn.execute(
                "UPDATE jobs SET status = ?, queue = ? WHERE id = ? AND status IN (?, ?)",
                (QUEUED, json.dumps(queue), job_id, RUNNING, QUEUED),
            )
            return cursor.rowcount == 1

    def mark_dequeued(self, job_id: str) -> None:
        """QUEUED → RUNNING: its resources are held. The job run counts as started from here
        when it had not run before (its first attempt waited)."""
        with self._write() as conn:
            conn.execute(
                "UPDATE jobs SET status = ?, queue = NULL, started_at = CASE WHEN EXISTS "
                "(SELECT 1 FROM attempts WHERE job_id = jobs.id) THEN started_at ELSE ? END "
                "WHERE id = ? AND status = ?",
                (RUNNING, time.time(), job_id, QUEUED),
            )

    def share_job(self, job_id: str, user: str, *, remove: bool = False) -> bool:
        """Let ``user`` see the job run and read its logs (``remove``: no longer); False when
        nothing changed (already shared, or not shared)."""
        with self._write() as conn:
            if remove:
                cursor = conn.execute(
                    "DELETE FROM job_grants WHERE job_id = ? AND user = ?", (job_id, user)
                )
            else:
                cursor = conn.execute(
                    "INSERT OR IGNORE INTO job_grants (job_id, user, granted_at) VALUES (?, ?, ?)",
                    (job_id, user, time.time()),
                )
            return cursor.rowcount == 1

    def job_shared_with(self, job_id: str) -> list[str]:
        """The users a job run is shared with, in the order they were given it."""
        return self._first_column(
            "SELECT user FROM job_grants WHERE job_id = ? ORDER BY granted_at, user", (job_id,)
        )

    def claim_gpus(self, job_id: str, pool: list[int], nodes: int, per_node: int) -> GpuClaim:
        """Take ``per_node`` GPUs of ``pool`` for each of ``nodes`` nodes, in one transaction:
        only when no job run that waits for any of them was submitted before this one (first
        come, first served) and enough are not held by a RUNNING local job run. Taken: the job
        run is RUNNING with them as its ``gpus``."""
        with self._write() as conn:
            me = conn.execute(
                "SELECT submitted_at, status FROM jobs WHERE id = ?", (job_id,)
            ).fetchone()
            if me is None:
                raise JobNotFound(job_id)
            if me["status"] not in (RUNNING, QUEUED):  # ended meanwhile (cancelled)
                return GpuClaim(None)
            rows = conn.execute(
                "SELECT id, status, gpus, spec, user, submitted_at FROM jobs WHERE id != ? AND "
                "status IN (?, ?) AND COALESCE(backend, 'local') = 'local' "
                "ORDER BY submitted_at, id",
                (job_id, RUNNING, QUEUED),
            ).fetchall()
            wanted, claim = set(pool), GpuClaim(None)
            for row in rows:
                if row["status"] == RUNNING:
                    for gpu in (g for node in json.loads(row["gpus"] or "[]") for g in node):
                        if gpu in wanted:
                            claim.held[gpu] = row["id"]
                elif wanted & set(json.loads(row["spec"] or "{}").get("gpu_pool") or []):
                    claim.waiting += 1  # competes for the same GPUs
                    if (row["submitted_at"], row["id"]) < (me[0], job_id):
                        claim.ahead.append({"job_id": row["id"], "user": row["user"] or "",
                                            "since": row["submitted_at"]})  # fmt: skip
            free = [g for g in pool if g not in claim.held]
            if claim.ahead or len(free) < nodes * per_node:
                return claim
            gpus = [free[k * per_node : (k + 1) * per_node] for k in range(nodes)]
            conn.execute(
                "UPDATE jobs SET gpus = ?, status = ?, queue = NULL, started_at = CASE WHEN "
                "status = ? AND EXISTS (SELECT 1 FROM attempts WHERE job_id = jobs.id) THEN "
                "started_at WHEN status = ? THEN ? ELSE started_at END WHERE id = ?",
                (json.dumps(gpus), RUNNING, QUEUED, QUEUED, time.time(), job_id),
            )
            claim.gpus = gpus
            return claim

    def finish_job(self, job_id: str, status: str, reason: str | None) -> bool:
        """End a job run (once: False when it had already ended)."""
        if status not in TERMINAL:
            raise ValueError(f"a job run ends {sorted(TERMINAL)}, not {status!r}")
        with self._write() as conn:
            cursor = conn.execute(
                f"UPDATE jobs SET status = ?, reason = ?, ended_at = ?, queue = NULL WHERE id = ? "
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
        return self._first_column(
            "SELECT id FROM jobs WHERE ended_at IS NOT NULL AND runs_closed_at IS NULL "
            "ORDER BY ended_at LIMIT ?",
            (limit,),
        )

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
