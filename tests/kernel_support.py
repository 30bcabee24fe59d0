"""A real kernel of the test's Jupyter server, to see what kernels are told, and a notebook's
session opened as JupyterLab opens it (imported by tests; no fixtures here)."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import PurePosixPath

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
