"""What every ``air`` command shares: the exit codes, the error that carries one, and finding
the job store, a job run and the tracking server."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..workloads.connection import Connection
    from ..workloads.store import JobRun, JobStore

EXIT_OK = 0
EXIT_JOB_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_TRACKING = 3
EXIT_CAPACITY = 4
EXIT_NOT_FOUND = 5
EXIT_FORBIDDEN = 6
EXIT_STORE = 7  # the job store cannot be read or written (a full disk, a broken file)
EXIT_INTERRUPTED = 130


class CliError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


def open_store() -> JobStore:
    from ..workloads.jobs import open_store

    return open_store()


def checked_job(store: JobStore, text: str) -> JobRun:
    """The job run ``text`` names (an id or a unique prefix), its state checked: the user
    asking is when a gone supervisor is noticed (``jobs.refresh``)."""
    from ..workloads.jobs import get_job
    from ..workloads.paths import InvalidJobId
    from ..workloads.store import JobNotFound

    try:
        return get_job(store, text)
    except (JobNotFound, InvalidJobId) as error:
        message = str(error.args[0]) if error.args else str(error)
        raise CliError(
            f"{message}. `air list runs --all-status` lists them.", EXIT_NOT_FOUND
        ) from None


def connection(require: bool = False, start: bool = False) -> Connection | None:
    from ..workloads.connection import NoTrackingServer, find_connection

    try:
        return find_connection(require_tracking=require, start_embedded=start)
    except NoTrackingServer as error:
        raise CliError(str(error), EXIT_NO_TRACKING) from None
    except (OSError, TimeoutError) as error:  # starting jupyter-air's own server failed
        raise CliError(
            f"could not start jupyter-air's MLflow server: {error}", EXIT_NO_TRACKING
        ) from None
