"""A simulated GPU backend: plausible, changing readings for N GPUs.

Only used when asked for by name (``gpu_backend = "simulated"`` or ``JUPYTER_AIR_GPU_BACKEND``),
for demos and UI tests on machines without GPUs; the panel labels it "simulated". Kernel processes
the server knows about are shown as GPU processes so the process table can be seen working.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Iterable

from .samples import Device, GpuProcess, GpuReading, r1

_MEM_TOTAL_MB = 81559.0  # an 80 GB card as NVML reports it
_POWER_LIMIT_W = 700.0


class SimulatedBackend:
    kind = "simulated"
    reason: str | None = None

    def __init__(self, count: int = 4, seed: int | None = None) -> None:
        self.count = count
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
        now = time.time()
        pids = sorted(set(known_pids))
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
            readings.append(
                {
                    "index": i,
                    "util_pct": r1(util),
                    "mem_util_pct": r1(util * 0.6),
                    "mem_used_mb": r1(self._mem[i]),
                    "mem_total_mb": _MEM_TOTAL_MB,
                    "temp_c": r1(self._temp[i]),
                    "power_w": r1(70 + util / 100 * (_POWER_LIMIT_W - 100)),
                    "power_limit_w": _POWER_LIMIT_W,
                    "lost": False,
                    "processes": processes,
                }
            )
        return readings
