"""Which MLflow run, rank and job a GPU process works for, read from its environment.

jupyter-air hands every process it starts its run through the environment: a ``.distributed()``
rank gets ``MLFLOW_RUN_ID``, ``MLFLOW_EXPERIMENT_ID`` and torch's ``RANK``/``LOCAL_RANK``; a
workload node gets those and ``NODE_RANK`` and ``config.JOB_ID``, which its own children
(torchrun's ranks) inherit. A variable missing from the process itself is looked for in its
ancestors, nearest first, up to the Jupyter kernel that started it (a kernel's own environment is
the server's, not a run's: kernels are attributed to their notebook instead). Reading another user's
environment is not allowed: such a process gets no run. The answer for a process never changes
(its environment is fixed at start), so it is cached by pid and start time — unless the process's
own environment read empty, as it does for a moment while a process starts.

A rank forked from its launcher agent (launch/agent.py, on Linux) reads as the agent did when it
started: its ``RANK`` and ``LOCAL_RANK`` came later. Its command line is the agent's, which names
the run folder; the rank's pid file there says which rank it is.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

import psutil

from ..config import JOB_ID
from ..launch.rundir import RunDir
from .samples import RunOwner

RUN_ENV = "MLFLOW_RUN_ID"
EXPERIMENT_ENV = "MLFLOW_EXPERIMENT_ID"
JOB_ENV = JOB_ID.name
RANK_ENVS = {"rank": "RANK", "local_rank": "LOCAL_RANK", "node_rank": "NODE_RANK"}
NAMES = (RUN_ENV, EXPERIMENT_ENV, JOB_ENV, *RANK_ENVS.values())
AGENT_MODULE = "jupyter_air.launch.agent"
MAX_ANCESTORS = 16
CACHE_MAX = 4096
_ID_MAX = 64  # run, experiment and job ids are short; anything longer is not ours


def run_owner(process: psutil.Process, stop_at: Collection[int] = ()) -> RunOwner | None:
    """The run of ``process``, or None (no run in its environment or its ancestors', or not
    allowed to read them). ``stop_at``: pids (kernels) where the search ends, unread."""
    return _search(process, stop_at)[0]


def _search(process: psutil.Process, stop_at: Collection[int]) -> tuple[RunOwner | None, bool]:
    """The run, and whether the process's own environment could be read (it cannot, or reads
    empty, while it is being started: then the answer is not final)."""
    if process.pid in stop_at:
        return None, True
    found: dict[str, str] = {}
    chain = [process]
    try:
        for parent in process.parents()[:MAX_ANCESTORS]:
            if parent.pid in stop_at:
                break
            chain.append(parent)
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        pass
    readable = True
    for member in chain:
        environ = _environ(member)
        if member is process:
            readable = bool(environ)
            if readable and not environ.get(RANK_ENVS["rank"]):
                forked = _forked_rank(process)
                readable = forked is not None
                environ = {**environ, **(forked or {})}
        for name in NAMES:
            if name not in found and environ.get(name):
                found[name] = environ[name]
        if len(found) == len(NAMES):
            break
    return owner_from(found), readable


def _forked_rank(process: psutil.Process) -> dict[str, str] | None:
    """The rank variables of a rank forked from a launcher agent, from its pid file; None while
    a process with the agent's command line has none there (the agent itself, or a rank that
    has not written it yet); {} for any other process."""
    try:
        command = process.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return {}
    if AGENT_MODULE not in command[:-1]:
        return {}
    folder = RunDir(command[command.index(AGENT_MODULE) + 1])
    for rank, info in folder.rank_pids().items():
        if info["pid"] == process.pid:
            local = info.get("local_rank")
            return {RANK_ENVS["rank"]: str(rank), RANK_ENVS["local_rank"]: str(local)}
    return None


def owner_from(environ: Mapping[str, str]) -> RunOwner | None:
    """A run owner from environment variables; None without a plausible run id."""
    run_id = _short(environ.get(RUN_ENV))
    if run_id is None:
        return None
    owner: RunOwner = {
        "run_id": run_id,
        "experiment_id": _short(environ.get(EXPERIMENT_ENV)),
        "rank": None,
        "local_rank": None,
        "node_rank": None,
        "job_id": _short(environ.get(JOB_ENV)),
    }
    for key, name in RANK_ENVS.items():
        value = environ.get(name, "")
        owner[key] = int(value) if value.isdigit() else None  # type: ignore[literal-required]
    return owner


def _short(value: str | None) -> str | None:
    return value if value and len(value) <= _ID_MAX else None


def _environ(process: psutil.Process) -> dict[str, str]:
    try:
        return process.environ()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess, OSError):
        return {}


class RunOwners:
    """``run_owner`` with a cache keyed by (pid, start time), bounded, dropped for gone pids."""

    def __init__(self) -> None:
        self._cache: dict[tuple[int, float], RunOwner | None] = {}

    def of(self, process: psutil.Process, stop_at: Collection[int] = ()) -> RunOwner | None:
        try:
            key = (process.pid, process.create_time())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            return None
        if key in self._cache:
            return self._cache[key]
        owner, final = _search(process, stop_at)
        if final:
            if len(self._cache) >= CACHE_MAX:
                self._cache.clear()
            self._cache[key] = owner
        return owner

    def keep_only(self, pids: Collection[int]) -> None:
        """Forget processes that are no longer GPU processes."""
        for key in [k for k in self._cache if k[0] not in pids]:
            del self._cache[key]
