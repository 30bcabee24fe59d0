"""The GPU telemetry service of one Jupyter server: one sampler, one history, one poll loop.

Created when the extension loads (cheap, nothing started); the poll loop starts on the first
request or hold, on the server's event loop. Builds the JSON the GPU API returns; the large bodies
(a panel opening on two hours of history) are assembled from pre-encoded samples and compressed off
the event loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import gzip
import json
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ..telemetry import History, Hold, PollLoop, Sampler, create_backend
from ..telemetry.hold_files import live_holds
from ..telemetry.samples import KernelOwner

GZIP_MIN_BYTES = 1024
OFFLOAD_MIN_BYTES = 64 * 1024


class GpuService:
    def __init__(
        self,
        *,
        backend: str = "auto",
        simulated_gpus: int = 4,
        interval_s: float = 10.0,
        history_s: float = 7200.0,
        idle_timeout_s: float = 300.0,
        node: str | None = None,
        owners: Callable[[], Awaitable[dict[int, KernelOwner]]] | None = None,
    ) -> None:
        self.sampler = Sampler(create_backend(backend, simulated_gpus), node=node or None)
        self.history = History(history_s, interval_s)
        self.poll_loop = PollLoop(
            self.sampler.sample,
            self.history,
            interval_s=interval_s,
            idle_timeout_s=idle_timeout_s,
            context=owners,
            close=self.sampler.close,
        )
        self._hold_watcher: asyncio.Task[None] | None = None
        self._file_holds: dict[str, Hold] = {}

    def watch_hold_files(self, data_dir: Path, interval_s: float = 2.0) -> None:
        """Hold sampling awake while processes of this node (kernels running `.distributed()`,
        workload supervisors) say they train, through files in ``<data_dir>/gpu-holds``.
        Call on the running event loop; runs until ``stop()``."""
        if self._hold_watcher is None:
            self._hold_watcher = asyncio.get_running_loop().create_task(
                self._watch_hold_files(data_dir, interval_s), name="jupyter-air-gpu-holds"
            )

    async def _watch_hold_files(self, data_dir: Path, interval_s: float) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                live = await loop.run_in_executor(None, live_holds, data_dir)
                for name, reason in live.items():
                    if name not in self._file_holds:
                        self._file_holds[name] = self.hold(reason)
                for name in [n for n in self._file_holds if n not in live]:
                    self._file_holds.pop(name).release()
                await asyncio.sleep(interval_s)
        finally:
            for hold in self._file_holds.values():
                hold.release()
            self._file_holds.clear()

    def ensure_started(self) -> None:
        """Start the poll loop on the running event loop (idempotent)."""
        if not self.poll_loop.running:
            self.poll_loop.start()

    def hold(self, reason: str) -> Hold:
        """Keep sampling while something managed by jupyter-air runs on this node."""
        self.ensure_started()
        return self.poll_loop.hold(reason)

    async def stop(self) -> None:
        watcher, self._hold_watcher = self._hold_watcher, None
        if watcher is not None:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher
        await self.poll_loop.stop()

    def payload(self, since: float | None = None, *, resumed: bool = False) -> str:
        """The GPU API's JSON: devices, backend, settings, state, latest sample, history."""
        info = self.sampler.info()
        latest = self.history.latest()
        entries = self.history.since(since)
        loop = self.poll_loop
        meta: dict[str, Any] = {
            **info,
            "interval_s": loop.interval_s,
            "history_s": self.history.window_s,
            "idle_timeout_s": loop.idle_timeout_s,
            "paused": loop.paused,
            "resumed": resumed,
            "held_by": loop.held_by,
            "error": loop.last_error,
            "now": round(time.time(), 3),
            "latest": latest.sample if latest is not None else None,
        }
        head = json.dumps(meta, separators=(",", ":"), allow_nan=False)
        return head[:-1] + ',"samples":[' + ",".join(e.wire for e in entries) + "]}"

    async def body(
        self, since: float | None, *, resumed: bool, accept_gzip: bool
    ) -> tuple[bytes, bool]:
        """The encoded body and whether it is gzip-compressed; big bodies compressed off-loop."""
        text = self.payload(since, resumed=resumed)
        raw = text.encode()
        if not accept_gzip or len(raw) < GZIP_MIN_BYTES:
            return raw, False
        if len(raw) < OFFLOAD_MIN_BYTES:
            return gzip.compress(raw, compresslevel=5), True
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, gzip.compress, raw, 5), True
