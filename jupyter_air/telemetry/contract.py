"""The GPU backend contract: what a backend (NVML, simulated, none) offers the sampler.

Its own module so that the backends and the code choosing one (``backends.py``) both depend on it
and not on each other.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from .samples import Device, GpuReading


class BackendUnavailable(Exception):
    """The backend cannot run here; the message is the reason shown to people."""


class GpuBackend(Protocol):
    kind: str  # "nvml" | "simulated" | "none"
    reason: str | None  # why there is no GPU data, for kind "none"

    def start(self) -> None: ...

    def devices(self) -> list[Device]: ...

    def read(self, known_pids: Iterable[int] = ()) -> list[GpuReading]: ...

    def close(self) -> None: ...


class NoGpuBackend:
    """No GPU data, with a human reason; host metrics still flow through the sampler."""

    kind = "none"

    def __init__(self, reason: str) -> None:
        self.reason: str | None = reason

    def start(self) -> None:
        return None

    def devices(self) -> list[Device]:
        return []

    def read(self, known_pids: Iterable[int] = ()) -> list[GpuReading]:
        return []

    def close(self) -> None:
        return None
