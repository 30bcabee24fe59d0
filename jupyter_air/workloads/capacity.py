"""Whether this machine has the accelerators a workload asks for, and which GPUs each node gets.

GPUs come from the one inventory (``telemetry/inventory.py``: NVML, no CUDA initialisation, so a
kernel that checks stays fork-safe), limited to what ``CUDA_VISIBLE_DEVICES`` names when the
submitting process has it (MIG instances included, counted as ``.distributed()`` counts them).
``accelerator_type`` is ``GPU`` (any), ``CPU`` (no GPU at all) or a model name matched against
NVML's device names (``H100`` matches "NVIDIA H100 80GB HBM3"). This is a check that they exist;
which of them an attempt gets is decided when it starts, by the local queue (``local_queue.py``),
among the GPUs that matched here. The inventory is a parameter, so tests can pretend to have
"2 x A100".
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..backends.base import CapacityError
from ..telemetry.inventory import read_inventory

if TYPE_CHECKING:
    from .spec import Compute


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML index (PCI bus order), what CUDA_VISIBLE_DEVICES names with PCI_BUS_ID order
    name: str
    uuid: str = ""
    mig: str | None = None  # the MIG instance's UUID when this is a MIG instance of GPU ``index``


@dataclass
class GpuInventory:
    gpus: list[Gpu] = field(default_factory=list)
    note: str | None = None  # why there are none, or what limited them

    def describe(self) -> str:
        if not self.gpus:
            return "no GPU" + (f" ({self.note})" if self.note else "")
        counts = Counter(g.name for g in self.gpus)
        listed = ", ".join(f"{n} x {name}" for name, n in counts.items())
        total = len(self.gpus)
        text = f"{total} GPU{'s' if total != 1 else ''}: {listed}"
        return text + (f" ({self.note})" if self.note else "")


def gpu_inventory(nvml: Any = None, environ: Mapping[str, str] | None = None) -> GpuInventory:
    """The GPUs this process may use, from NVML (``nvml``: a pynvml-like module, for tests)."""
    env = os.environ if environ is None else environ
    setting = env.get("CUDA_VISIBLE_DEVICES")
    devices, reason = read_inventory(nvml).visible(setting)
    gpus = [
        Gpu(
            d.gpu.index,
            d.name,
            (d.mig.uuid if d.mig is not None else d.gpu.uuid) or "",
            (d.mig.uuid or d.id) if d.mig is not None else None,
        )
        for d in devices
    ]
    if reason is not None:
        return GpuInventory(gpus, reason)
    limited = None if setting is None else f"limited by CUDA_VISIBLE_DEVICES={setting}"
    return GpuInventory(gpus, limited)


def matching_gpus(compute: Compute, inventory: GpuInventory) -> list[Gpu]:
    """The GPUs of ``inventory`` that ``compute.accelerator_type`` accepts (none for CPU): what
    the local queue may give the job run's attempts (``local_queue.py``)."""
    if not compute.uses_gpus:
        return []
    wanted = compute.accelerator_type
    if wanted == "GPU":
        return list(inventory.gpus)
    return [g for g in inventory.gpus if wanted.lower() in g.name.lower()]


def assign_gpus(compute: Compute, inventory: GpuInventory) -> list[list[Gpu]]:
    """The GPUs of each node (``num_accelerators`` each, disjoint); raises CapacityError."""
    if not compute.uses_gpus:
        return [[] for _ in range(compute.num_nodes)]
    wanted = compute.accelerator_type
    matching = matching_gpus(compute, inventory)
    what = "GPU" if wanted == "GPU" else f"{wanted} GPU"
    need = compute.num_accelerators * compute.num_nodes
    if len(matching) < need:
        per_node = ""
        if compute.num_nodes > 1:
            per_node = f" ({compute.num_accelerators} per node x {compute.num_nodes} nodes)"
        matched = ""
        if wanted != "GPU" and inventory.gpus:
            matched = f", {len(matching) or 'none'} of them {wanted}"
        raise CapacityError(
            f"Not enough GPUs: this workload needs {need} {what}{'s' if need != 1 else ''}"
            f"{per_node}; this machine has {inventory.describe()}"
            + matched
            + ". Lower compute.num_accelerators, pick another compute.accelerator_type, or use "
            "accelerator_type: CPU to run without GPUs."
        )
    n = compute.num_accelerators
    chosen = matching[: n * compute.num_nodes]
    mig = [g.mig for g in chosen if g.mig]
    if mig:
        raise CapacityError(
            f"This workload would get MIG instances ({', '.join(mig)}, from "
            "CUDA_VISIBLE_DEVICES), but workload nodes are given whole GPUs by index. Name whole "
            "GPUs in CUDA_VISIBLE_DEVICES (or unset it), or use .distributed(), which runs on "
            "MIG instances."
        )
    return [chosen[k * n : (k + 1) * n] for k in range(compute.num_nodes)]


def cuda_visible_devices(gpus: list[Gpu]) -> str:
    """``CUDA_VISIBLE_DEVICES`` for a node (empty: no GPU visible)."""
    return ",".join(str(g.index) for g in gpus)
