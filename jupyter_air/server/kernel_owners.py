"""Which notebook owns which process: kernel PIDs mapped to kernel id, kernel name and notebook.

Built on the event loop from the server's kernel and session managers (both in memory; the session
store is async), then handed to the sampler thread, which walks a GPU process's ancestors to it.
"""

from __future__ import annotations

import logging
from typing import Any

from ..telemetry.samples import KernelOwner

log = logging.getLogger(__name__)


def kernel_pid(kernel: Any) -> int | None:
    """The OS pid of a local kernel; None for remote kernels (gateway, other provisioners)."""
    provisioner = getattr(kernel, "provisioner", None)
    for candidate in (
        getattr(provisioner, "pid", None),
        getattr(getattr(provisioner, "process", None), "pid", None),
    ):
        if isinstance(candidate, int) and candidate > 0:
            return candidate
    return None


async def kernel_owners(kernel_manager: Any, session_manager: Any) -> dict[int, KernelOwner]:
    path_by_kernel: dict[str, str | None] = {}
    if session_manager is not None:
        try:
            for session in await session_manager.list_sessions():
                kernel = session.get("kernel") or {}
                if kernel.get("id"):
                    path_by_kernel[kernel["id"]] = session.get("path")
        except Exception:  # a broken session store must not stop GPU monitoring
            log.debug("GPU Resources: could not list sessions", exc_info=True)
    owners: dict[int, KernelOwner] = {}
    if kernel_manager is None:
        return owners
    for kernel_id in list(kernel_manager.list_kernel_ids()):
        try:
            kernel = kernel_manager.get_kernel(kernel_id)
        except KeyError:  # culled between the two calls
            continue
        pid = kernel_pid(kernel)
        if pid is not None:
            owners[pid] = {
                "kernel_id": kernel_id,
                "kernel_name": getattr(kernel, "kernel_name", None),
                "path": path_by_kernel.get(kernel_id),
            }
    return owners
