"""The node agent: the server's own sampler, on another node, reporting to the Jupyter server.

It pushes: every interval it sends its new samples to the Jupyter server — over one websocket kept
open (``<base_url>air/api/telemetry/channel``, a report a message), or by POST to
``<base_url>air/api/telemetry/ingest`` on a keep-alive connection where the server has no channel —
with its node's token (``agent_tokens.py``); the answer says whether to keep sampling (the idle
rule of the whole cluster: while no panel asks, the agent only sends a heartbeat each interval
and makes no NVML call, unless a managed run on its node holds it awake through a hold file) and
when to report next. Samples that could not be sent are kept (bounded) and sent with the next
report that gets through. Pushing needs no port open on the nodes and works from behind NAT, as
every node can already reach the Jupyter server; the cost on the server is in bench/.

No Jupyter imports: the agent runs anywhere the ``jupyter_air.telemetry`` package does, as
``air agent`` or inside another process (a Ray actor) with ``start()``/``stop()`` and a ``send``
of its own.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import ssl
import struct
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .hold_files import live_holds
from .models import (
    MAX_HOLDS,
    MAX_SAMPLES,
    AgentInfo,
    IngestRequest,
    IngestResponse,
    NodeInfo,
    Sample,
)
from .sampler import Sampler

log = logging.getLogger(__name__)

INGEST_PATH = "air/api/telemetry/ingest"
CHANNEL_PATH = "air/api/telemetry/channel"
MAX_BYTES_HEADER = "X-Air-Max-Report-Bytes"  # the channel's limit, told when it opens
AUTH_SCHEME = "AirAgent"
REJECTED = (401, 403, 404, 409)  # the agent is refused: retrying cannot help
REFUSED = (400, 413)  # one report is refused: it is dropped, not resent
MAX_RESPONSE_BYTES = 64 * 1024
MIN_NEXT_S = 0.05
MAX_NEXT_S = 3600.0
TEXT_MAX = 1000  # hold reasons and errors are cut to fit the report's limits

Send = Callable[[IngestRequest], IngestResponse]


class AgentRejected(Exception):
    """The server refused this agent (token, node name, authorisation): retrying cannot help."""


class ReportRefused(Exception):
    """The server refused one report (malformed, too large): it is dropped, not resent."""


class SendFailed(Exception):
    """The server could not be reached or failed; the report is sent again later."""


class _NoChannel(Exception):
    """The server has no telemetry channel (an older jupyter-air): report by POST instead."""


class HttpSender:
    """``send`` to a Jupyter server, authenticated by the node's agent token, over one
    connection kept open from report to report: the server's telemetry channel (a websocket at
    ``CHANNEL_PATH``, one message a report), or — where the server has none (an older
    jupyter-air), or ``channel=False`` — POSTs to ``INGEST_PATH`` on a keep-alive connection.
    A connection that the server closed meanwhile (a restart, an idle timeout) is opened again
    once for the same report; the server skips samples it already has, so a report that got
    through before the connection broke is not stored twice. ``close()`` closes it."""

    def __init__(
        self, server_url: str, token: str, timeout_s: float = 10.0, *, channel: bool = True
    ) -> None:
        base = server_url if server_url.endswith("/") else server_url + "/"
        self.url = base + INGEST_PATH
        parts = urllib.parse.urlsplit(base)
        ws_scheme = "wss" if parts.scheme == "https" else "ws"
        self.channel_url = urllib.parse.urlunsplit(
            (ws_scheme, parts.netloc, parts.path + CHANNEL_PATH, "", "")
        )
        self._parts = parts
        self._token = token
        self.timeout_s = timeout_s
        self.transport = "channel" if channel else "post"  # what the next report uses
        self.connections = 0  # connections opened so far (a reused one is not counted again)
        self._ws: Any = None  # websocket.WebSocket
        self._max_bytes: int | None = None  # the server's limit, told when the channel opens
        self._http: http.client.HTTPConnection | None = None

    def __call__(self, request: IngestRequest) -> IngestResponse:
        body = request.model_dump_json().encode()
        if self.transport == "channel":
            try:
                return self._over_channel(body)
            except _NoChannel:
                log.info("jupyter-air agent: %s has no telemetry channel; POST instead", self.url)
                self.transport = "post"
        return self._post(body)

    def close(self) -> None:
        """Close the connection kept open (the next report opens one again)."""
        self._drop_channel()
        self._drop_http()

    # the channel -----------------------------------------------------------------------------
    def _over_channel(self, body: bytes) -> IngestResponse:
        import websocket  # websocket-client (a dependency of jupyter-server), on first use

        for _ in range(2):
            fresh = self._ws is None
            if fresh:
                self._open_channel()
            if self._max_bytes is not None and len(body) > self._max_bytes:
                raise ReportRefused(
                    f"{self.channel_url}: a report of {len(body)} bytes is over the server's "
                    f"limit of {self._max_bytes} (413; JupyterAir.telemetry_ingest_max_bytes)"
                )
            try:
                self._ws.send_binary(body)
                answer = self._receive()
            except _Closed as closed:
                self._drop_channel()
                if closed.code == 1009:
                    raise ReportRefused(f"{self.channel_url}: {closed}") from None
                if fresh:
                    raise SendFailed(f"{self.channel_url}: {closed}") from None
                continue
            except (OSError, websocket.WebSocketException) as error:
                self._drop_channel()
                if fresh:
                    raise SendFailed(f"{self.channel_url}: {error}") from None
                continue  # the server closed the channel meanwhile: once more, on a new one
            return self._answer(answer)
        raise SendFailed(f"{self.channel_url}: the channel closed twice in a row")

    def _open_channel(self) -> None:
        import websocket

        try:
            self._ws = websocket.create_connection(
                self.channel_url,
                timeout=self.timeout_s,
                header=[f"Authorization: {AUTH_SCHEME} {self._token}"],
                suppress_origin=True,  # not a browser: no Origin to check
                enable_multithread=False,
            )
        except websocket.WebSocketBadStatusException as error:
            code = error.status_code
            if code == 404:
                raise _NoChannel() from None
            message = f"{self.channel_url} answered {code}: {_body_message(error.resp_body)}"
            if code in REJECTED:
                raise AgentRejected(message) from None
            raise SendFailed(message) from None
        except (OSError, websocket.WebSocketException) as error:
            raise SendFailed(f"{self.channel_url}: {error}") from None
        self.connections += 1
        limit = (self._ws.getheaders() or {}).get(MAX_BYTES_HEADER.lower(), "")
        self._max_bytes = int(limit) if str(limit).isdigit() else None

    def _receive(self) -> bytes:
        """The server's answer to the report just sent (pings are answered on the way)."""
        import websocket

        opcode, frame = self._ws.recv_data_frame(False)
        if opcode == websocket.ABNF.OPCODE_CLOSE:
            data = bytes(frame.data or b"")
            code = struct.unpack("!H", data[:2])[0] if len(data) >= 2 else None
            raise _Closed(code, data[2:].decode("utf-8", "replace"))
        data = frame.data
        return data if isinstance(data, bytes) else str(data).encode()

    def _answer(self, data: bytes) -> IngestResponse:
        try:
            parsed = json.loads(data)
        except ValueError as error:
            self._drop_channel()
            raise SendFailed(f"{self.channel_url}: a garbled answer: {error}") from None
        status = parsed.get("status") if isinstance(parsed, dict) else None
        if status is None:
            try:
                return IngestResponse.model_validate(parsed)
            except ValueError as error:
                raise SendFailed(f"{self.channel_url}: a garbled answer: {error}") from None
        message = f"{self.channel_url} answered {status}: {parsed.get('message')}"
        if status in REJECTED:
            self._drop_channel()
            raise AgentRejected(message)
        if status in REFUSED:
            raise ReportRefused(message)
        raise SendFailed(message)

    def _drop_channel(self) -> None:
        ws, self._ws = self._ws, None
        if ws is not None:
            with contextlib.suppress(Exception):
                ws.close(timeout=1)

    # POST ------------------------------------------------------------------------------------
    def _post(self, body: bytes) -> IngestResponse:
        headers = {
            "Content-Type": "application/json",
            "Authorization": f"{AUTH_SCHEME} {self._token}",
        }
        if _proxied(self.url):
            return self._post_by_urllib(body, headers)
        path = self._parts.path + INGEST_PATH
        for _ in range(2):
            fresh = self._http is None
            if fresh:
                self._http = self._http_connection()
            assert self._http is not None
            try:
                self._http.request("POST", path, body=body, headers=headers)
                answer = self._http.getresponse()
                data = answer.read(MAX_RESPONSE_BYTES + 1)
            except (OSError, http.client.HTTPException) as error:
                self._drop_http()
                if fresh:
                    raise SendFailed(f"{self.url}: {error}") from None
                continue  # the server closed the kept connection meanwhile
            if answer.will_close or len(data) > MAX_RESPONSE_BYTES or not answer.isclosed():
                self._drop_http()
            if answer.status != 200:
                _raise_for(
                    answer.status,
                    f"{self.url} answered {answer.status}: {_body_message(data) or answer.reason}",
                )
            try:
                return IngestResponse.model_validate_json(data[:MAX_RESPONSE_BYTES])
            except ValueError as error:
                raise SendFailed(f"{self.url}: a garbled answer: {error}") from None
        raise SendFailed(f"{self.url}: the connection closed twice in a row")

    def _http_connection(self) -> http.client.HTTPConnection:
        host, port = self._parts.hostname or "localhost", self._parts.port
        self.connections += 1
        if self._parts.scheme == "https":
            return http.client.HTTPSConnection(
                host, port, timeout=self.timeout_s, context=ssl.create_default_context()
            )
        return http.client.HTTPConnection(host, port, timeout=self.timeout_s)

    def _drop_http(self) -> None:
        conn, self._http = self._http, None
        if conn is not None:
            conn.close()

    def _post_by_urllib(self, body: bytes, headers: dict[str, str]) -> IngestResponse:
        """Through the proxy the environment names (a new connection each time)."""
        http_request = urllib.request.Request(self.url, data=body, method="POST", headers=headers)
        try:
            with urllib.request.urlopen(http_request, timeout=self.timeout_s) as answer:
                return IngestResponse.model_validate_json(answer.read(MAX_RESPONSE_BYTES))
        except urllib.error.HTTPError as error:
            _raise_for(error.code, f"{self.url} answered {error.code}: {_message(error)}")
            raise  # not reached
        except (OSError, ValueError) as error:  # URLError, timeouts, a garbled answer
            raise SendFailed(f"{self.url}: {error}") from None


class _Closed(Exception):
    """The server closed the channel (a websocket close frame)."""

    def __init__(self, code: int | None, reason: str) -> None:
        super().__init__(f"the server closed the channel ({code}: {reason or 'no reason'})")
        self.code = code


def _raise_for(status: int, message: str) -> None:
    if status in REJECTED:
        raise AgentRejected(message)
    if status in REFUSED:
        raise ReportRefused(message)
    raise SendFailed(message)


def _proxied(url: str) -> bool:
    """Whether the environment sends requests to ``url`` through a proxy."""
    parts = urllib.parse.urlsplit(url)
    proxies = urllib.request.getproxies()
    if parts.scheme not in proxies:
        return False
    return not urllib.request.proxy_bypass(parts.hostname or "")


def _body_message(body: bytes | None) -> str:
    try:
        return str(json.loads(body or b"")["message"])
    except Exception:
        return (body or b"").decode("utf-8", "replace")[:200]


def _message(error: urllib.error.HTTPError) -> str:
    try:
        return str(json.loads(error.read(4096))["message"])
    except Exception:
        return error.reason or "no reason given"


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
