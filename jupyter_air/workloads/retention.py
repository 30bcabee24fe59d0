"""Log retention: the logs of job runs that ended more than N days ago (60 by default) are
removed — their files and their rows in the log index — with their code snapshots (the small
ones stay in their MLflow runs as the artifact ``code/``) and the checkpoints kept in their
folder (a ``checkpoint_location`` elsewhere is the user's storage, left as it is). Job runs stay
listed (marked as purged) and their MLflow runs, with the log artifacts uploaded to them, are
kept.

Runs at every submission (cheap: one indexed query) and is what the Jupyter server calls daily.
``config.LOG_RETENTION_DAYS`` changes the period (0 turns purging off).
"""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass, field

from ..config import LOG_RETENTION_DAYS
from .checkpoints import remove_home
from .paths import checkpoint_home, job_dir, nodes_dir
from .snapshot import CODE_FOLDER
from .store import JobStore

DEFAULT_DAYS = 60.0


@dataclass
class PurgeReport:
    jobs: list[str] = field(default_factory=list)
    bytes: int = 0


def retention_days(explicit: float | None = None) -> float:
    if explicit is not None:
        return float(explicit)
    return LOG_RETENTION_DAYS.get()


def purge_logs(
    store: JobStore, *, days: float | None = None, now: float | None = None
) -> PurgeReport:
    """Remove the logs of job runs that ended more than ``days`` days before ``now``."""
    report = PurgeReport()
    period = retention_days(days)
    if period <= 0:
        return report
    cutoff = (time.time() if now is None else now) - period * 86400
    data = store.data_dir
    for job_id in store.purgeable_jobs(cutoff):
        folder = job_dir(data, job_id)
        for path in folder.glob("attempt_*/node_*.log"):
            with contextlib.suppress(OSError):
                report.bytes += path.stat().st_size
        for attempt in folder.glob("attempt_*"):
            shutil.rmtree(attempt, ignore_errors=True)
        shutil.rmtree(folder / CODE_FOLDER, ignore_errors=True)  # its code snapshot too
        for kept in (checkpoint_home(data, job_id), nodes_dir(data, job_id)):  # and its checkpoints
            report.bytes += remove_home(str(kept))
        store.mark_logs_purged(job_id)
        report.jobs.append(job_id)
    return report
