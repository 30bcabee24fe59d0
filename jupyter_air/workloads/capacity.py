"""Whether this machine has the accelerators a workload asks for, and which GPUs each node gets.

GPUs are counted through NVML (no CUDA initialisation, so a kernel that checks stays fork-safe),
limited to ``CUDA_VISIBLE_DEVICES`` when the submitting process has it. ``accelerator_type`` is
``GPU`` (any), ``CPU`` (no GPU at all) or a model name matched against NVML's device names
(``H100`` matches "NVIDIA H100 80GB HBM3"). Jobs share GPUs: this is a check that they exist, not
a scheduler. The inventory is a parameter, so tests can pretend to have "2 x A100".
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .spec import Compute


@dataclass(frozen=True)
class Gpu:
    index: int  # NVML index (PCI bus order), what CUDA_VISIBLE_DEVICES names with PCI_BUS_ID order
    name: str
    uuid: str = ""


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


class CapacityError(RuntimeError):
    """The workload asks for accelerators this machine does not have."""


def gpu_inventory(nvml: Any = None, environ: Mapping[str, str] | None = None) -> GpuInventory:
    """The GPUs this process may use, from NVML (``nvml``: a pynvml-like module, for tests)."""
    env = os.environ if environ is None else environ
    try:
        module = nvml or importlib.import_module("pynvml")
    except ImportError:
        return GpuInventory([], "nvidia-ml-py is not installed, so GPUs cannot be counted")
    try:
        module.nvmlInit()
    except Exception as error:
        return GpuInventory([], f"NVML is unavailable: {error}")
    gpus: list[Gpu] = []
    try:
        for index in range(module.nvmlDeviceGetCount()):
            handle = module.nvmlDeviceGetHandleByIndex(index)
            gpus.append(Gpu(index, _text(module.nvmlDeviceGetName(handle)), _uuid(module, handle)))
    except Exception as error:
        return GpuInventory(gpus, f"NVML stopped answering: {error}")
    finally:
        with contextlib.suppress(Exception):
            module.nvmlShutdown()
    return _visible(gpus, env.get("CUDA_VISIBLE_DEVICES"))


def _visible(gpus: list[Gpu], visible: str | None) -> GpuInventory:
    if visible is None:
        return GpuInventory(gpus)
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    chosen: list[Gpu] = []
    for entry in entries:
        if entry.isdigit():
            match = next((g for g in gpus if g.index == int(entry)), None)
        elif entry.startswith("GPU-"):
            match = next((g for g in gpus if g.uuid.startswith(entry)), None)
        else:  # MIG instances and other forms: not mapped, keep what NVML sees
            return GpuInventory(gpus, f"CUDA_VISIBLE_DEVICES={visible} is not mapped")
        if match is None:
            break  # CUDA ignores entries from the first invalid one on
        chosen.append(match)
    return GpuInventory(chosen, f"limited by CUDA_VISIBLE_DEVICES={visible}")


def assign_gpus(compute: Compute, inventory: GpuInventory) -> list[list[Gpu]]:
    """The GPUs of each node (``num_accelerators`` each, disjoint); raises CapacityError."""
    if not compute.uses_gpus:
        return [[] for _ in range(compute.num_nodes)]
    wanted = compute.accelerator_type
    if wanted == "GPU":
        matching = list(inventory.gpus)
        what = "GPU"
    else:
        matching = [g for g in inventory.gpus if wanted.lower() in g.name.lower()]
        what = f"{wanted} GPU"
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
    return [matching[k * n : (k + 1) * n] for k in range(compute.num_nodes)]


def cuda_visible_devices(gpus: list[Gpu]) -> str:
    """``CUDA_VISIBLE_DEVICES`` for a node (empty: no GPU visible)."""
    return ",".join(str(g.index) for g in gpus)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _uuid(module: Any, handle: Any) -> str:
    try:
        return _text(module.nvmlDeviceGetUUID(handle))
    except Exception:
        return ""
