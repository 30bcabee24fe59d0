"""A simulated GPU backend: plausible, changing readings for N GPUs.

Only used when asked for by name (``gpu_backend = "simulated"`` or ``config.GPU_BACKEND``),
for demos and UI tests on machines without GPUs; the panel labels it "simulated". The kernels the
server knows about, and the processes they started (a ``.distributed()`` call's ranks), are shown
as GPU processes so the process table and its run links can be seen working. Faults can be asked
for (``config.SIMULATED_FAULTS``, see ``parse_faults``) so the panel's health flags can be
seen, and tested, without a failing GPU.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Iterable, Mapping

import psutil

from ..config import SIMULATED_FAULTS
from .health import flags_of
from .samples import Device, GpuHealth, GpuProcess, GpuReading, r1

_MEM_TOTAL_MB = 81559.0  # an 80 GB card as NVML reports it
_POWER_LIMIT_W = 700.0
_SM_CLOCK_MAX_MHZ = 1980
_MEM_CLOCK_MAX_MHZ = 2619
_XID = 79  # "GPU has fallen off the bus", the XID people meet most

# the faults a simulated GPU can be given, and the health reading each one changes
FAULTS = ("xid", "ecc", "thermal", "hw_slowdown", "row_remap_failure")
MAX_DESCENDANTS = 256  # processes started by kernels shown at most (per sample)


def parse_faults(text: str, count: int, source: str = SIMULATED_FAULTS.name) -> dict[int, set[str]]:
    """Faults from ``"1:xid,2:ecc"`` (GPU index, a colon, one of ``FAULTS``; several entries
    separated by commas, a GPU may be named more than once). ``""`` means none."""
    faults: dict[int, set[str]] = {}
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        index_text, sep, fault = entry.partition(":")
        fault = fault.strip().lower()
        if not sep or not index_text.strip().isdigit():
            raise ValueError(
                f"{source}: {entry!r} is not GPU:FAULT (e.g. '1:xid'); FAULT is one of "
                f"{', '.join(FAULTS)}"
            )
        index = int(index_text)
        if index >= count:
            raise ValueError(f"{source}: {entry!r} names GPU {index}, but there are {count} GPUs")
        if fault not in FAULTS:
            raise ValueError(
                f"{source}: {entry!r}: unknown fault {fault!r}; choose one of {', '.join(FAULTS)}"
            )
        faults.setdefault(index, set()).add(fault)
    return faults


def _descendants(pids: Iterable[int]) -> set[int]:
    """The processes started by ``pids`` (children, grandchildren…), at most MAX_DESCENDANTS."""
    found: set[int] = set()
    for pid in pids:
        try:
            children = psutil.Process(pid).children(recursive=True)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
        for child in children:
            if len(found) >= MAX_DESCENDANTS:
                return found
            found.add(child.pid)
    return found


class SimulatedBackend:
    kind = "simulated"
    reason: str | None = None

    def __init__(
        self,
        count: int = 4,
        seed: int | None = None,
        faults: Mapping[int, Iterable[str]] | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.count = count
        self.faults = {index: set(names) for index, names in (faults or {}).items()}
        self._clock = clock
        self._started_at = clock()
        self._random = random.Random(seed)
        self._util = [self._random.uniform(20, 90) for _ in range(count)]
        self._temp = [45.0 + i for i in range(count)]
        self._mem = [self._random.uniform(0.2, 0.7) * _MEM_TOTAL_MB for _ in range(count)]

    def start(self) -> None:
        return None

    def close(self) -> None:
        return None

    def devices(self) -> list[Device]:
        return [
            {
                "index": i,
                "name": "Simulated H100 80GB HBM3",
                "uuid": f"GPU-51m0000-0000-0000-0000-{i:012d}",
                "mem_total_mb": _MEM_TOTAL_MB,
                "power_limit_w": _POWER_LIMIT_W,
                "mig": [],
            }
            for i in range(self.count)
        ]

    def read(self, known_pids: Iterable[int] = ()) -> list[GpuReading]:
        now = self._clock()
        kernels = set(known_pids)
        pids = sorted(kernels | _descendants(kernels)) if kernels else []
        readings: list[GpuReading] = []
        for i in range(self.count):
            # a slow wave (training epochs) plus a random walk (batches), clipped to 0..100
            wave = 25 * math.sin(now / 90 + i)
            self._util[i] = min(100.0, max(0.0, self._util[i] + self._random.gauss(0, 6)))
            util = min(100.0, max(0.0, 0.6 * self._util[i] + 0.4 * (55 + wave)))
            target_temp = 35 + 0.5 * util
            self._temp[i] += 0.3 * (target_temp - self._temp[i])
            drift = self._random.gauss(0, 0.01) * _MEM_TOTAL_MB
            low, high = 0.05 * _MEM_TOTAL_MB, 0.97 * _MEM_TOTAL_MB
            self._mem[i] = min(high, max(low, self._mem[i] + drift))
            processes: list[GpuProcess] = [
                {
                    "pid": pid,
                    "gpu_mem_mb": r1(1024.0 + (pid % 7) * 512.0),
                    "name": None,
                    "user": None,
                    "command": None,
                    "kernel": None,
                    "run": None,
                }
                for pid in pids
                if pid % self.count == i
            ]
            power = 70 + util / 100 * (_POWER_LIMIT_W - 100)
            readings.append(
                {
                    "index": i,
                    "util_pct": r1(util),
                    "mem_util_pct": r1(util * 0.6),
                    "mem_used_mb": r1(self._mem[i]),
                    "mem_total_mb": _MEM_TOTAL_MB,
                    "temp_c": r1(self._temp[i]),
                    "power_w": r1(power),
                    "power_limit_w": _POWER_LIMIT_W,
                    "lost": False,
                    "processes": processes,
                    "health": self._health(i, util, power),
                    "mig": [],
                }
            )
        return readings

    def _health(self, index: int, util: float, power: float) -> GpuHealth:
        """What NVML would say of a healthy H100 at this load, with the faults asked for."""
        faults = self.faults.get(index, set())
        reasons = ["gpu_idle"] if util < 5 else []
        if power > 0.95 * _POWER_LIMIT_W:
            reasons.append("sw_power_cap")
        if "hw_slowdown" in faults:
            reasons.append("hw_slowdown")
        if "thermal" in faults:
            reasons.append("hw_thermal_slowdown")
        slowed = bool({"hw_slowdown", "thermal"} & faults)
        sm_clock = int(_SM_CLOCK_MAX_MHZ * (0.5 if slowed else 0.6 + 0.4 * util / 100))
        health: GpuHealth = {
            "sm_clock_mhz": sm_clock,
            "sm_clock_max_mhz": _SM_CLOCK_MAX_MHZ,
            "mem_clock_mhz": _MEM_CLOCK_MAX_MHZ,
            "mem_clock_max_mhz": _MEM_CLOCK_MAX_MHZ,
            "throttle_reasons": reasons,
            "fan_pct": None,  # passively cooled, like a real H100 SXM
            "ecc_corrected": 3 if "ecc" in faults else 0,
            "ecc_uncorrected": 1 if "ecc" in faults else 0,
            "retired_pages_sbe": None,  # Hopper remaps rows instead of retiring pages
            "retired_pages_dbe": None,
            "retired_pages_pending": None,
            "remapped_rows_correctable": 0,
            "remapped_rows_uncorrectable": 1 if "row_remap_failure" in faults else 0,
            "row_remap_pending": False,
            "row_remap_failure": "row_remap_failure" in faults,
            "xid_count": 1 if "xid" in faults else 0,
            "xid_errors": [{"t": round(self._started_at, 3), "xid": _XID}]
            if "xid" in faults
            else [],
            "flags": [],
        }
        health["flags"] = flags_of(health)
        return health
