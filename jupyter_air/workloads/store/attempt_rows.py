"""The job store's attempts, node processes and log-file index."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from .base import StoreBase
from .records import RUNNING, Attempt, LogFile, NodeProcess, _attempt, _log_file, _node

_LOG_KEY = frozenset({"job_id", "attempt", "node"})


class AttemptRows(StoreBase):
    """Attempts, their nodes and the index of their log files."""

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
            nodes.setdefault((row["job_id"], row["attempt"]), []).append(_node(row))
        for row in conn.execute(
            f"SELECT * FROM attempts WHERE job_id IN ({marks}) ORDER BY attempt", ids
        ):
            key = (row["job_id"], row["attempt"])
            out.setdefault(row["job_id"], []).append(_attempt(row, nodes.get(key, [])))
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
        return self._first_column(
            "SELECT id FROM jobs WHERE ended_at IS NOT NULL AND ended_at < ? "
            "AND logs_purged_at IS NULL ORDER BY ended_at",
            (ended_before,),
        )

    def mark_logs_purged(self, job_id: str) -> None:
        with self._write() as conn:
            conn.execute("DELETE FROM log_files WHERE job_id = ?", (job_id,))
            conn.execute("UPDATE jobs SET logs_purged_at = ? WHERE id = ?", (time.time(), job_id))
