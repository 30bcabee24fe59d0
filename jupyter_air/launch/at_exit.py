"""The ``.distributed()`` calls running in this kernel, stopped when it exits.

A call is held here for the time it runs (``stopped_at_exit``); when the interpreter exits
meanwhile (the kernel shut down or restarted), its nodes are stopped. Its MLflow run ends
KILLED by the tracking module's own exit hook.
"""

from __future__ import annotations

import atexit
import contextlib
import threading
from collections.abc import Iterator
from typing import Protocol


class Stoppable(Protocol):
    def stop_now(self) -> None: ...


_running: set[Stoppable] = set()
_lock = threading.Lock()
_registered = False


@contextlib.contextmanager
def stopped_at_exit(call: Stoppable) -> Iterator[None]:
    """Stop ``call`` if the interpreter exits in this block."""
    global _registered
    with _lock:
        _running.add(call)
        if not _registered:
            atexit.register(_stop_running)
            _registered = True
    try:
        yield
    finally:
        with _lock:
            _running.discard(call)


def _stop_running() -> None:
    with _lock:
        calls = list(_running)
    for call in calls:
        with contextlib.suppress(Exception):
            call.stop_now()
