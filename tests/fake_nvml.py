"""A faithful fake of the pynvml calls jupyter-air makes, in the manner of gpustat's test suite.

Errors are the real ``pynvml.NVMLError`` subclasses with the real codes; every call is counted so a
test can assert that no NVML call happens while sampling is paused.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

import pynvml as real

MiB = 1024 * 1024


@dataclass(frozen=True)
class Err:
    """A reading that fails with this NVML error code."""

    code: int


NOT_SUPPORTED = Err(real.NVML_ERROR_NOT_SUPPORTED)
UNKNOWN = Err(real.NVML_ERROR_UNKNOWN)


@dataclass
class FakeGpu:
    name: str = "NVIDIA A100-SXM4-40GB"
    uuid: str = "GPU-00000000-0000-0000-0000-000000000000"
    util: Any = (50, 20)  # (gpu %, memory %) or an error code
    mem: Any = (10_000 * MiB, 40_960 * MiB)  # (used, total) bytes or an error code
    temp: Any = 60
    power_mw: Any = 250_000
    limit_mw: Any = 400_000
    compute: list[tuple[int, int | None]] = field(default_factory=list)  # (pid, used bytes)
    graphics: list[tuple[int, int | None]] = field(default_factory=list)
    lost: bool = False


class FakeNvml:
    """Stands in for the ``pynvml`` module."""

    NVMLError = real.NVMLError
    NVML_ERROR_NOT_SUPPORTED = real.NVML_ERROR_NOT_SUPPORTED
    NVML_ERROR_GPU_IS_LOST = real.NVML_ERROR_GPU_IS_LOST
    NVML_ERROR_LIBRARY_NOT_FOUND = real.NVML_ERROR_LIBRARY_NOT_FOUND
    NVML_ERROR_DRIVER_NOT_LOADED = real.NVML_ERROR_DRIVER_NOT_LOADED
    NVML_ERROR_NO_PERMISSION = real.NVML_ERROR_NO_PERMISSION
    NVML_ERROR_UNKNOWN = real.NVML_ERROR_UNKNOWN
    NVML_TEMPERATURE_GPU = real.NVML_TEMPERATURE_GPU

    def __init__(self, gpus: list[FakeGpu], init_error: int | None = None) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.calls: Counter[str] = Counter()
        self.initialized = False

    @property
    def total_calls(self) -> int:
        return sum(self.calls.values())

    # library ---------------------------------------------------------------------------
    def nvmlInit(self) -> None:
        self.calls["nvmlInit"] += 1
        if self.init_error is not None:
            raise real.NVMLError(self.init_error)
        self.initialized = True

    def nvmlShutdown(self) -> None:
        self.calls["nvmlShutdown"] += 1
        self.initialized = False

    def nvmlSystemGetDriverVersion(self) -> str:
        self.calls["nvmlSystemGetDriverVersion"] += 1
        return "560.35.03"

    def nvmlDeviceGetCount(self) -> int:
        self._check()
        self.calls["nvmlDeviceGetCount"] += 1
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, index: int) -> FakeGpu:
        self._check()
        self.calls["nvmlDeviceGetHandleByIndex"] += 1
        if index >= len(self.gpus):
            raise real.NVMLError(real.NVML_ERROR_INVALID_ARGUMENT)
        return self.gpus[index]

    # device ----------------------------------------------------------------------------
    def _device(self, what: str, gpu: FakeGpu, value: Any) -> Any:
        self._check()
        self.calls[what] += 1
        if gpu.lost:
            raise real.NVMLError(real.NVML_ERROR_GPU_IS_LOST)
        if isinstance(value, Err):
            raise real.NVMLError(value.code)
        return value

    def nvmlDeviceGetName(self, gpu: FakeGpu) -> str:
        return self._device("nvmlDeviceGetName", gpu, gpu.name)

    def nvmlDeviceGetUUID(self, gpu: FakeGpu) -> str:
        return self._device("nvmlDeviceGetUUID", gpu, gpu.uuid)

    def nvmlDeviceGetUtilizationRates(self, gpu: FakeGpu) -> Any:
        value = self._device("nvmlDeviceGetUtilizationRates", gpu, gpu.util)
        return SimpleNamespace(gpu=value[0], memory=value[1])

    def nvmlDeviceGetMemoryInfo(self, gpu: FakeGpu) -> Any:
        value = self._device("nvmlDeviceGetMemoryInfo", gpu, gpu.mem)
        return SimpleNamespace(used=value[0], total=value[1], free=value[1] - value[0])

    def nvmlDeviceGetTemperature(self, gpu: FakeGpu, sensor: int) -> int:
        assert sensor == real.NVML_TEMPERATURE_GPU
        return self._device("nvmlDeviceGetTemperature", gpu, gpu.temp)

    def nvmlDeviceGetPowerUsage(self, gpu: FakeGpu) -> int:
        return self._device("nvmlDeviceGetPowerUsage", gpu, gpu.power_mw)

    def nvmlDeviceGetEnforcedPowerLimit(self, gpu: FakeGpu) -> int:
        return self._device("nvmlDeviceGetEnforcedPowerLimit", gpu, gpu.limit_mw)

    def nvmlDeviceGetComputeRunningProcesses(self, gpu: FakeGpu) -> list[Any]:
        procs = self._device("nvmlDeviceGetComputeRunningProcesses", gpu, gpu.compute)
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in procs]

    def nvmlDeviceGetGraphicsRunningProcesses(self, gpu: FakeGpu) -> list[Any]:
        procs = self._device("nvmlDeviceGetGraphicsRunningProcesses", gpu, gpu.graphics)
        return [SimpleNamespace(pid=pid, usedGpuMemory=used) for pid, used in procs]

    def _check(self) -> None:
        if not self.initialized:
            raise real.NVMLError(real.NVML_ERROR_UNINITIALIZED)


def three_gpus() -> FakeNvml:
    """The standard fixture: 3 GPUs, GPU 1 without a temperature sensor (NotSupported)."""
    return FakeNvml(
        [
            FakeGpu(
                uuid="GPU-aaaaaaaa-0000-0000-0000-000000000000",
                util=(87, 40),
                mem=(30_000 * MiB, 40_960 * MiB),
                temp=71,
                power_mw=312_500,
            ),
            FakeGpu(
                uuid="GPU-bbbbbbbb-0000-0000-0000-000000000001", util=(5, 1), temp=NOT_SUPPORTED
            ),
            FakeGpu(
                uuid="GPU-cccccccc-0000-0000-0000-000000000002",
                util=(0, 0),
                mem=(0, 40_960 * MiB),
                temp=35,
                power_mw=52_000,
            ),
        ]
    )
