"""GPU and host telemetry: the one GPU inventory, NVML / simulated / no-GPU backends with GPU
health, a bounded history, an idle-aware poll loop, the node agent that reports another node's
samples to the Jupyter server, and the payload models they exchange.

Pure Python with no Jupyter imports, so the same code samples on the Jupyter server and on worker
nodes. Nothing here touches NVML or starts a thread at import time.
"""

from .backends import create_backend
from .contract import GpuBackend, NoGpuBackend
from .history import History
from .poll_loop import Hold, PollLoop
from .sampler import Sampler

__all__ = [
    "GpuBackend",
    "History",
    "Hold",
    "NoGpuBackend",
    "PollLoop",
    "Sampler",
    "create_backend",
]
