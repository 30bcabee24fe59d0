"""A faithful fake of the pynvml calls jupyter-air makes, in the manner of gpustat's test suite.

Errors are the real ``pynvml.NVMLError`` subclasses with the real codes; every call is counted so a
test can assert that no NVML call happens while sampling is paused. Health readings (clocks,
throttle reasons, fan, ECC, retired pages, remapped rows), MIG instances and XID events (an event
set, ``xid()`` to raise one) are faked too, each of them able to be NotSupported.
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
class FakeMig:
    """A MIG instance of a FakeGpu."""

    uuid: str
    name: str = "NVIDIA A100-SXM4-40GB MIG 1g.5gb"
    mem: Any = (1_000 * MiB, 4_864 * MiB)
    lost: bool = False


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
    # health (an A100 at rest by default; fans: NotSupported, as on passively cooled boards)
    clocks: Any = (1410, 1215)  # (SM, memory) MHz now
    max_clocks: Any = (1410, 1215)
    throttle: Any = 0x1  # clock-event reason bits: gpu_idle
    fan: Any = NOT_SUPPORTED
    ecc: Any = (0, 0)  # volatile (corrected, uncorrected)
    retired: Any = ((), ())  # page addresses retired for (single-bit, double-bit) errors
    retired_pending: Any = 0
    remapped: Any = (0, 0, 0, 0)  # (correctable, uncorrectable, pending, failure)
    events: Any = True  # XID events delivered (an Err: registering fails with it)
    mig: list[FakeMig] | None = None  # None: MIG not supported; []: supported, off


class FakeNvml:
    """Stands in for the ``pynvml`` module."""

    NVMLError = real.NVMLError
    NVML_ERROR_NOT_SUPPORTED = real.NVML_ERROR_NOT_SUPPORTED
    NVML_ERROR_GPU_IS_LOST = real.NVML_ERROR_GPU_IS_LOST
    NVML_ERROR_LIBRARY_NOT_FOUND = real.NVML_ERROR_LIBRARY_NOT_FOUND
    NVML_ERROR_DRIVER_NOT_LOADED = real.NVML_ERROR_DRIVER_NOT_LOADED
    NVML_ERROR_NO_PERMISSION = real.NVML_ERROR_NO_PERMISSION
    NVML_ERROR_UNKNOWN = real.NVML_ERROR_UNKNOWN
    NVML_ERROR_TIMEOUT = real.NVML_ERROR_TIMEOUT
    NVML_TEMPERATURE_GPU = real.NVML_TEMPERATURE_GPU
    NVML_CLOCK_SM = real.NVML_CLOCK_SM
    NVML_CLOCK_MEM = real.NVML_CLOCK_MEM
    NVML_VOLATILE_ECC = real.NVML_VOLATILE_ECC
    NVML_MEMORY_ERROR_TYPE_CORRECTED = real.NVML_MEMORY_ERROR_TYPE_CORRECTED
    NVML_MEMORY_ERROR_TYPE_UNCORRECTED = real.NVML_MEMORY_ERROR_TYPE_UNCORRECTED
    NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS = (
        real.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
    )
    NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR = (
        real.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
    )
    NVML_DEVICE_MIG_ENABLE = real.NVML_DEVICE_MIG_ENABLE
    nvmlEventTypeXidCriticalError = real.nvmlEventTypeXidCriticalError

    def __init__(self, gpus: list[FakeGpu], init_error: int | None = None) -> None:
        self.gpus = gpus
        self.init_error = init_error
        self.calls: Counter[str] = Counter()
        self.initialized = False
        self._registered: set[int] = set()  # id() of GPUs whose XID events are delivered
        self._events: list[Any] = []
        self._event_sets = 0

    def xid(self, index: int, code: int) -> None:
        """GPU ``index`` reports XID error ``code`` (delivered at the next event-set wait)."""
        gpu = self.gpus[index]
        self._events.append(
            SimpleNamespace(
                device=gpu,
                eventType=real.nvmlEventTypeXidCriticalError,
                eventData=code,
                gpuInstanceId=0xFFFFFFFF,
                computeInstanceId=0xFFFFFFFF,
            )
        )

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

    def nvmlDeviceGetName(self, gpu: FakeGpu | FakeMig) -> str:
        return self._device("nvmlDeviceGetName", gpu, gpu.name)

    def nvmlDeviceGetUUID(self, gpu: FakeGpu | FakeMig) -> str:
        return self._device("nvmlDeviceGetUUID", gpu, gpu.uuid)

    def nvmlDeviceGetUtilizationRates(self, gpu: FakeGpu) -> Any:
        value = self._device("nvmlDeviceGetUtilizationRates", gpu, gpu.util)
        return SimpleNamespace(gpu=value[0], memory=value[1])

    def nvmlDeviceGetMemoryInfo(self, gpu: FakeGpu | FakeMig) -> Any:
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

    # health ----------------------------------------------------------------------------
    def nvmlDeviceGetClockInfo(self, gpu: FakeGpu, clock: int) -> int:
        value = self._device("nvmlDeviceGetClockInfo", gpu, gpu.clocks)
        return value[0] if clock == real.NVML_CLOCK_SM else value[1]

    def nvmlDeviceGetMaxClockInfo(self, gpu: FakeGpu, clock: int) -> int:
        value = self._device("nvmlDeviceGetMaxClockInfo", gpu, gpu.max_clocks)
        return value[0] if clock == real.NVML_CLOCK_SM else value[1]

    def nvmlDeviceGetCurrentClocksEventReasons(self, gpu: FakeGpu) -> int:
        return self._device("nvmlDeviceGetCurrentClocksEventReasons", gpu, gpu.throttle)

    def nvmlDeviceGetFanSpeed(self, gpu: FakeGpu) -> int:
        return self._device("nvmlDeviceGetFanSpeed", gpu, gpu.fan)

    def nvmlDeviceGetTotalEccErrors(self, gpu: FakeGpu, error_type: int, counter: int) -> int:
        assert counter == real.NVML_VOLATILE_ECC
        value = self._device("nvmlDeviceGetTotalEccErrors", gpu, gpu.ecc)
        return value[0] if error_type == real.NVML_MEMORY_ERROR_TYPE_CORRECTED else value[1]

    def nvmlDeviceGetRetiredPages(self, gpu: FakeGpu, cause: int) -> list[int]:
        value = self._device("nvmlDeviceGetRetiredPages", gpu, gpu.retired)
        single = cause == real.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
        return list(value[0] if single else value[1])

    def nvmlDeviceGetRetiredPagesPendingStatus(self, gpu: FakeGpu) -> int:
        return self._device("nvmlDeviceGetRetiredPagesPendingStatus", gpu, gpu.retired_pending)

    def nvmlDeviceGetRemappedRows(self, gpu: FakeGpu) -> tuple[int, int, int, int]:
        return tuple(self._device("nvmlDeviceGetRemappedRows", gpu, gpu.remapped))

    # MIG -------------------------------------------------------------------------------
    def nvmlDeviceGetMigMode(self, gpu: FakeGpu) -> list[int]:
        mode = NOT_SUPPORTED if gpu.mig is None else [1 if gpu.mig else 0] * 2
        return self._device("nvmlDeviceGetMigMode", gpu, mode)

    def nvmlDeviceGetMaxMigDeviceCount(self, gpu: FakeGpu) -> int:
        return self._device("nvmlDeviceGetMaxMigDeviceCount", gpu, 7 if gpu.mig else 0)

    def nvmlDeviceGetMigDeviceHandleByIndex(self, gpu: FakeGpu, index: int) -> FakeMig:
        migs = self._device("nvmlDeviceGetMigDeviceHandleByIndex", gpu, gpu.mig or [])
        if index >= len(migs):
            raise real.NVMLError(real.NVML_ERROR_NOT_FOUND)
        return migs[index]

    # events ----------------------------------------------------------------------------
    def nvmlEventSetCreate(self) -> str:
        self._check()
        self.calls["nvmlEventSetCreate"] += 1
        self._event_sets += 1
        return f"event-set-{self._event_sets}"

    def nvmlDeviceRegisterEvents(self, gpu: FakeGpu, types: int, event_set: str) -> None:
        self._device("nvmlDeviceRegisterEvents", gpu, gpu.events)
        assert types & real.nvmlEventTypeXidCriticalError
        self._registered.add(id(gpu))

    def nvmlEventSetWait(self, event_set: str, timeout_ms: int) -> Any:
        self._check()
        self.calls["nvmlEventSetWait"] += 1
        assert timeout_ms == 0, "the sampler's thread must never block on NVML events"
        for position, event in enumerate(self._events):
            if id(event.device) in self._registered:
                return self._events.pop(position)
        raise real.NVMLError(real.NVML_ERROR_TIMEOUT)

    def nvmlEventSetFree(self, event_set: str) -> None:
        self.calls["nvmlEventSetFree"] += 1

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
