"""The shapes of telemetry data as the sampler builds them: plain dicts, typed.

The wire contract is ``models.py`` (pydantic, validated on ingest, JSON Schema for the panel);
these are the same shapes for the hot path (sampling, history), and a test keeps both naming the
same fields. A metric that the backend cannot report is ``None`` (JSON ``null``), never 0: a chart
must show a hole, not a fake idle GPU.
"""

from __future__ import annotations

from typing import TypedDict


class KernelOwner(TypedDict):
    """The Jupyter kernel (and notebook) a GPU process belongs to."""

    kernel_id: str
    kernel_name: str | None
    path: str | None  # notebook path relative to the server root, when a session names one


class RunOwner(TypedDict):
    """The MLflow run (and rank, job) a GPU process works for, read from its environment."""

    run_id: str
    experiment_id: str | None
    rank: int | None  # RANK of a torch rank
    local_rank: int | None
    node_rank: int | None  # NODE_RANK of a workload node
    job_id: str | None  # config.JOB_ID: the workload's job run


class GpuProcess(TypedDict):
    pid: int
    gpu_mem_mb: float | None
    name: str | None  # process name; None when the pid is not visible here (container)
    user: str | None
    command: str | None
    kernel: KernelOwner | None
    run: RunOwner | None


class XidError(TypedDict):
    t: float  # when the sampler saw it (unix seconds)
    xid: int


class GpuHealth(TypedDict):
    """Health of one GPU from NVML; ``None`` where the GPU does not report it."""

    sm_clock_mhz: int | None
    sm_clock_max_mhz: int | None
    mem_clock_mhz: int | None
    mem_clock_max_mhz: int | None
    throttle_reasons: list[str] | None  # active clock-event reasons, decoded
    fan_pct: float | None
    ecc_corrected: int | None  # volatile (since the driver loaded)
    ecc_uncorrected: int | None
    retired_pages_sbe: int | None  # pages retired for multiple single-bit errors
    retired_pages_dbe: int | None  # pages retired for a double-bit error
    retired_pages_pending: bool | None
    remapped_rows_correctable: int | None
    remapped_rows_uncorrectable: int | None
    row_remap_pending: bool | None
    row_remap_failure: bool | None
    xid_count: int | None  # XID errors since the sampler started; None: events not supported
    xid_errors: list[XidError]  # the most recent ones
    flags: list[str]  # computed: see health.py


class MigReading(TypedDict):
    index: int  # MIG device index on its GPU
    uuid: str | None
    mem_used_mb: float | None
    mem_total_mb: float | None


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
    health: GpuHealth | None  # latest sample only (not kept in the history)
    mig: list[MigReading]  # MIG instances of this GPU, latest sample only


class HostReading(TypedDict):
    cpu_pct: float | None
    mem_used_mb: float | None
    mem_total_mb: float | None


class Sample(TypedDict):
    t: float  # unix time, seconds
    node: str
    host: HostReading
    gpus: list[GpuReading]


class MigDevice(TypedDict):
    index: int  # MIG device index on its GPU
    uuid: str | None  # what CUDA_VISIBLE_DEVICES names it by ("MIG-…")
    name: str | None
    mem_total_mb: float | None


class Device(TypedDict):
    index: int
    name: str | None
    uuid: str | None
    mem_total_mb: float | None
    power_limit_w: float | None
    mig: list[MigDevice]


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
