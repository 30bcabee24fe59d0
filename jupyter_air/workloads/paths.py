"""Where workloads keep their things: the job store and each job's folder (logs, spec, script).

Everything lives under jupyter-air's data folder (``config.data_dir``, the one rule). Job ids
are checked before they become paths, so no request can name a file outside a job's folder.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

JOB_ID = re.compile(r"^[0-9a-f]{12}$")


class InvalidJobId(ValueError):
    """A job id that is not one jupyter-air makes (12 lowercase hex digits)."""


def workloads_dir(data: Path) -> Path:
    return data / "workloads"


def store_path(data: Path) -> Path:
    return workloads_dir(data) / "jobs.db"


def new_job_id() -> str:
    return uuid.uuid4().hex[:12]


def check_job_id(job_id: str) -> str:
    if not isinstance(job_id, str) or not JOB_ID.match(job_id):
        raise InvalidJobId(f"{job_id!r} is not a job run id (12 hexadecimal digits)")
    return job_id


def job_dir(data: Path, job_id: str) -> Path:
    return workloads_dir(data) / "jobs" / check_job_id(job_id)


def attempt_dir(data: Path, job_id: str, attempt: int) -> Path:
    return job_dir(data, job_id) / f"attempt_{_index(attempt, 'attempt', 1)}"


def checkpoint_home(data: Path, job_id: str) -> Path:
    """Where a job run's checkpoints are kept when its YAML names no checkpoint_location."""
    return job_dir(data, job_id) / "checkpoint"


def nodes_dir(data: Path, job_id: str) -> Path:
    """The folders of a job run's nodes when they run on this machine."""
    return job_dir(data, job_id) / "nodes"


def checkpoint_node_dir(data: Path, job_id: str, node: int) -> Path:
    """Node ``node``'s checkpoint folder (``config.CHECKPOINT_DIR``) when it runs on this
    machine, the same in every attempt."""
    return nodes_dir(data, job_id) / f"node_{_index(node, 'node', 0)}" / "checkpoint"


def log_path(data: Path, job_id: str, attempt: int, node: int) -> Path:
    return attempt_dir(data, job_id, attempt) / f"node_{_index(node, 'node', 0)}.log"


def _index(value: int, what: str, lowest: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise ValueError(f"{what} must be an integer ≥ {lowest}, not {value!r}")
    return value
