"""A full disk, told apart from other write errors, and a little room kept for the last word.

When the data folder's filesystem fills up, every write fails at once: log lines, the job store
(SQLite says "database or disk is full", or "disk I/O error" when it was mid-page), the MLflow
store when it lives there too. The supervisor must not die of it: it keeps what it took in
memory (``logfile.LogWriter``), ends the job with the reason "no space left on <folder>", and
records that as soon as a write goes through. ``Reserve`` holds a small file the supervisor gives
back to the filesystem when nothing else can be written, so that the job's end is recorded.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

NO_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
NEARLY_FULL_BYTES = 1 << 20  # "disk I/O error" with less than this free is a full disk
RESERVE_BYTES = 256 << 10
FINAL_WAIT_S = 3600.0  # how long a supervisor waits for room to record the end of its job


def no_space(error: BaseException, path: str | os.PathLike[str] | None = None) -> bool:
    """Whether ``error`` means the filesystem (of ``path``, for SQLite's vaguer errors) is
    full."""
    if isinstance(error, OSError) and error.errno in NO_SPACE_ERRNOS:
        return True
    if isinstance(error, sqlite3.Error):
        text = str(error).lower()
        if "database or disk is full" in text:
            return True
        if "disk i/o error" in text and path is not None:
            return free_bytes(path) < NEARLY_FULL_BYTES
    return False


def free_bytes(path: str | os.PathLike[str]) -> int:
    """Bytes free on the filesystem of ``path`` (or of its nearest existing parent)."""
    where = Path(path)
    while not where.exists() and where != where.parent:
        where = where.parent
    try:
        return shutil.disk_usage(where).free
    except OSError:
        return 1 << 62  # cannot tell: not full


def no_space_text(folder: str | os.PathLike[str]) -> str:
    return f"no space left on {folder}"


class Reserve:
    """A file of ``RESERVE_BYTES`` in ``folder``, made while there is room and removed when
    the disk is full: the room the last records need."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.path = Path(folder) / ".disk-reserve"
        try:
            with open(self.path, "wb") as file:
                file.write(b"\0" * RESERVE_BYTES)
        except OSError:
            with contextlib.suppress(OSError):
                self.path.unlink()

    def release(self) -> bool:
        """Give the room back; whether there was any to give."""
        try:
            self.path.unlink()
        except OSError:
            return False
        return True


class DiskWatch:
    """What a supervisor knows of its data folder's disk: whether a write failed for want of
    space (``reason``, from ``since``), the reserve it gives back for the last records, and the
    waits for room (bounded by ``final_wait_s``: nothing waits forever)."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        *,
        shown: str | os.PathLike[str] | None = None,
        final_wait_s: float = FINAL_WAIT_S,
    ) -> None:
        self.folder = Path(folder)
        self.reason: str | None = None  # "no space left on <data folder>", once seen
        self.since: float | None = None
        self.shown = Path(shown) if shown is not None else self.folder
        self.final_wait_s = final_wait_s
        self.reserve = Reserve(self.folder)
        self._told: set[str] = set()

    def saw(self, since: float | None = None) -> str:
        """A write failed for want of space (first at ``since``, default now): the reason,
        said once in the supervisor's log."""
        if self.reason is None:
            self.reason = no_space_text(self.shown)
            self.since = since or time.time()
            log.warning(
                "%s: keeping what the job prints in memory until there is room", self.reason
            )
        return self.reason

    def tolerate(self, what: str, write: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """``write(...)``, or None when the disk is full (noted, not raised): a record that a
        later one brings up to date (a log index, a heartbeat)."""
        try:
            return write(*args, **kwargs)
        except Exception as error:
            if not no_space(error, self.folder):
                raise
            if what not in self._told:  # once: it fails at every tick while the disk is full
                self._told.add(what)
                log.warning("%s: %s", what, self.saw())
            self.saw()
            return None

    def until_written(
        self, what: str, write: Callable[..., Any], *args: Any, **kwargs: Any
    ) -> bool:
        """``write(...)``, again until it goes through (the reserve given back at the first
        failure, then waiting for room); whether it went through in time."""
        return self._until(what, lambda: self._attempt(write, *args, **kwargs))

    def wait_for_room(self, what: str, flushed: Callable[[], bool]) -> bool:
        """Call ``flushed`` until it says all went through; whether it did in time."""
        return self._until(what, flushed)

    def _attempt(self, write: Callable[..., Any], *args: Any, **kwargs: Any) -> bool:
        try:
            write(*args, **kwargs)
        except Exception as error:
            if not no_space(error, self.folder):
                raise
            self.saw()
            return False
        return True

    def _until(self, what: str, done: Callable[[], bool]) -> bool:
        deadline = time.monotonic() + self.final_wait_s
        pause = 0.5
        while not done():
            if self.reserve.release():
                continue  # the room kept for the last records
            if time.monotonic() > deadline:
                log.error("%s: gave up after %.0f s: %s", what, self.final_wait_s, self.reason)
                return False
            log.warning("%s: waiting for room (%s)", what, self.reason)
            time.sleep(pause)
            pause = min(pause * 2, 10.0)
        return True

    def close(self) -> None:
        self.reserve.release()
