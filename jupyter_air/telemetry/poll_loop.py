"""The idle-aware poll loop: one per process, however many panels or tabs ask for data.

- Samples every ``interval_s`` on a dedicated worker thread, never on the event loop.
- Pauses when no client has asked for data for ``idle_timeout_s`` and nothing holds it awake: while
  paused no sample (and no NVML call) is taken. The next request resumes it with a fresh sample at
  once. A pause shows in the history as a gap; no point is invented for it.
- ``hold(reason)`` keeps it awake (a training run or workload in progress), so the history of a run
  is complete even when nobody watched it live.
- Concurrent requests for a fresh sample share one sample.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, dataclass, field
from typing import Any

from ..tasks import cancel_and_wait
from .history import Entry, History
from .samples import Sample

log = logging.getLogger(__name__)


class Hold:
    """Keeps a poll loop awake until released; a context manager too."""

    def __init__(self, poll_loop: PollLoop, reason: str) -> None:
        self._poll_loop = poll_loop
        self.reason = reason
        self.released = False

    def release(self) -> None:
        if not self.released:
            self.released = True
            self._poll_loop._release(self)

    def __enter__(self) -> Hold:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


@dataclass(eq=False)
class PollLoop:
    """``sample(context)`` takes one sample on the worker thread, ``context()`` (awaited on the
    event loop, when given) says what it needs, and ``close()`` closes what samples once the
    loop stops."""

    sample: Callable[[Any], Sample]
    history: History
    _: KW_ONLY
    interval_s: float = 10.0
    idle_timeout_s: float = 300.0
    context: Callable[[], Awaitable[Any]] | None = None
    close: Callable[[], None] | None = None
    min_refresh_gap_s: float = 1.0
    fresh_sample_timeout_s: float = 10.0
    # what idle, cadence and the refresh gap are measured with (monotonic seconds); a test
    # sets a clock it moves itself, so that no rule depends on how fast the machine is
    clock: Callable[[], float] = time.monotonic
    samples_taken: int = field(default=0, init=False)
    last_error: str | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        if self.interval_s <= 0:
            raise ValueError("poll interval must be positive")
        self.min_refresh_gap_s = min(self.min_refresh_gap_s, self.interval_s / 2)
        self._lock = threading.Lock()  # guards the holds, which other threads may add or release
        self._holds: list[Hold] = []
        self._last_activity: float | None = None
        self._last_sample: float | None = None
        self._in_flight: asyncio.Future[Entry | None] | None = None
        self._paused = True
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[None] | None = None
        self._wake: asyncio.Event | None = None
        self._executor: ThreadPoolExecutor | None = None

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start on the running event loop. Starts paused until a client asks or a hold arrives."""
        if self._task is not None:
            return
        self._loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="air-telemetry")
        self._task = self._loop.create_task(self._run(), name="jupyter-air-gpu-poll-loop")

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    async def stop(self) -> None:
        task, self._task = self._task, None
        await cancel_and_wait(task)
        if self._in_flight is not None:
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await asyncio.wait_for(asyncio.shield(self._in_flight), timeout=5)
        executor, self._executor = self._executor, None
        if executor is not None:
            if self.close is not None and self._loop is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        self._loop.run_in_executor(executor, self.close), timeout=5
                    )
            executor.shutdown(wait=False, cancel_futures=True)
        self._paused = True

    # state ---------------------------------------------------------------------------------
    @property
    def paused(self) -> bool:
        return self._paused

    @property
    def held_by(self) -> list[str]:
        with self._lock:
            return [hold.reason for hold in self._holds]

    @property
    def watched(self) -> bool:
        """Whether a client asked for data within the idle timeout (holds not counted): what
        tells node agents to sample."""
        if self._last_activity is None:
            return False
        return self.idle_timeout_s <= 0 or (
            self.clock() - self._last_activity < self.idle_timeout_s
        )

    def _idle(self) -> bool:
        with self._lock:
            if self._holds:
                return False
        return not self.watched

    # clients -------------------------------------------------------------------------------
    def touch(self) -> bool:
        """Record client activity; wake the loop if it was paused. Returns whether it was."""
        self._last_activity = self.clock()
        was_paused = self._paused
        if was_paused:
            self._paused = False
            self._signal_wake()
        return was_paused

    async def on_request(self) -> None:
        """Called for every client request: counts as activity; a paused loop resumes with a
        fresh sample before the request is answered."""
        if self.touch() or self._last_sample is None:
            await self.fresh_sample()

    async def refresh(self) -> Entry | None:
        """Take a sample now (a Refresh button). Concurrent or near-simultaneous refreshes share
        one sample; a refresh within ``min_refresh_gap_s`` of the last sample returns that one."""
        self.touch()
        if (
            (self._in_flight is None or self._in_flight.done())
            and self._last_sample is not None
            and self.clock() - self._last_sample < self.min_refresh_gap_s
        ):
            return self.history.latest()
        return await self.fresh_sample()

    async def fresh_sample(self) -> Entry | None:
        """A sample taken now, waiting at most ``fresh_sample_timeout_s`` for it."""
        try:
            return await asyncio.wait_for(
                asyncio.shield(self._sample()), timeout=self.fresh_sample_timeout_s
            )
        except TimeoutError:
            self.last_error = (
                f"Sampling took longer than {self.fresh_sample_timeout_s:g} s; showing the "
                "last values."
            )
            return self.history.latest()

    # holds ---------------------------------------------------------------------------------
    def hold(self, reason: str) -> Hold:
        """Keep sampling while ``reason`` holds (thread-safe). Release with ``Hold.release()``."""
        hold = Hold(self, reason)
        with self._lock:
            self._holds.append(hold)
        self._signal_wake()
        return hold

    def _release(self, hold: Hold) -> None:
        with self._lock:
            if hold in self._holds:
                self._holds.remove(hold)

    def _signal_wake(self) -> None:
        loop, wake = self._loop, self._wake
        if loop is None or wake is None or loop.is_closed():
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            wake.set()
        else:
            loop.call_soon_threadsafe(wake.set)

    # sampling ------------------------------------------------------------------------------
    def _sample(self) -> asyncio.Future[Entry | None]:
        """The sample in flight, or a new one."""
        if self._in_flight is None or self._in_flight.done():
            self._in_flight = asyncio.ensure_future(self._take_sample())
        return self._in_flight

    async def _take_sample(self) -> Entry | None:
        assert self._loop is not None and self._executor is not None, "poll loop not started"
        try:
            context = await self.context() if self.context is not None else None
            sample = await self._loop.run_in_executor(self._executor, self.sample, context)
        except asyncio.CancelledError:
            raise
        except Exception as error:
            if self.last_error != str(error):
                log.exception("GPU Resources: sampling failed")
            self.last_error = str(error)
            return None
        finally:
            self._last_sample = self.clock()
        self.last_error = None
        self.samples_taken += 1
        return self.history.append(sample)

    async def _run(self) -> None:
        assert self._wake is not None
        while True:
            if self._idle():
                self._paused = True
                self._wake.clear()
                await self._wake.wait()
                continue
            self._paused = False
            due = (
                0.0
                if self._last_sample is None
                else self._last_sample + self.interval_s - self.clock()
            )
            if due > 0:
                self._wake.clear()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._wake.wait(), timeout=due)
                continue
            # shielded: stopping the loop lets a sample in flight finish before NVML closes
            await asyncio.shield(self._sample())
