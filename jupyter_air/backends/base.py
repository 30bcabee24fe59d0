"""The contract between the supervision core and a backend.

A backend places the nodes of one attempt and starts each node's command with the environment
contract of docs/workloads.md; the ``NodeGroup`` it returns is how the core watches and stops
them. Every node's output ends up, line by line with the node's own timestamps, in the node's log
file on the Jupyter host (``NodeLaunch.writer``): written there directly by the local backend,
brought home by ``sync_logs`` from a remote one.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from ..config import RESTARTED_RANKS_ENV

if TYPE_CHECKING:
    from ..logs.logfile import LogWriter


# put first on every node's PYTHONPATH: a start-up hook that makes Python print whole lines
WHOLE_LINES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "whole_lines")


class PlacementError(RuntimeError):
    """The nodes of an attempt could not be placed (the reason is for people)."""


class CapacityError(RuntimeError):
    """The workload asks for accelerators this machine (or cluster) does not have."""


class ClusterUnreachableError(CapacityError):
    """The cluster that would run the workload does not answer: no capacity at all."""


class ShapeError(ValueError):
    """A compute shape a backend never runs, whatever is free: the field at fault (a dotted
    path such as ``compute.num_nodes``), what is wrong and what to do. Whoever holds the spec
    tells its user where that field is."""

    def __init__(self, field: str, message: str, hint: str | None = None) -> None:
        super().__init__(f"{field}: {message}")
        self.field, self.message, self.hint = field, message, hint


class QueueTimeout(PlacementError):
    """An attempt waited in its cluster's queue for longer than it may (the reason says how
    long and what it waited for)."""


@dataclass(frozen=True)
class Waiter:
    """An attempt about to wait in its cluster's queue: who it is, what it waits for, and how
    it is told (``queued``: its place and the reason, each time they change; ``placed``: its
    resources are held)."""

    job_id: str
    attempt: int
    since: float  # when the job run was submitted: its place in line
    user: str
    nodes: int
    accelerators: int  # per node; 0 without GPUs
    queued: Callable[[dict[str, Any]], None]
    placed: Callable[[], None]
    cancelled: Callable[[], bool]
    pause: Callable[[float], object]  # wait this long, or less when woken (a cancel)
    timeout_s: float | None = None

    def deadline(self) -> float | None:
        """When the wait ends (``time.monotonic``), from now; None: never."""
        return time.monotonic() + self.timeout_s if self.timeout_s else None

    def timed_out(self, reason: str) -> QueueTimeout:
        """The error that ends a wait past its deadline, with why it waited."""
        minutes = f"{(self.timeout_s or 0) / 60:g}"
        return QueueTimeout(
            f"queued for longer than {minutes} min (queue_timeout_minutes), "
            f"{reason[:1].lower()}{reason[1:]}"
        )

    def describe(self) -> str:
        each = f"{self.accelerators} GPU and 1 CPU" if self.accelerators else "1 CPU"
        nodes = f"{self.nodes} node{'s' if self.nodes != 1 else ''}"
        apart = ", each on a different machine" if self.nodes > 1 else ""
        return f"{nodes} with {each} free{apart}"


class ComputeShape(Protocol):
    """What a backend reads of a workload's compute (a workload spec's ``compute`` is one)."""

    @property
    def num_nodes(self) -> int: ...

    @property
    def num_accelerators(self) -> int: ...  # per node

    @property
    def uses_gpus(self) -> bool: ...


class Shaped(Protocol):
    """What a backend checks before anything starts: something with a compute shape."""

    @property
    def compute(self) -> ComputeShape: ...


@dataclass(frozen=True)
class NodeLaunch:
    """What node ``node`` of an attempt runs."""

    node: int
    argv: list[str]
    # jupyter-air's part of the environment and the spec's env_variables; the backend adds the
    # node's own (its environment, NODE_RANK, MASTER_ADDR/PORT, PET_*, CUDA_VISIBLE_DEVICES)
    env: Mapping[str, str]
    cwd: str
    writer: LogWriter
    # the local backend: GPUs assigned at submission, or (a call) the kernel's by their
    # CUDA_VISIBLE_DEVICES names; None leaves the variable as the environment has it
    gpus: tuple[int | str, ...] | None = ()
    # files the command needs on its node, put in a folder of the node's own whose path
    # replaces "{folder}" in ``argv`` (values: bytes, or a Ray object reference to them)
    files: Mapping[str, Any] = field(default_factory=dict)
    # the node's folder on the Jupyter host, kept with the job: on this machine it is the
    # "{folder}" itself; a node elsewhere works in its own and the backend brings it back here
    # when the command ends (``sync_logs(final=True)``)
    folder: str | None = None


@dataclass(frozen=True)
class GroupLaunch:
    job_id: str
    attempt: int
    nodes: list[NodeLaunch]
    accelerators: int  # per node; 0 without GPUs
    accelerator_type: str  # GPU, CPU or a GPU model name
    grace_s: float = 10.0
    # the code snapshot the nodes run in (their ``cwd``): a backend whose nodes may not see this
    # machine's folders ships it, and each node runs the command in a copy of its own
    code: str | None = None
    # no snapshot, and a folder a node may not see (a ``.distributed()`` call runs in the
    # kernel's folder): makes a snapshot of the nodes' ``cwd``, called when a node does not see
    # it, and shipped as ``code`` (a node that sees the folder would run there)
    snapshot_if_unseen: Callable[[], str] | None = None
    # a job run's checkpoints where nodes may be on other hosts: the backend gives each node a
    # folder of its own (``CHECKPOINT_DIR`` in its command's environment) and hands them (node →
    # a folder with scan/fetch/put, backends/node_folders.py) to this before the commands start,
    # to put the latest checkpoint back; None: the caller set ``CHECKPOINT_DIR`` itself
    checkpoints: Callable[[dict[int, Any]], None] | None = None
    # MLFLOW_TRACKING_URI is the embedded server on this machine's loopback (it checks its token
    # on every request): a backend whose nodes are elsewhere may offer it on another address
    relay_tracking: bool = False

    @property
    def num_nodes(self) -> int:
        return len(self.nodes)

    @property
    def uses_gpus(self) -> bool:
        return self.accelerator_type != "CPU"


@dataclass
class NodeInfo:
    """Where a node runs: shown per attempt (``air get run``, the job page)."""

    node: int
    host: str
    pid: int | None = None  # the node's process (its process group) on its host
    started: float | None = None  # its creation time
    gpus: str = ""  # CUDA_VISIBLE_DEVICES it got
    machine: str | None = None  # the backend's name for the machine (a Ray node id)


@dataclass
class NodeState:
    node: int
    exit_code: int | None = None
    signal: int | None = None
    lost: str | None = None  # the node itself is gone, and why

    @property
    def running(self) -> bool:
        return self.exit_code is None and self.signal is None and self.lost is None

    @property
    def failed(self) -> bool:
        return self.lost is not None or self.signal is not None or self.exit_code not in (None, 0)


@dataclass
class Metrics:
    """System metrics of the attempt's run, one monitor per node, sampled on that node."""

    run_id: str
    tracking_env: Mapping[str, str]  # MLFLOW_TRACKING_URI (and its token)
    interval_s: float | None = None
    summaries: dict[int, str] = field(default_factory=dict)  # node → what is recorded


class NodeGroup(Protocol):
    """The running nodes of one attempt."""

    backend: str
    nodes: list[NodeInfo]

    def poll(self) -> list[NodeState]: ...

    def sync_logs(self, *, final: bool = False) -> None:
        """Bring every node's new log lines to its log file on the Jupyter host."""

    def start_metrics(self, metrics: Metrics) -> Metrics: ...

    def finish_metrics(self) -> None: ...

    def stop(self, grace_s: float) -> None:
        """Stop every node still running: its process group SIGTERM, then SIGKILL after
        ``grace_s``; returns when they are gone (or gone with their node)."""

    def leftovers(self, grace_s: float) -> list[str]:
        """Stop anything of the job still running on the nodes outside their process groups;
        returns what was found (empty when nothing was left)."""

    def forget_checkpoints(self) -> None:
        """Remove the checkpoint folders the backend gave the nodes (``launch.checkpoints``):
        what they held is home."""

    def close(self) -> None:
        """Release what the group holds (a placement group, actors)."""


class Backend(Protocol):
    name: str

    def check(self, spec: Shaped) -> None:
        """Refuse at once a shape this backend cannot run (ShapeError, CapacityError)."""

    def start(self, launch: GroupLaunch) -> NodeGroup:
        """Place and start the nodes; raises PlacementError."""

    # a backend with a queue (Ray) also has
    # ``wait_for_room(waiter: Waiter) -> bool``: hold the resources of the waiter's next
    # attempt, waiting in the cluster's line for them as long as needed (``start`` then uses
    # them); False when cancelled meanwhile; raises QueueTimeout, PlacementError

    def close(self) -> None: ...


def node_environment(
    base: Mapping[str, str],
    *,
    node: int,
    num_nodes: int,
    master_addr: str,
    master_port: int,
    owned: Mapping[str, str],
    cuda_visible_devices: str | None,
    uses_gpus: bool,
) -> dict[str, str]:
    """The environment of node ``node``: the node's own (``base``), our defaults, then what the
    launch gives (``owned``: the spec's env_variables, then the MLflow run, job id…), then the
    node's rank and GPUs. The same contract on every backend."""
    env = {
        k: v
        for k, v in base.items()
        if k not in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME")
    }
    defaults = {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": master_addr,
        "MASTER_PORT": str(master_port),
        "PET_NNODES": str(num_nodes),
        "PET_NODE_RANK": str(node),
        "PET_MASTER_ADDR": master_addr,
        "PET_MASTER_PORT": str(master_port),
        "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    }
    if uses_gpus:
        defaults["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # NVML's numbering, which assigned the GPUs
    if int(owned.get("PET_MAX_RESTARTS") or 0):
        # torchrun's static rendezvous keeps one store for every round: a restarted round's
        # ranks hang or meet the last round's addresses; c10d's starts each round afresh
        defaults.update(
            {
                "PET_RDZV_BACKEND": "c10d",
                "PET_RDZV_ENDPOINT": f"{master_addr}:{master_port}",
                "PET_RDZV_CONF": f"is_host={'true' if node == 0 else 'false'}",
                **RESTARTED_RANKS_ENV,
            }
        )
    env.update(defaults)
    env.update(owned)
    env.update({"NODE_RANK": str(node), "NNODES": str(num_nodes)})
    if cuda_visible_devices is not None:  # None: as the environment has it
        env["CUDA_VISIBLE_DEVICES"] = cuda_visible_devices
    # each line a Python rank prints reaches the log whole (whole_lines/sitecustomize.py)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (WHOLE_LINES, env.get("PYTHONPATH")) if p)
    return env


def argv_for(command: str | list[str]) -> list[str]:
    """How a spec's command runs: a string through ``/bin/sh -c``, a list as it is."""
    if isinstance(command, str):
        return ["/bin/sh", "-c", command]
    return list(command)
