"""Where workloads keep their things: the job store and each job's folder (logs, spec, script).

Everything lives under jupyter-air's data folder: ``JUPYTER_AIR_DATA_DIR`` when set (kernels and
terminals of a jupyter-air server have it), else the folder the running jupyter-air servers use
(each writes ``jupyter-air-<pid>.json`` in Jupyter's runtime folder, so ``air`` in a plain shell
finds a configured ``JupyterAir.data_dir``), else ``<jupyter data dir>/air`` (the default). Job
ids are checked before they become paths, so no request can name a file outside a job's folder.
"""

from __future__ import annotations

import json
import os
import re
import uuid
from pathlib import Path

DATA_DIR_ENV = "JUPYTER_AIR_DATA_DIR"
SERVER_RECORD = re.compile(r"^jupyter-air-(?P<pid>\d+)\.json$")
JOB_ID = re.compile(r"^[0-9a-f]{12}$")


class InvalidJobId(ValueError):
    """A job id that is not one jupyter-air makes (12 lowercase hex digits)."""


def data_dir(
    explicit: str | os.PathLike[str] | None = None, *, follow_servers: bool = True
) -> Path:
    """jupyter-air's data folder — the one rule for the Jupyter server, kernels, supervisors
    and the CLI: ``explicit`` (``c.JupyterAir.data_dir``, ``--data-dir``), else
    ``JUPYTER_AIR_DATA_DIR``, else (``follow_servers``: for clients, not for a server deciding
    its own) the one the running jupyter-air servers use, else ``<jupyter data dir>/air``."""
    if explicit:
        return Path(explicit).expanduser()
    env = os.environ.get(DATA_DIR_ENV)
    if env:
        return Path(env).expanduser()
    served = served_data_dir() if follow_servers else None
    if served is not None:
        return served
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "air"


def record_server(runtime_dir: str | os.PathLike[str], data: Path) -> Path:
    """Say, in Jupyter's runtime folder, which data folder this server process uses."""
    folder = Path(runtime_dir)
    folder.mkdir(parents=True, exist_ok=True)
    record = folder / f"jupyter-air-{os.getpid()}.json"
    partial = record.with_suffix(".json.tmp")
    partial.write_text(json.dumps({"pid": os.getpid(), "data_dir": str(data)}), encoding="utf-8")
    partial.replace(record)
    return record


def served_data_dir(runtime_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The data folder of the running jupyter-air servers when they all use the same one; None
    when none runs, or when they use different ones (the caller then keeps the default)."""
    found = set(served_data_dirs(runtime_dir).values())
    return found.pop() if len(found) == 1 else None


def served_data_dirs(runtime_dir: str | os.PathLike[str] | None = None) -> dict[int, Path]:
    """The data folder of each running jupyter-air server, by its pid (the ``pid`` of its
    ``jpserver-<pid>.json``)."""
    from ..pids import pid_alive

    if runtime_dir is None:
        from jupyter_core.paths import jupyter_runtime_dir

        runtime_dir = jupyter_runtime_dir()
    try:
        names = os.listdir(runtime_dir)
    except OSError:
        return {}
    found: dict[int, Path] = {}
    for name in names:
        match = SERVER_RECORD.match(name)
        if not match or not pid_alive(int(match["pid"])):
            continue
        try:
            with open(os.path.join(runtime_dir, name), encoding="utf-8") as file:
                found[int(match["pid"])] = Path(str(json.load(file)["data_dir"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


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


def log_path(data: Path, job_id: str, attempt: int, node: int) -> Path:
    return attempt_dir(data, job_id, attempt) / f"node_{_index(node, 'node', 0)}.log"


def _index(value: int, what: str, lowest: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
        raise ValueError(f"{what} must be an integer ≥ {lowest}, not {value!r}")
    return value
