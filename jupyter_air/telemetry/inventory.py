"""The one list of a machine's GPUs — index, UUID, name, MIG instances — and what a
``CUDA_VISIBLE_DEVICES`` setting makes of it.

Read through NVML, never by initialising CUDA (a kernel holding a CUDA context breaks fork-based
launchers). The NVML backend (GPU Resources, node agents), ``.distributed()``
(``launch/devices.py``) and the workload GPU check (``workloads/capacity.py``) all use it, so they
agree on what a setting such as ``"2,GPU-8f3c,MIG-5b1e"`` names.

``CUDA_VISIBLE_DEVICES`` as CUDA reads it: entries are NVML indices, ``GPU-`` UUID prefixes or
``MIG-`` UUID prefixes of MIG instances, in the order given; the list ends at the first entry that
names nothing (or is ambiguous, or repeats a device); ``""`` or ``"-1"`` hides every GPU. Without
the variable every GPU is visible, by index.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .samples import mb

UNKNOWN_GPU = "unknown GPU"
MIG_ENABLED = 1  # NVML_DEVICE_MIG_ENABLE


@dataclass(frozen=True)
class MigInstance:
    """A MIG instance of a GPU: ``index`` is its MIG device index on that GPU."""

    index: int
    uuid: str | None
    name: str | None
    mem_total_mb: float | None = None


@dataclass(frozen=True)
class GpuInfo:
    """A physical GPU as NVML lists it; fields NVML cannot read (a lost GPU) are ``None``, and
    such a GPU still counts, as CUDA numbers it."""

    index: int
    name: str | None
    uuid: str | None
    mig: tuple[MigInstance, ...] = ()


@dataclass(frozen=True)
class VisibleDevice:
    """A device a process may use: ``id`` is how ``CUDA_VISIBLE_DEVICES`` names it."""

    id: str
    gpu: GpuInfo
    mig: MigInstance | None = None

    @property
    def name(self) -> str:
        if self.mig is not None:
            return self.mig.name or f"MIG instance of GPU {self.gpu.index}"
        return self.gpu.name or UNKNOWN_GPU


@dataclass(frozen=True)
class Inventory:
    """The GPUs of this machine, or none with the reason in words."""

    gpus: list[GpuInfo]
    reason: str | None = None

    def visible(self, setting: str | None) -> tuple[list[VisibleDevice], str | None]:
        """The devices a process with ``CUDA_VISIBLE_DEVICES=setting`` sees (``None``: unset),
        and why there are none."""
        if setting is not None and setting.strip() in ("", "-1"):
            return [], f"CUDA_VISIBLE_DEVICES={setting!r} hides every GPU"
        if not self.gpus:
            return [], self.reason or "NVML finds no NVIDIA GPU on this machine"
        if setting is None:
            return [VisibleDevice(str(g.index), g) for g in self.gpus], None
        chosen: list[VisibleDevice] = []
        for entry in (e.strip() for e in setting.split(",")):
            device = self._lookup(entry)
            if device is None or any(_same(device, c) for c in chosen):
                break  # CUDA ignores entries from the first invalid one on
            chosen.append(device)
        if not chosen:
            return [], f"CUDA_VISIBLE_DEVICES={setting!r} names no GPU of this machine"
        return chosen, None

    def _lookup(self, entry: str) -> VisibleDevice | None:
        if entry.isdigit():
            index = int(entry)
            return VisibleDevice(entry, self.gpus[index]) if index < len(self.gpus) else None
        if entry.startswith("GPU-"):
            gpus = [g for g in self.gpus if g.uuid and g.uuid.startswith(entry)]
            return VisibleDevice(entry, gpus[0]) if len(gpus) == 1 else None
        if entry.startswith("MIG-"):
            found = [
                (g, m) for g in self.gpus for m in g.mig if m.uuid and m.uuid.startswith(entry)
            ]
            return VisibleDevice(entry, found[0][0], found[0][1]) if len(found) == 1 else None
        return None


def _same(a: VisibleDevice, b: VisibleDevice) -> bool:
    if a.gpu.index != b.gpu.index:
        return False
    return a.mig is None or b.mig is None or a.mig.index == b.mig.index


def text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _quiet(fn: Callable[..., Any], *args: Any) -> Any:
    """An NVML read that may fail (NotSupported, a lost GPU): ``None`` instead."""
    try:
        return fn(*args)
    except Exception:
        return None


def mig_handles(nvml: Any, handle: Any) -> list[tuple[int, Any]]:
    """``(MIG device index, handle)`` of each MIG instance of a GPU; none when MIG is off or
    not supported (NVML initialised)."""
    mode = _quiet(nvml.nvmlDeviceGetMigMode, handle)
    if not mode or mode[0] != MIG_ENABLED:
        return []
    count = _quiet(nvml.nvmlDeviceGetMaxMigDeviceCount, handle) or 0
    found: list[tuple[int, Any]] = []
    for index in range(count):
        mig = _quiet(nvml.nvmlDeviceGetMigDeviceHandleByIndex, handle, index)
        if mig is not None:  # NOT_FOUND: an empty slot
            found.append((index, mig))
    return found


def describe_mig(nvml: Any, index: int, handle: Any) -> MigInstance:
    uuid = _quiet(nvml.nvmlDeviceGetUUID, handle)
    name = _quiet(nvml.nvmlDeviceGetName, handle)
    memory = _quiet(nvml.nvmlDeviceGetMemoryInfo, handle)
    return MigInstance(
        index,
        text(uuid) if uuid is not None else None,
        text(name) if name is not None else None,
        mb(memory.total) if memory is not None else None,
    )


def describe_gpu(
    nvml: Any, index: int, handle: Any | None, migs: list[tuple[int, Any]] | None = None
) -> GpuInfo:
    """One GPU (NVML initialised); ``handle`` None: NVML could not give one. ``migs``: its
    MIG instance handles when the caller has them already."""
    if handle is None:
        return GpuInfo(index, None, None)
    name = _quiet(nvml.nvmlDeviceGetName, handle)
    uuid = _quiet(nvml.nvmlDeviceGetUUID, handle)
    migs = mig_handles(nvml, handle) if migs is None else migs
    mig = tuple(describe_mig(nvml, i, h) for i, h in migs)
    return GpuInfo(
        index,
        text(name) if name is not None else None,
        text(uuid) if uuid is not None else None,
        mig,
    )


def list_gpus(nvml: Any) -> list[GpuInfo]:
    """Every GPU NVML counts, described (NVML initialised)."""
    count = nvml.nvmlDeviceGetCount()
    return [describe_gpu(nvml, i, _quiet(nvml.nvmlDeviceGetHandleByIndex, i)) for i in range(count)]


def read_inventory(nvml: Any | None = None) -> Inventory:
    """This machine's GPUs, starting and shutting down NVML around the reading (``nvml``: a
    pynvml-like module, for tests)."""
    try:
        module = nvml or importlib.import_module("pynvml")
    except ImportError:
        return Inventory([], "nvidia-ml-py is not installed, so no GPU can be seen")
    try:
        module.nvmlInit()
    except Exception as error:
        return Inventory([], f"NVML is unavailable: {error}")
    try:
        gpus = list_gpus(module)
    except Exception as error:
        return Inventory([], f"NVML could not list the GPUs: {error}")
    finally:
        with contextlib.suppress(Exception):
            module.nvmlShutdown()
    if not gpus:
        return Inventory([], "NVML finds no NVIDIA GPU on this machine")
    return Inventory(gpus)
