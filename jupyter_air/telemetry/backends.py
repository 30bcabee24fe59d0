"""Choosing a GPU backend (NVML, a simulation, or nothing) from configuration and environment.

The contract every backend meets is in ``contract.py``. A backend is created cheaply and does its
first real work in ``start()``, which the sampler calls on its worker thread at the first sample,
never at import or on the event loop.
"""

from __future__ import annotations

from ..config import GPU_BACKEND, SIMULATED_FAULTS, SIMULATED_GPUS
from .contract import GpuBackend, NoGpuBackend

BACKEND_ENV = GPU_BACKEND.name
SIMULATED_GPUS_ENV = SIMULATED_GPUS.name
SIMULATED_FAULTS_ENV = SIMULATED_FAULTS.name
BACKEND_CHOICES = ("auto", "nvml", "simulated", "none")


def resolve_backend_kind(configured: str) -> str:
    """The backend asked for: the environment variable wins over configuration."""
    kind = (GPU_BACKEND.text() or configured or "auto").strip().lower()
    if kind not in BACKEND_CHOICES:
        raise ValueError(
            f"Unknown GPU backend {kind!r} (from {BACKEND_ENV} or JupyterAir.gpu_backend): "
            f"choose one of {', '.join(BACKEND_CHOICES)}."
        )
    return kind


def resolve_simulated_gpus(configured: int) -> int:
    raw = SIMULATED_GPUS.text()
    if raw is None:
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
        from .simulated import SimulatedBackend, parse_faults

        count = resolve_simulated_gpus(simulated_gpus)
        faults = parse_faults(SIMULATED_FAULTS.text() or "", count, SIMULATED_FAULTS_ENV)
        return SimulatedBackend(count, faults=faults)
    if kind == "none":
        return NoGpuBackend("GPU monitoring is turned off (gpu_backend = 'none').")
    from .nvml import NvmlBackend

    return NvmlBackend()
