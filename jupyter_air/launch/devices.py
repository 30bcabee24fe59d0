"""Which devices a ``.distributed()`` call runs on, decided in the kernel before anything starts.

GPUs come from the one inventory (``telemetry/inventory.py``: NVML, never CUDA in the kernel, since
a kernel holding a CUDA context is what breaks fork-based launchers), counted as CUDA will number
them in the ranks: only those ``CUDA_VISIBLE_DEVICES`` names, in its order, MIG instances
included. Without any GPU the ranks run on the CPU (gloo), which is said once per kernel.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

from ..telemetry.inventory import read_inventory
from .errors import DeviceError

_said: set[str] = set()  # notes already printed in this kernel


@dataclass(frozen=True)
class Gpu:
    """A GPU the kernel may hand to its ranks: ``id`` as ``CUDA_VISIBLE_DEVICES`` names it."""

    id: str
    name: str


@dataclass(frozen=True)
class VisibleGpus:
    gpus: list[Gpu]
    reason: str | None  # why there are none, in words
    setting: str | None  # CUDA_VISIBLE_DEVICES, when set


@dataclass(frozen=True)
class DevicePlan:
    """How many ranks, on what, and what to tell the user about it."""

    nproc: int
    kind: str  # "gpu" | "cpu"
    cuda_visible_devices: str | None  # for the ranks; None leaves the variable as it is
    note: str | None = None

    @property
    def description(self) -> str:
        if self.kind == "gpu":
            return f"{self.nproc} GPU{'s' if self.nproc != 1 else ''} ({self.cuda_visible_devices})"
        return f"{self.nproc} CPU rank{'s' if self.nproc != 1 else ''} (gloo)"


def visible_gpus(
    nvml: ModuleType | Any | None = None, environ: Mapping[str, str] | None = None
) -> VisibleGpus:
    """The GPUs CUDA would show a process started with this environment, read from NVML."""
    env = os.environ if environ is None else environ
    setting = env.get("CUDA_VISIBLE_DEVICES")
    devices, reason = read_inventory(nvml).visible(setting)
    return VisibleGpus([Gpu(d.id, d.name) for d in devices], reason, setting)


def plan_devices(
    gpus: int | None,
    nodes: int = 1,
    *,
    nvml: ModuleType | Any | None = None,
    environ: Mapping[str, str] | None = None,
) -> DevicePlan:
    """Decide the ranks of one call, or raise ``DeviceError`` before anything starts."""
    check_counts(gpus, nodes)
    found = visible_gpus(nvml, environ)
    if found.gpus:
        wanted = len(found.gpus) if gpus is None else gpus
        if wanted > len(found.gpus):
            raise DeviceError(
                f"gpus={gpus} asks for {gpus} GPUs, but this kernel sees "
                f"{_count(len(found.gpus), 'GPU')}: {_names(found)}. Ask for at most "
                f"{len(found.gpus)}, or gpus=None for all of them."
            )
        chosen = found.gpus[:wanted]
        return DevicePlan(wanted, "gpu", ",".join(g.id for g in chosen))
    if gpus is None:
        note = (
            f"jupyter-air: no GPU is visible ({found.reason}); running 1 rank on the CPU (gloo). "
            "Pass gpus=N to run N CPU ranks."
        )
        return DevicePlan(1, "cpu", None, note)
    note = (
        f"jupyter-air: no GPU is visible ({found.reason}); running {_count(gpus, 'rank')} on "
        "the CPU (gloo) instead of GPUs."
    )
    return DevicePlan(gpus, "cpu", None, note)


def check_counts(gpus: int | None, nodes: int) -> None:
    """Reject counts that cannot work, whatever the machine (also at decoration time)."""
    if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
        raise ValueError(f"gpus must be a whole number ≥ 1, or None for every GPU; got {gpus!r}")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise ValueError(f"nodes must be a whole number ≥ 1; got {nodes!r}")


def say_once(note: str | None) -> None:
    """Print a device note the first time this kernel meets it."""
    if note and note not in _said:
        _said.add(note)
        print(note, flush=True)


def _count(n: int, what: str) -> str:
    return f"{n} {what}{'s' if n != 1 else ''}"


def _names(found: VisibleGpus) -> str:
    listed = ", ".join(f"{g.id} ({g.name})" for g in found.gpus)
    if found.setting is not None:
        listed += f" (CUDA_VISIBLE_DEVICES={found.setting})"
    return listed
