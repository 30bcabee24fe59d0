"""How a node agent reaches the Jupyter server: ``HttpSender``, over the server's telemetry channel
(a websocket at ``CHANNEL_PATH``, a report a message) or, where the server has none, by POST to
``INGEST_PATH`` on a keep-alive connection; authenticated by the node's agent token.

On the channel the sender asks for answers only when they say something (``ANSWER_EVERY_HEADER``):
the server then answers a report when its answer differs from the last one it gave on that
channel (a panel opened or closed, the server lost the node's devices), when it refuses one, and
at least every ``ANSWER_EVERY``-th report; the sender waits for an answer when one is due (the
first on a channel, the ``ANSWER_EVERY``-th since the last), so a server that died or hangs is
noticed within that many reports, and otherwise takes what came within ``ANSWER_GRACE_S`` (plus
the delay the server granted in ``BATCH_HEADER``: a sender made with ``batch_s`` asks that its
reports be stored in the server's batches, waiting up to that long; ``air agent`` asks for a
fifth of its interval, ``accepted_batch_s``). An
answer costs the server a write and the agent a wake-up; a report not answered is stored as the
last answer said (bench/README.md, "Node telemetry"). A server of an older jupyter-air does not
grant it and answers every report, as it always did; so does a sender made with
``answer_every=1`` (the agents before this one).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import logging
import math
import select
import ssl
import struct
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from typing import Any

from .models import IngestRequest, IngestResponse

log = logging.getLogger(__name__)

INGEST_PATH = "air/api/telemetry/ingest"
CHANNEL_PATH = "air/api/telemetry/channel"
MAX_BYTES_HEADER = "X-Air-Max-Report-Bytes"  # the channel's limit, told when it opens
AUTH_SCHEME = "AirAgent"
REJECTED = (401, 403, 404, 409)  # the agent is refused: retrying cannot help
REFUSED = (400, 413)  # one report is refused: it is dropped, not resent
MAX_RESPONSE_BYTES = 64 * 1024
ANSWER_EVERY_HEADER = "X-Air-Answer-Every"  # see HttpSender; the server echoes what it grants
ANSWER_EVERY = 6  # a report's answer at least every 6th report (a minute at 10 s)
ANSWER_GRACE_S = 0.5  # how long a report not due an answer waits for one all the same
BATCH_HEADER = "X-Air-Batch-S"  # asked: how late reports may be stored; granted: how late they are
MAX_BATCH_S = 10.0
BATCH_SHARE = 5  # an agent lets its reports wait for a batch up to a fifth of its interval

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
    through before the connection broke is not stored twice. ``close()`` closes it.
    ``answer_every``: ask the channel to answer only what is news, and at least every so many
    reports (the module's doc); 1, an answer to every report. ``batch_s`` (with
    ``answer_every`` > 1): the reports may wait up to that long on the server to be stored with
    others; 0, stored at once."""

    def __init__(
        self,
        server_url: str,
        token: str,
        timeout_s: float = 10.0,
        *,
        channel: bool = True,
        answer_every: int = ANSWER_EVERY,
        batch_s: float = 0.0,
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
        self.answer_every = max(1, answer_every)
        self.batch_s = min(max(batch_s, 0.0), MAX_BATCH_S)
        self._every = 1  # what the channel open now granted
        self._grace_s = ANSWER_GRACE_S  # how long a report not due an answer waits for one
        self._last: IngestResponse | None = None  # the channel's last answer
        self._unanswered = 0  # reports since it

    def __call__(self, request: IngestRequest) -> IngestResponse:
        body = request.model_dump_json().encode()
        if self.transport == "channel":
            try:
                return self._over_channel(body, len(request.samples))
            except _NoChannel:
                log.info("jupyter-air agent: %s has no telemetry channel; POST instead", self.url)
                self.transport = "post"
        return self._post(body)

    def close(self) -> None:
        """Close the connection kept open (the next report opens one again)."""
        self._drop_channel()
        self._drop_http()

    # the channel -----------------------------------------------------------------------------
    def _over_channel(self, body: bytes, count: int) -> IngestResponse:
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
                answers = self._answers()
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
            return self._respond(answers, count)
        raise SendFailed(f"{self.channel_url}: the channel closed twice in a row")

    def _open_channel(self) -> None:
        import websocket

        header = [f"Authorization: {AUTH_SCHEME} {self._token}"]
        if self.answer_every > 1:
            header.append(f"{ANSWER_EVERY_HEADER}: {self.answer_every}")
            if self.batch_s > 0:
                header.append(f"{BATCH_HEADER}: {self.batch_s:g}")
        try:
            self._ws = websocket.create_connection(
                self.channel_url,
                timeout=self.timeout_s,
                header=header,
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
        headers = self._ws.getheaders() or {}
        limit = headers.get(MAX_BYTES_HEADER.lower(), "")
        self._max_bytes = int(limit) if str(limit).isdigit() else None
        every = str(headers.get(ANSWER_EVERY_HEADER.lower(), ""))  # an older server: none
        self._every = min(int(every), self.answer_every) if every.isdigit() else 1
        granted = header_seconds(headers.get(BATCH_HEADER.lower()), self.batch_s)
        self._grace_s = ANSWER_GRACE_S + granted  # a report not due an answer: news may come late
        self._last, self._unanswered = None, 0

    def _answers(self) -> list[bytes]:
        """The answers that came for the report just sent: when one is due (always, where every
        report is answered), waiting for it; otherwise those that came within the grace."""
        self._unanswered += 1
        due = self._last is None or self._unanswered >= self._every
        answers: list[bytes] = []
        if due:
            data = self._receive()
            assert data is not None  # a data frame (or _Closed)
            answers.append(data)
        wait = 0.0 if due else self._grace_s
        while self._readable(wait):
            data = self._receive(control=True)
            if data is not None:
                answers.append(data)
            wait = 0.0
        return answers

    def _readable(self, wait_s: float) -> bool:
        sock = self._ws.sock
        if sock is None:
            return False
        pending = getattr(sock, "pending", None)  # TLS: bytes decrypted already
        if callable(pending) and pending():
            return True
        return bool(select.select([sock], [], [], wait_s)[0])

    def _respond(self, answers: list[bytes], count: int) -> IngestResponse:
        """The newest answer; none: the last one, all ``count`` samples stored."""
        refused: Exception | None = None
        for data in answers:
            self._unanswered = 0
            try:
                self._last = self._answer(data)
            except (ReportRefused, SendFailed) as error:
                refused = refused or error
        if refused is not None:
            raise refused
        if self._last is None:
            raise SendFailed(f"{self.channel_url}: no answer")  # the first is always awaited
        return self._last if answers else self._last.model_copy(update={"accepted": count})

    def _receive(self, control: bool = False) -> bytes | None:
        """The server's next answer (pings are answered on the way); ``control``: None for a
        ping or pong, not waiting for the next message."""
        import websocket

        opcode, frame = self._ws.recv_data_frame(control)
        if opcode in (websocket.ABNF.OPCODE_PING, websocket.ABNF.OPCODE_PONG):
            return None
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


def accepted_batch_s(interval_s: float) -> float:
    """How long an agent reporting every ``interval_s`` lets a report wait for the server's
    batch (``BATCH_HEADER``)."""
    return min(interval_s / BATCH_SHARE, MAX_BATCH_S)


def header_seconds(text: Any, most: float) -> float:
    """A header's seconds, 0 to ``most``; 0 where absent or not a number."""
    try:
        value = float(str(text))
    except ValueError:
        return 0.0
    return min(max(value, 0.0), most) if math.isfinite(value) else 0.0


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
