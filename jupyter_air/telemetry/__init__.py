"""GPU and host telemetry: the one GPU inventory, NVML / simulated / no-GPU backends with GPU
health, a bounded history, an idle-aware poll loop, the node agent that reports another node's
samples to the Jupyter server, and the payload models they exchange.

Pure Python with no Jupyter imports, so the same code samples on the Jupyter server and on worker
nodes. Nothing here touches NVML or starts a thread at import time. Public names are imported on
first use: a process that needs only the GPU inventory (``air run``, ``air list runs``) does not
import the poll loop and asyncio.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .backends import create_backend
    from .contract import GpuBackend, NoGpuBackend
    from .history import History
    from .poll_loop import Hold, PollLoop
    from .sampler import Sampler

_EXPORTS = {
    "GpuBackend": "contract",
    "History": "history",
    "Hold": "poll_loop",
    "NoGpuBackend": "contract",
    "PollLoop": "poll_loop",
    "Sampler": "sampler",
    "create_backend": "backends",
}

__all__ = [
    "GpuBackend",
    "History",
    "Hold",
    "NoGpuBackend",
    "PollLoop",
    "Sampler",
    "create_backend",
]

__getattr__ = lazy_exports(__name__, _EXPORTS)
