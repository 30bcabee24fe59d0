"""The shapes of telemetry data (the contract between sampler, history, REST API and panels).

A metric that the backend cannot report is ``None`` (JSON ``null``), never 0: a chart must show a
hole, not a fake idle GPU.
"""

from __future__ import annotations

from typing import TypedDict


class KernelOwner(TypedDict):
    """The Jupyter kernel (and notebook) a GPU process belongs to."""

    kernel_id: str
    kernel_name: str | None
    path: str | None  # notebook path relative to the server root, when a session names one


class GpuProcess(TypedDict):
    pid: int
    gpu_mem_mb: float | None
    name: str | None  # process name; None when the pid is not visible here (container)
    user: str | None
    command: str | None
    kernel: KernelOwner | None


class GpuReading(TypedDict, total=False):
    index: int
    util_pct: float | None
    mem_util_pct: float | None
    mem_used_mb: float | None
    mem_total_mb: float | None
    temp_c: float | None
    power_w: float | None
    power_limit_w: float | None
    lost: bool
    processes: list[GpuProcess]


class HostReading(TypedDict):
    cpu_pct: float | None
    mem_used_mb: float | None
    mem_total_mb: float | None


class Sample(TypedDict):
    t: float  # unix time, seconds
    node: str
    host: HostReading
    gpus: list[GpuReading]


class Device(TypedDict):
    index: int
    name: str | None
    uuid: str | None
    mem_total_mb: float | None
    power_limit_w: float | None


def mb(value_bytes: float | int | None) -> float | None:
    """Bytes to MiB, rounded to 0.1, keeping None."""
    if value_bytes is None:
        return None
    return round(value_bytes / (1024 * 1024), 1)


def r1(value: float | int | None) -> float | None:
    """Round to one decimal, keeping None."""
    if value is None:
        return None
    return round(float(value), 1)
