"""GPU backends: what reads the GPUs (NVML, a simulation, or nothing) and how one is chosen.

A backend is created cheaply and does its first real work in ``start()``, which the sampler calls on
its worker thread at the first sample, never at import or on the event loop.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Protocol

from .samples import Device, GpuReading

BACKEND_ENV = "JUPYTER_AIR_GPU_BACKEND"
SIMULATED_GPUS_ENV = "JUPYTER_AIR_SIMULATED_GPUS"
BACKEND_CHOICES = ("auto", "nvml", "simulated", "none")


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


def resolve_backend_kind(configured: str) -> str:
    """The backend asked for: the environment variable wins over configuration."""
    kind = (os.environ.get(BACKEND_ENV) or configured or "auto").strip().lower()
    if kind not in BACKEND_CHOICES:
        raise ValueError(
            f"Unknown GPU backend {kind!r} (from {BACKEND_ENV} or JupyterAir.gpu_backend): "
            f"choose one of {', '.join(BACKEND_CHOICES)}."
        )
    return kind


def resolve_simulated_gpus(configured: int) -> int:
    raw = os.environ.get(SIMULATED_GPUS_ENV)
    if raw is None or raw.strip() == "":
        return configured
    try:
        count = int(raw)
    except ValueError:
        raise ValueError(f"{SIMULATED_GPUS_ENV}={raw!r}: must be a whole number of GPUs") from None
    if not 0 <= count <= 64:
        raise ValueError(f"{SIMULATED_GPUS_ENV}={raw!r}: must be between 0 and 64")
    return count


def create_backend(kind: str = "auto", simulated_gpus: int = 4) -> GpuBackend:
    """A backend for ``kind``. ``auto`` means NVML (falling back to "none" with a reason).

    The simulated backend is only ever used when asked for by name.
    """
    kind = resolve_backend_kind(kind)
    if kind == "simulated":
        from .simulated import SimulatedBackend

        return SimulatedBackend(resolve_simulated_gpus(simulated_gpus))
    if kind == "none":
        return NoGpuBackend("GPU monitoring is turned off (gpu_backend = 'none').")
    from .nvml import NvmlBackend

    return NvmlBackend()
