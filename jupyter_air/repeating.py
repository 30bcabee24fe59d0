"""Work repeated on a thread of its own, a call every few seconds until stopped: a supervisor's
heartbeat, log uploads and checkpoint scans, and a run's system metrics."""

from __future__ import annotations

import threading
from collections.abc import Callable


class Repeating:
    """``call()`` every ``interval_s`` seconds on a daemon thread named ``name``, from ``start()``
    until ``stop()``, or until a call returns False."""

    def __init__(self, call: Callable[[], bool | None], interval_s: float, name: str) -> None:
        self.call = call
        self.interval_s = interval_s
        self.name = name
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float) -> None:
        """No more calls; waits up to ``timeout_s`` seconds for one under way to end."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout=timeout_s)

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            if self.call() is False:
                return
