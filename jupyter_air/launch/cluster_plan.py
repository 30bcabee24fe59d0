"""Where a ``.distributed(nodes=M)`` call runs: the Ray backend it needs (or the error that says
how to connect one) and its ranks on the cluster's nodes (``ClusterPlan``), decided before
anything starts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from ..config import CLUSTER
from .errors import DeviceError
from .kept_nodes import kept_nodes

if TYPE_CHECKING:
    from ..backends.ray_backend import RayBackend

HOW_TO_CONNECT = (
    f"connect a Ray cluster: set RAY_ADDRESS (or c.JupyterAir.cluster / {CLUSTER}) to "
    "its address before starting the kernel — see docs/clusters.md. On this machine alone, use "
    "nodes=1."
)


@dataclass(frozen=True)
class ClusterPlan:
    nodes: int
    nproc: int  # per node
    kind: str  # "gpu" | "cpu"
    note: str | None = None

    @property
    def description(self) -> str:
        each = f"{self.nproc} GPU" if self.kind == "gpu" else f"{self.nproc} CPU rank"
        return f"{self.nodes} nodes x {each}{'s' if self.nproc != 1 else ''}"


def plan_cluster(gpus: int | None, nodes: int, backend: RayBackend) -> ClusterPlan:
    """The ranks of a call on ``nodes`` Ray nodes: ``gpus`` each, or — not given — as many as
    every one of ``nodes`` nodes has (the cluster's resources, not this kernel's GPUs); ranks on
    the CPU where the nodes have no GPU."""
    available = sorted((n.gpus for n in backend.nodes() if n.cpus >= 1), reverse=True)
    if len(available) < nodes:
        raise DeviceError(
            f"nodes={nodes}: the Ray cluster at {backend.address} has {backend.describe()}; "
            "it needs one Ray node per node of the call."
        )
    fits = int(available[nodes - 1])  # what the nodes-th best node has
    if gpus is None:
        if fits >= 1:
            return ClusterPlan(nodes, fits, "gpu")
        note = (
            "jupyter-air: the Ray nodes have no GPU; running 1 rank per node on the CPU (gloo). "
            "Pass gpus=N to run N CPU ranks per node."
        )
        return ClusterPlan(nodes, 1, "cpu", note)
    if fits >= gpus:
        return ClusterPlan(nodes, gpus, "gpu")
    if not any(available):
        note = (
            f"jupyter-air: the Ray nodes have no GPU; running {gpus} ranks per node on the "
            "CPU (gloo) instead of GPUs."
        )
        return ClusterPlan(nodes, gpus, "cpu", note)
    raise DeviceError(
        f"gpus={gpus}, nodes={nodes}: {nodes} Ray nodes with {gpus} GPUs each are needed; the "
        f"cluster at {backend.address} has {backend.describe()}."
    )


def cluster_backend(nodes: int) -> RayBackend:
    """The Ray backend for a call on several nodes, or the error that says how to get one."""
    from ..backends.choice import choose, require_ray

    choice = choose(None)
    if choice.backend != "ray":
        raise DeviceError(f"nodes={nodes} runs on several machines: {HOW_TO_CONNECT}")
    require_ray(choice.why)
    return kept_nodes().backend(choice.address)
