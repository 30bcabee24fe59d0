"""Who a GPU process is: name, user, command, the Jupyter kernel (notebook) that owns it, and the
MLflow run, rank and job it works for (``attribution.py``).

A process belongs to a kernel when it is the kernel or one of its descendants (a DataLoader worker,
a rank started from a notebook). Inside containers NVML reports host PIDs that may not exist here:
such a process keeps its PID and GPU memory, with the other fields ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TypeVar

import psutil

from .attribution import RunOwners
from .samples import GpuProcess, KernelOwner

_COMMAND_MAX = 200
T = TypeVar("T")


def describe(
    processes: list[GpuProcess],
    owners: Mapping[int, KernelOwner],
    runs: RunOwners | None = None,
) -> list[GpuProcess]:
    runs = runs or RunOwners()
    described: list[GpuProcess] = []
    for proc in processes:
        entry: GpuProcess = dict(proc)  # type: ignore[assignment]
        entry["run"] = None
        try:
            p = psutil.Process(proc["pid"])
            with p.oneshot():
                entry["name"] = p.name()
                entry["user"] = _safe(p.username)
                cmdline = _safe(p.cmdline)
                entry["command"] = " ".join(cmdline)[:_COMMAND_MAX] if cmdline else None
            entry["kernel"] = owner_of(p, owners)
            entry["run"] = runs.of(p, stop_at=owners.keys())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            entry["kernel"] = owners.get(proc["pid"])
        described.append(entry)
    return described


def owner_of(process: psutil.Process, owners: Mapping[int, KernelOwner]) -> KernelOwner | None:
    if not owners:
        return None
    if process.pid in owners:
        return owners[process.pid]
    try:
        for parent in process.parents():
            if parent.pid in owners:
                return owners[parent.pid]
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
    return None


def _safe(fn: Callable[[], T]) -> T | None:
    try:
        return fn()
    except (psutil.AccessDenied, psutil.ZombieProcess):
        return None
