"""One telemetry sample: host readings, GPU readings, and who the GPU processes are.

Runs on the poll loop's worker thread. The backend is started at the first sample; a backend that
cannot start (no driver, no library) is replaced by a "none" backend carrying the reason, logged
once, so host metrics keep flowing and nothing retries in a loop.
"""

from __future__ import annotations

import logging
import re
import socket
import time
from collections.abc import Callable, Mapping
from typing import Any

from .attribution import RunOwners
from .contract import BackendUnavailable, GpuBackend, NoGpuBackend
from .host import HostSampler
from .processes import describe
from .samples import Device, KernelOwner, Sample

log = logging.getLogger(__name__)


def default_node_name() -> str:
    """The host name, as a node name (letters, digits, '.', '_', '-'; at most 128)."""
    name = re.sub(r"[^A-Za-z0-9._-]", "-", socket.gethostname()).lstrip("._-")[:128]
    return name or "node"


class Sampler:
    def __init__(
        self,
        backend: GpuBackend,
        node: str | None = None,
        host: HostSampler | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.backend: GpuBackend = backend
        self.node = node or default_node_name()
        self._host = host or HostSampler()
        self._clock = clock
        self._started = False
        self._runs = RunOwners()
        self.count = 0

    def _ensure_started(self) -> None:
        if self._started:
            return
        self._started = True
        try:
            self.backend.start()
        except BackendUnavailable as error:
            log.info("GPU Resources: no GPU data: %s", error)
            self.backend = NoGpuBackend(str(error))
        except Exception as error:  # never let a broken driver take the server down
            log.exception("GPU Resources: GPU backend failed to start")
            self.backend = NoGpuBackend(f"The GPU backend failed to start: {error}")

    def sample(self, owners: Mapping[int, KernelOwner] | None = None) -> Sample:
        self._ensure_started()
        owners = owners or {}
        gpus = self.backend.read(known_pids=owners.keys())
        for gpu in gpus:
            if gpu.get("processes"):
                gpu["processes"] = describe(gpu["processes"], owners, self._runs)
        self._runs.keep_only({p["pid"] for gpu in gpus for p in gpu.get("processes", ())})
        self.count += 1
        return {
            "t": round(self._clock(), 3),
            "node": self.node,
            "host": self._host.read(),
            "gpus": gpus,
        }

    def info(self) -> dict[str, Any]:
        """Backend kind, the reason when there is no GPU data, and the device list."""
        devices: list[Device] = self.backend.devices() if self._started else []
        return {
            "backend": self.backend.kind,
            "reason": self.backend.reason,
            "devices": devices,
            "node": self.node,
            "driver_version": getattr(self.backend, "driver_version", None),
        }

    def close(self) -> None:
        if self._started:
            self.backend.close()
