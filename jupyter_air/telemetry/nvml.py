"""NVML backend through nvidia-ml-py (module ``pynvml``).

Per GPU: utilisation (GPU and memory bandwidth), memory, temperature, power and its limit, the
processes using it, its health (``health.py``) and the memory of its MIG instances. A metric NVML
reports as NotSupported is ``None``; a GPU that is lost is marked ``lost`` while the others keep
reporting. NVML sees every GPU of the node whatever ``CUDA_VISIBLE_DEVICES`` says, which is what a
node-level view wants; the devices are described by the one inventory (``inventory.py``).
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

from .contract import BackendUnavailable
from .health import XidEvents, max_clocks, read_health
from .inventory import MigInstance, describe_gpu, mig_handles, text
from .samples import Device, GpuProcess, GpuReading, MigReading, mb, r1

log = logging.getLogger(__name__)

_NOT_AVAILABLE = (1 << 64) - 1  # NVML_VALUE_NOT_AVAILABLE for unsigned long long


class _GpuLost(Exception):
    pass


def unavailable_reason(nvml: ModuleType, error: Exception) -> str:
    """A sentence for people from an NVML initialisation error."""
    value = getattr(error, "value", None)
    if value == getattr(nvml, "NVML_ERROR_LIBRARY_NOT_FOUND", 12):
        return (
            "No NVIDIA driver found: the NVML library (libnvidia-ml.so) is not on this machine or "
            "not visible in this container. Host CPU and memory are still shown."
        )
    if value == getattr(nvml, "NVML_ERROR_DRIVER_NOT_LOADED", 9):
        return (
            "The NVIDIA driver is installed but not loaded (check `nvidia-smi`). Host CPU and "
            "memory are still shown."
        )
    if value == getattr(nvml, "NVML_ERROR_NO_PERMISSION", 4):
        return (
            "No permission to query the NVIDIA driver (is /dev/nvidiactl readable by this user?)."
        )
    return f"NVML could not start: {error}. Host CPU and memory are still shown."


class NvmlBackend:
    kind = "nvml"

    def __init__(self, nvml: ModuleType | None = None) -> None:
        self._nvml_module = nvml
        self._nvml: Any = None
        self._handles: list[Any] = []
        self._devices: list[Device] = []
        self._mig: list[list[tuple[MigInstance, Any]]] = []  # MIG instances and handles per GPU
        self._max_clocks: list[tuple[int | None, int | None]] = []
        self._xid: XidEvents | None = None
        self._warned: set[tuple[int, str]] = set()
        self.reason: str | None = None
        self.driver_version: str | None = None

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        if self._nvml is not None:
            return
        try:
            nvml = self._nvml_module or importlib.import_module("pynvml")
        except ImportError:
            raise BackendUnavailable(
                "nvidia-ml-py is not installed in the Jupyter server's environment "
                "(pip install nvidia-ml-py)."
            ) from None
        try:
            nvml.nvmlInit()
        except nvml.NVMLError as error:
            raise BackendUnavailable(unavailable_reason(nvml, error)) from None
        except OSError as error:  # a broken library file
            raise BackendUnavailable(f"NVML could not be loaded: {error}.") from None
        try:
            count = nvml.nvmlDeviceGetCount()
        except nvml.NVMLError as error:
            nvml.nvmlShutdown()
            raise BackendUnavailable(unavailable_reason(nvml, error)) from None
        if count == 0:
            nvml.nvmlShutdown()
            raise BackendUnavailable("The NVIDIA driver is loaded but reports no GPUs.")
        self._nvml = nvml
        try:
            self.driver_version = text(nvml.nvmlSystemGetDriverVersion())
        except nvml.NVMLError:
            self.driver_version = None
        self._handles = [self._handle(i) for i in range(count)]
        self._mig = [[] for _ in range(count)]
        self._max_clocks = [(None, None)] * count
        self._devices = [self._describe(i) for i in range(count)]
        self._xid = XidEvents(nvml, self._handles, [d["uuid"] for d in self._devices])

    def close(self) -> None:
        if self._xid is not None:
            self._xid.close()
            self._xid = None
        if self._nvml is not None:
            with contextlib.suppress(Exception):  # shutting down: nothing to do with an error
                self._nvml.nvmlShutdown()
        self._nvml = None
        self._handles = []

    # reading -------------------------------------------------------------------------------
    def devices(self) -> list[Device]:
        return list(self._devices)

    def read(self, known_pids: Iterable[int] = ()) -> list[GpuReading]:
        if self._xid is not None:
            self._xid.drain()
        readings: list[GpuReading] = []
        for index in range(len(self._handles)):
            try:
                readings.append(self._read_one(index))
            except _GpuLost:
                readings.append(_lost_reading(index, self._devices[index]))
        return readings

    def _handle(self, index: int) -> Any:
        try:
            return self._nvml.nvmlDeviceGetHandleByIndex(index)
        except self._nvml.NVMLError as error:
            self._warn_once(index, "handle", error)
            return None

    def _describe(self, index: int) -> Device:
        handle = self._handles[index]
        migs = mig_handles(self._nvml, handle) if handle is not None else []
        info = describe_gpu(self._nvml, index, handle, migs)
        self._mig[index] = [(m, h) for m, (_, h) in zip(info.mig, migs, strict=True)]
        device: Device = {
            "index": index,
            "name": info.name,
            "uuid": info.uuid,
            "mem_total_mb": None,
            "power_limit_w": None,
            "mig": [
                {"index": m.index, "uuid": m.uuid, "name": m.name, "mem_total_mb": m.mem_total_mb}
                for m in info.mig
            ],
        }
        if handle is None:
            return device
        try:
            memory = self._call(index, "memory", self._nvml.nvmlDeviceGetMemoryInfo, handle)
            limit = self._call(
                index, "power_limit", self._nvml.nvmlDeviceGetEnforcedPowerLimit, handle
            )
            self._max_clocks[index] = max_clocks(self._nvml, self._caller(index), handle)
        except _GpuLost:
            return device
        device["mem_total_mb"] = mb(memory.total) if memory is not None else None
        device["power_limit_w"] = r1(limit / 1000) if limit is not None else None
        return device

    def _caller(self, index: int) -> Callable[..., Any]:
        """``_call`` for one GPU, as health readings take it: ``(what, fn, *args)``."""
        return lambda what, fn, *args: self._call(index, what, fn, *args)

    def _call(self, index: int, what: str, fn: Callable[..., Any], *args: Any) -> Any:
        """One NVML call: NotSupported and other per-metric errors → None; lost GPU → _GpuLost."""
        nvml = self._nvml
        try:
            return fn(*args)
        except nvml.NVMLError as error:
            value = getattr(error, "value", None)
            if value == nvml.NVML_ERROR_NOT_SUPPORTED:
                return None
            if value == nvml.NVML_ERROR_GPU_IS_LOST:
                self._warn_once(index, "lost", error)
                raise _GpuLost from None
            self._warn_once(index, what, error)
            return None

    def _warn_once(self, index: int, what: str, error: Exception) -> None:
        if (index, what) not in self._warned:
            self._warned.add((index, what))
            log.warning("GPU %d: reading %s failed: %s", index, what, error)

    def _read_one(self, index: int) -> GpuReading:
        handle = self._handles[index]
        if handle is None:
            handle = self._handles[index] = self._handle(index)
            if handle is None:
                raise _GpuLost
            self._devices[index] = self._describe(index)
        nvml = self._nvml
        util = self._call(index, "utilization", nvml.nvmlDeviceGetUtilizationRates, handle)
        memory = self._call(index, "memory", nvml.nvmlDeviceGetMemoryInfo, handle)
        temp = self._call(
            index, "temperature", nvml.nvmlDeviceGetTemperature, handle, nvml.NVML_TEMPERATURE_GPU
        )
        power = self._call(index, "power", nvml.nvmlDeviceGetPowerUsage, handle)
        limit = self._call(index, "power_limit", nvml.nvmlDeviceGetEnforcedPowerLimit, handle)
        processes = self._processes(index, handle)
        xid = self._xid.logs[index] if self._xid is not None else None
        health = read_health(nvml, self._caller(index), handle, self._max_clocks[index], xid)
        return {
            "index": index,
            "util_pct": r1(util.gpu) if util is not None else None,
            "mem_util_pct": r1(util.memory) if util is not None else None,
            "mem_used_mb": mb(memory.used) if memory is not None else None,
            "mem_total_mb": mb(memory.total) if memory is not None else None,
            "temp_c": r1(temp),
            "power_w": r1(power / 1000) if power is not None else None,
            "power_limit_w": r1(limit / 1000) if limit is not None else None,
            "lost": False,
            "processes": processes,
            "health": health,
            "mig": self._mig_readings(index),
        }

    def _mig_readings(self, index: int) -> list[MigReading]:
        readings: list[MigReading] = []
        for mig, handle in self._mig[index]:
            memory = self._call(index, "MIG memory", self._nvml.nvmlDeviceGetMemoryInfo, handle)
            readings.append(
                {
                    "index": mig.index,
                    "uuid": mig.uuid,
                    "mem_used_mb": mb(memory.used) if memory is not None else None,
                    "mem_total_mb": mb(memory.total) if memory is not None else None,
                }
            )
        return readings

    def _processes(self, index: int, handle: Any) -> list[GpuProcess]:
        nvml = self._nvml
        by_pid: dict[int, float | None] = {}
        for what, fn in (
            ("compute processes", nvml.nvmlDeviceGetComputeRunningProcesses),
            ("graphics processes", nvml.nvmlDeviceGetGraphicsRunningProcesses),
        ):
            for proc in self._call(index, what, fn, handle) or []:
                used = getattr(proc, "usedGpuMemory", None)
                used_mb = None if used is None or used >= _NOT_AVAILABLE else mb(used)
                previous = by_pid.get(proc.pid)
                if proc.pid not in by_pid or (used_mb or 0) > (previous or 0):
                    by_pid[proc.pid] = used_mb
        return [
            {
                "pid": pid,
                "gpu_mem_mb": used,
                "name": None,
                "user": None,
                "command": None,
                "kernel": None,
                "run": None,
            }
            for pid, used in sorted(by_pid.items())
        ]


def _lost_reading(index: int, device: Device) -> GpuReading:
    return {
        "index": index,
        "util_pct": None,
        "mem_util_pct": None,
        "mem_used_mb": None,
        "mem_total_mb": device.get("mem_total_mb"),
        "temp_c": None,
        "power_w": None,
        "power_limit_w": None,
        "lost": True,
        "processes": [],
        "health": None,
        "mig": [],
    }
