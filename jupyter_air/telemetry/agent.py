"""The node agent: the server's own sampler, on another node, reporting to the Jupyter server.

It pushes: every interval it sends its new samples to the Jupyter server — over one websocket kept
open (``<base_url>air/api/telemetry/channel``, a report a message), or by POST to
``<base_url>air/api/telemetry/ingest`` on a keep-alive connection where the server has no channel —
with its node's token (``agent_tokens.py``) by its sender (``sender.py``); the answer says whether
to keep sampling (the idle rule of the whole cluster: while no panel asks, the agent only sends a
heartbeat each interval and makes no NVML call, unless a managed run on its node holds it awake
through a hold file) and when to report next. Samples that could not be sent are kept (bounded)
and sent with the next report that gets through. Pushing needs no port open on the nodes and works
from behind NAT, as every node can already reach the Jupyter server; the cost on the server is in
bench/.

No Jupyter imports: the agent runs anywhere the ``jupyter_air.telemetry`` package does, as
``air agent`` or inside another process (a Ray actor) with ``start()``/``stop()`` and a ``send``
of its own.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path

from .hold_files import live_holds
from .models import MAX_HOLDS, MAX_SAMPLES, AgentInfo, IngestRequest, NodeInfo, Sample
from .sampler import Sampler
from .sender import (
    ANSWER_EVERY_HEADER,
    AUTH_SCHEME,
    CHANNEL_PATH,
    INGEST_PATH,
    MAX_BYTES_HEADER,
    AgentRejected,
    HttpSender,
    ReportRefused,
    Send,
    SendFailed,
)

__all__ = [  # the sender's names too, where they were before sender.py
    "ANSWER_EVERY_HEADER",
    "AUTH_SCHEME",
    "CHANNEL_PATH",
    "INGEST_PATH",
    "MAX_BYTES_HEADER",
    "AgentRejected",
    "HttpSender",
    "NodeAgent",
    "ReportRefused",
    "Send",
    "SendFailed",
]

log = logging.getLogger(__name__)

MIN_NEXT_S = 0.05
MAX_NEXT_S = 3600.0
TEXT_MAX = 1000  # hold reasons and errors are cut to fit the report's limits


class NodeAgent:
    """Samples this node and reports to the server until ``stop()``.

    ``holds_dir``: the data folder whose ``gpu-holds/`` the managed runs of this node write
    (None: nothing holds this agent awake). ``clock`` is monotonic time, for tests.
    """

    def __init__(
        self,
        sampler: Sampler,
        send: Send,
        *,
        interval_s: float = 10.0,
        holds_dir: str | Path | None = None,
        max_buffer: int = MAX_SAMPLES,
        max_batch: int = 60,
        version: str = "dev",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not MIN_NEXT_S <= interval_s <= MAX_NEXT_S:
            raise ValueError(f"interval must be between {MIN_NEXT_S} and {MAX_NEXT_S:g} seconds")
        self.sampler = sampler
        self.send = send
        self.interval_s = interval_s
        self.holds_dir = Path(holds_dir) if holds_dir else None
        self.max_batch = min(max_batch, MAX_SAMPLES)
        self._info = AgentInfo(version=version, interval_s=interval_s, started=time.time())
        self._clock = clock
        self._buffer: deque[Sample] = deque(maxlen=max_buffer)
        self._told_to_sample = False  # the server's last word (agents start idle)
        self._idle_timeout_s = 300.0
        self._last_contact: float | None = None
        self._last_sample: float | None = None
        self._info_sent: NodeInfo | None = None
        self._error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.reports = 0  # answered reports (samples or heartbeats)
        self.samples_taken = 0
        self.rejected: str | None = None  # why the server refused this agent, once it has
        self.last_send_error: str | None = None

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Report on a thread of its own (the sampler's thread) until ``stop()``."""
        if self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="air-node-agent", daemon=True)
        self._thread.start()

    def halt(self) -> None:
        """Ask the agent to stop after the current round (safe from a signal handler)."""
        self._stop.set()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop reporting, close the sampler (NVML) and the sender's connection."""
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout_s)
        self.sampler.close()
        close = getattr(self.send, "close", None)
        if callable(close):
            close()

    def run_forever(self) -> None:
        """Report on this thread until ``stop()`` or a rejection (raised)."""
        self._run()
        if self.rejected:
            raise AgentRejected(self.rejected)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                delay = self.step()
            except AgentRejected as error:
                self.rejected = str(error)
                log.error("jupyter-air agent: %s", error)
                return
            self._stop.wait(delay)

    # one round -----------------------------------------------------------------------------
    def step(self) -> float:
        """Sample when due and wanted, report, and return the seconds until the next round."""
        holds = self._holds()
        wanted = self._wants_samples(holds)
        now = self._clock()
        if wanted and (self._last_sample is None or now - self._last_sample >= self.interval_s):
            self._take_sample(now)
        batch = list(self._buffer)[: self.max_batch]
        request = IngestRequest(
            node=self.sampler.node,
            agent=self._info,
            sampling=wanted,
            holds=[reason[:TEXT_MAX] for reason in holds[:MAX_HOLDS]],
            error=self._error[:TEXT_MAX] if self._error else None,
            info=self._news(),
            samples=batch,
        )
        try:
            response = self.send(request)
        except ReportRefused as error:
            log.warning("jupyter-air agent: report dropped: %s", error)
            self._drop(len(batch))
            self.last_send_error = str(error)
            return self.interval_s
        except SendFailed as error:
            if self.last_send_error != str(error):
                log.warning("jupyter-air agent: cannot report (will retry): %s", error)
            self.last_send_error = str(error)
            return self.interval_s
        self.last_send_error = None
        self.reports += 1
        self._last_contact = self._clock()
        self._drop(len(batch))
        if request.info is not None:
            self._info_sent = request.info
        if not response.have_info:
            self._info_sent = None  # the server forgot it (restarted): send it again
        self._idle_timeout_s = response.idle_timeout_s
        woke = response.sample and not wanted
        self._told_to_sample = response.sample
        if self._buffer or woke:
            return 0.0  # more to send, or a panel just asked: sample and report now
        next_s = min(max(response.next_s, MIN_NEXT_S), MAX_NEXT_S)
        if wanted and self._last_sample is not None:
            next_s = min(next_s, max(0.0, self._last_sample + self.interval_s - self._clock()))
        return next_s

    def _wants_samples(self, holds: list[str]) -> bool:
        if holds:
            return True
        if not self._told_to_sample:
            return False
        # out of touch with the server for longer than its idle timeout: nobody watches
        return self._last_contact is None or (
            self._clock() - self._last_contact < self._idle_timeout_s
        )

    def _holds(self) -> list[str]:
        if self.holds_dir is None:
            return []
        return sorted(live_holds(self.holds_dir).values())

    def _take_sample(self, now: float) -> None:
        try:
            self._buffer.append(Sample.model_validate(self.sampler.sample()))
            self._error = None
            self.samples_taken += 1
        except Exception as error:  # report it; the next round tries again
            if self._error != str(error):
                log.exception("jupyter-air agent: sampling failed")
            self._error = str(error)
        self._last_sample = now

    def _news(self) -> NodeInfo | None:
        """The node's description when the server does not have it as it is now."""
        if self.sampler.count == 0:
            return None  # not started: describing it would start NVML
        info = NodeInfo.model_validate(self.sampler.info())
        return None if info == self._info_sent else info

    def _drop(self, count: int) -> None:
        for _ in range(min(count, len(self._buffer))):
            self._buffer.popleft()
