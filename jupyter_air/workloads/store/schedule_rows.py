"""The job store's schedules and their firings (one firing per slot, claimed once)."""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from .base import StoreBase
from .records import Firing, Schedule, ScheduleExists, ScheduleNotFound, TooManySchedules, _schedule


class ScheduleRows(StoreBase):
    """Schedules and their firings."""

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
