"""The job store's connection: WAL, a busy timeout, one short ``BEGIN IMMEDIATE`` transaction
per write, a connection per call (threads share a store), the schema migrated on open.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..paths import store_path
from .records import StoreError
from .schema import _SCHEMA, SCHEMA_MIGRATIONS, SCHEMA_VERSION


class StoreBase:
    """The store's file and its connections: opened (and migrated) on first use."""

    def __init__(self, path: str | Path, *, timeout_s: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s
        self._ready = False

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

    def _first_column(self, sql: str, args: tuple[Any, ...]) -> list[Any]:
        """The first column of every row that ``sql`` selects, in its order."""
        with self._connect() as conn:
            return [row[0] for row in conn.execute(sql, args).fetchall()]

    def _open(self) -> None:
        from ...private import create_private, private_folder, secure_data_dir

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
