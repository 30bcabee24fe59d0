"""GPU health from NVML: clocks against their maximums, throttle reasons, fan, ECC errors,
retired pages and remapped rows, XID errors, and the flags that tell a person that their GPU,
not their code, is the problem.

Every reading goes through the NVML backend's ``call`` (NotSupported → ``None``, never 0; a lost
GPU raises). XID errors come from an NVML event set that the sampler's own thread drains with a
0 ms wait at each sample, so nothing blocks and no thread is added; events that happen while
sampling is paused wait in the set and are counted at the next sample.
"""

from __future__ import annotations

import contextlib
import time
from collections import deque
from collections.abc import Callable, Sequence
from typing import Any

from .samples import GpuHealth, XidError

Call = Callable[..., Any]  # (what, fn, *args) → value or None

XID_KEPT = 16  # most recent XID errors kept per GPU
XID_DRAIN_MAX = 256  # events read per sample at most
XID_CRITICAL = 0x8  # nvmlEventTypeXidCriticalError

# NVML clock-event ("throttle") reason bits, decoded (nvmlClocksEventReason*)
THROTTLE_REASONS = {
    0x1: "gpu_idle",
    0x2: "applications_clocks_setting",
    0x4: "sw_power_cap",
    0x8: "hw_slowdown",
    0x10: "sync_boost",
    0x20: "sw_thermal_slowdown",
    0x40: "hw_thermal_slowdown",
    0x80: "hw_power_brake_slowdown",
    0x100: "display_clock_setting",
}
THERMAL = {"sw_thermal_slowdown", "hw_thermal_slowdown"}
HW_SLOWDOWN = {"hw_slowdown", "hw_power_brake_slowdown"}

# the flags a GPU can carry, for people and panels
FLAG_ECC = "ecc_uncorrected"
FLAG_XID = "xid"
FLAG_THERMAL = "thermal_throttling"
FLAG_HW_SLOWDOWN = "hw_slowdown"
FLAG_REMAP_FAILURE = "row_remap_failure"
FLAGS = (FLAG_ECC, FLAG_XID, FLAG_THERMAL, FLAG_HW_SLOWDOWN, FLAG_REMAP_FAILURE)


def decode_throttle_reasons(mask: int) -> list[str]:
    """The names of the active reasons in an NVML clock-event bit mask, lowest bit first."""
    names: list[str] = []
    bit = 1
    while bit <= mask:
        if mask & bit:
            names.append(THROTTLE_REASONS.get(bit, f"reason_0x{bit:x}"))
        bit <<= 1
    return names


def flags_of(health: GpuHealth) -> list[str]:
    flags: list[str] = []
    if health["ecc_uncorrected"]:
        flags.append(FLAG_ECC)
    if health["xid_count"]:
        flags.append(FLAG_XID)
    reasons = set(health["throttle_reasons"] or ())
    if reasons & THERMAL:
        flags.append(FLAG_THERMAL)
    if reasons & HW_SLOWDOWN:
        flags.append(FLAG_HW_SLOWDOWN)
    if health["row_remap_failure"]:
        flags.append(FLAG_REMAP_FAILURE)
    return flags


def max_clocks(nvml: Any, call: Call, handle: Any) -> tuple[int | None, int | None]:
    """(SM, memory) maximum clocks in MHz: fixed for a GPU, read once."""
    sm = call("max SM clock", nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_SM)
    mem = call("max memory clock", nvml.nvmlDeviceGetMaxClockInfo, handle, nvml.NVML_CLOCK_MEM)
    return sm, mem


def read_health(
    nvml: Any,
    call: Call,
    handle: Any,
    maximums: tuple[int | None, int | None],
    xid: XidLog | None,
) -> GpuHealth:
    """One GPU's health now."""
    # the older name is the one nvidia-ml-py < 12.535.108 has
    reasons_fn = getattr(nvml, "nvmlDeviceGetCurrentClocksEventReasons", None)
    if reasons_fn is None:
        reasons_fn = nvml.nvmlDeviceGetCurrentClocksThrottleReasons
    mask = call("throttle reasons", reasons_fn, handle)
    ecc_fn, volatile = nvml.nvmlDeviceGetTotalEccErrors, nvml.NVML_VOLATILE_ECC
    corrected = call("ECC errors", ecc_fn, handle, nvml.NVML_MEMORY_ERROR_TYPE_CORRECTED, volatile)
    uncorrected = call(
        "ECC errors", ecc_fn, handle, nvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, volatile
    )
    pages_fn = nvml.nvmlDeviceGetRetiredPages
    single = nvml.NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
    sbe = call("retired pages", pages_fn, handle, single)
    double = nvml.NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
    dbe = call("retired pages", pages_fn, handle, double)
    pending = call("retired pages", nvml.nvmlDeviceGetRetiredPagesPendingStatus, handle)
    remapped = call("remapped rows", nvml.nvmlDeviceGetRemappedRows, handle)
    fan = call("fan", nvml.nvmlDeviceGetFanSpeed, handle)
    health: GpuHealth = {
        "sm_clock_mhz": call("SM clock", nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_SM),
        "sm_clock_max_mhz": maximums[0],
        "mem_clock_mhz": call(
            "memory clock", nvml.nvmlDeviceGetClockInfo, handle, nvml.NVML_CLOCK_MEM
        ),
        "mem_clock_max_mhz": maximums[1],
        "throttle_reasons": decode_throttle_reasons(int(mask)) if mask is not None else None,
        "fan_pct": float(fan) if fan is not None else None,
        "ecc_corrected": _int(corrected),
        "ecc_uncorrected": _int(uncorrected),
        "retired_pages_sbe": len(sbe) if sbe is not None else None,
        "retired_pages_dbe": len(dbe) if dbe is not None else None,
        "retired_pages_pending": bool(pending) if pending is not None else None,
        "remapped_rows_correctable": _int(remapped[0]) if remapped is not None else None,
        "remapped_rows_uncorrectable": _int(remapped[1]) if remapped is not None else None,
        "row_remap_pending": bool(remapped[2]) if remapped is not None else None,
        "row_remap_failure": bool(remapped[3]) if remapped is not None else None,
        "xid_count": xid.count if xid is not None else None,
        "xid_errors": list(xid.recent) if xid is not None else [],
        "flags": [],
    }
    health["flags"] = flags_of(health)
    return health


def _int(value: Any) -> int | None:
    return int(value) if value is not None else None


class XidLog:
    """The XID errors one GPU had since the sampler started."""

    def __init__(self) -> None:
        self.count = 0
        self.recent: deque[XidError] = deque(maxlen=XID_KEPT)

    def add(self, xid: int, t: float) -> None:
        self.count += 1
        self.recent.append({"t": round(t, 3), "xid": xid})


class XidEvents:
    """An NVML event set registered for XID errors on every GPU that supports them.

    Created and drained on the sampler's thread; ``logs[index]`` is None for a GPU whose XID
    events NVML does not deliver (so its count is unknown, not 0).
    """

    def __init__(
        self,
        nvml: Any,
        handles: Sequence[Any],
        uuids: Sequence[str | None],
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._nvml = nvml
        self._clock = clock
        self._by_uuid = {uuid: i for i, uuid in enumerate(uuids) if uuid}
        self.logs: list[XidLog | None] = [None] * len(handles)
        self._set: Any = None
        try:
            self._set = nvml.nvmlEventSetCreate()
        except Exception:  # NotSupported, or an old driver: no XID reporting on this node
            return
        for index, handle in enumerate(handles):
            if handle is None:
                continue
            try:
                nvml.nvmlDeviceRegisterEvents(
                    handle, getattr(nvml, "nvmlEventTypeXidCriticalError", XID_CRITICAL), self._set
                )
            except Exception:
                continue
            self.logs[index] = XidLog()

    def drain(self) -> None:
        """Read the events waiting now (0 ms wait: never blocks)."""
        if self._set is None or not any(self.logs):
            return
        nvml = self._nvml
        for _ in range(XID_DRAIN_MAX):
            try:
                event = nvml.nvmlEventSetWait(self._set, 0)
            except nvml.NVMLError:  # NVML_ERROR_TIMEOUT: nothing (more) is waiting
                return
            if not int(event.eventType) & XID_CRITICAL:
                continue
            index = self._index_of(event.device)
            log = self.logs[index] if index is not None else None
            if log is not None:
                log.add(int(event.eventData), self._clock())

    def _index_of(self, device: Any) -> int | None:
        try:
            uuid = self._nvml.nvmlDeviceGetUUID(device)
        except Exception:
            return None
        return self._by_uuid.get(uuid.decode() if isinstance(uuid, bytes) else str(uuid))

    def close(self) -> None:
        if self._set is not None:
            with contextlib.suppress(Exception):  # shutting down: nothing to do with an error
                self._nvml.nvmlEventSetFree(self._set)
            self._set = None
