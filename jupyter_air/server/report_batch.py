"""Reports that came over the agents' telemetry channels within a short while, stored together.

Why: a report stored the moment it comes finds the server cold. Between two reports the process
sleeps (64 nodes every 10 s: a report every 0.16 s), and validating the next report then takes
its CPU 4-5 times what it takes right after another one (0.30 ms against 0.065 ms for 5.8 KB,
bench/README.md, "Node telemetry"). Storing the reports of the last ``delay_s`` in one go pays
that once per batch instead of once per report. What it costs: a sample reaches the panels up
to ``delay_s`` later (the panels poll every 10 s), and an agent waits as long for an answer it
asked for.

A channel sends its next report only once the batch that holds its last one is stored (the
channel's reader waits on ``add``'s future), so a batch holds at most one report per channel,
and a channel's reports are stored in the order they came.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from ..telemetry.sender import MAX_BATCH_S

log = logging.getLogger(__name__)


class ReportBatch:
    """``add(store)``: ``store()`` runs with the others added within ``delay_s`` of the
    batch's first, on the event loop; the future is done once they all ran."""

    def __init__(self, delay_s: float) -> None:
        if not 0 < delay_s <= MAX_BATCH_S:
            raise ValueError(f"a batch waits more than 0 and at most {MAX_BATCH_S:g} s")
        self.delay_s = delay_s
        self._work: list[Callable[[], None]] = []
        self._done: asyncio.Future[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    def add(self, store: Callable[[], None]) -> asyncio.Future[None]:
        if self._done is None:
            loop = asyncio.get_running_loop()
            self._done = loop.create_future()
            self._timer = loop.call_later(self.delay_s, self._store)
        self._work.append(store)
        return self._done

    def store_now(self) -> None:
        """Store what waits now (the server stops: nothing it was sent is lost)."""
        if self._timer is not None:
            self._timer.cancel()
        self._store()

    def _store(self) -> None:
        work, done = self._work, self._done
        self._work, self._done, self._timer = [], None, None
        for store in work:
            try:
                store()
            except Exception:  # one report's failure is not its neighbours'
                log.exception("jupyter-air: storing a telemetry report failed")
        if done is not None and not done.done():
            done.set_result(None)
