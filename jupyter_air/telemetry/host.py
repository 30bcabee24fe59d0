"""Host CPU and memory readings through psutil."""

from __future__ import annotations

import time

import psutil

from .samples import HostReading, mb, r1


class HostSampler:
    """Reads host CPU % and memory.

    ``psutil.cpu_percent(None)`` averages since the previous call; after a long pause that average
    would describe the pause, not now, so a short fresh measurement is taken instead.
    """

    def __init__(self, max_gap_s: float = 30.0) -> None:
        self._last_call: float | None = None
        self._max_gap_s = max_gap_s

    def read(self) -> HostReading:
        now = time.monotonic()
        cpu: float | None
        try:
            if self._last_call is None or now - self._last_call > self._max_gap_s:
                cpu = psutil.cpu_percent(interval=0.1)
            else:
                cpu = psutil.cpu_percent(interval=None)
        except Exception:  # psutil can fail inside odd sandboxes; show a hole, not a crash
            cpu = None
        self._last_call = time.monotonic()
        try:
            vm = psutil.virtual_memory()
            used, total = vm.total - vm.available, vm.total
        except Exception:
            used = total = None
        return {"cpu_pct": r1(cpu), "mem_used_mb": mb(used), "mem_total_mb": mb(total)}
