"""A real kernel of the test's Jupyter server, to see what kernels are told, a notebook's
session opened as JupyterLab opens it, and a kernel of the test's own to run cells in (imported
by tests; no fixtures here)."""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path, PurePosixPath
from typing import Any

import psutil


async def kernel_environ(serverapp, timeout: float = 60.0) -> dict[str, str]:
    """The environment of a kernel started by the server's kernel manager, as a notebook's is
    (read from the kernel's process); the kernel is shut down before returning."""
    manager = serverapp.kernel_manager
    kernel_id = await manager.start_kernel(kernel_name="python3")
    try:
        kernel = manager.get_kernel(kernel_id)
        deadline = time.monotonic() + timeout
        while getattr(kernel.provisioner, "pid", None) is None:
            assert time.monotonic() < deadline, "the kernel did not start"
            await asyncio.sleep(0.1)
        return dict(psutil.Process(kernel.provisioner.pid).environ())
    finally:
        await manager.shutdown_kernel(kernel_id, now=True)


@contextlib.contextmanager
def running_kernel(cwd: Path, timeout: float) -> Iterator[tuple[Any, Any]]:
    """A python3 kernel started in ``cwd`` and its client (channels started), once ready within
    ``timeout`` seconds; both stopped on leaving."""
    from jupyter_client.manager import KernelManager

    km = KernelManager(kernel_name="python3")
    km.start_kernel(cwd=str(cwd))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=timeout)
        yield km, kc
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


async def open_notebook(jp_fetch, path: str) -> dict:
    """The session of the notebook ``path``, its kernel started, as JupyterLab opens one (through
    the server's API); the caller deletes it."""
    notebook = {
        "path": path,
        "type": "notebook",
        "name": PurePosixPath(path).name,
        "kernel": {"name": "python3"},
    }
    answer = await jp_fetch("api", "sessions", method="POST", body=json.dumps(notebook))
    return json.loads(answer.body)
