"""Where node agents report their samples: ``POST air/api/telemetry/ingest`` (one report a
request) and ``GET air/api/telemetry/channel`` (a websocket: one long-lived connection per agent,
one report a message, the same ``IngestRequest`` in and ``IngestResponse`` out).

Both are authenticated by a per-node agent token only (``Authorization: AirAgent <token>``,
``telemetry/agent_tokens.py``): neither Jupyter's token nor a login cookie is accepted here, and
an agent token is accepted nowhere else. Because no cookie can authenticate a request, a page in a
browser cannot make one on a user's behalf (nor can a browser's websocket set that header), so
there is no XSRF check (agents are not browsers); a websocket from another origin is refused all
the same. A token reports for its own node only (403 otherwise) and the request is then
authorised against the ``air-telemetry`` resource, as the agent user ``agent:<node>``. On the
channel the token is checked again for every report (a revoked token is refused within the token
file's recheck interval, and the channel closed). A body is limited (413 before it is read, when
its length is announced; on the channel a larger message closes it with 1009) and validated whole
against ``IngestRequest`` (400 naming the field); nothing is stored unless all of it is valid.
On the channel a refused report is answered ``{"status": <code>, "message": ...}`` — the code and
words the POST would have answered — and the channel stays open unless the agent itself is
refused (401, 403, 404, 409), when it is closed after that one answer. An agent that asks for it
(``ANSWER_EVERY_HEADER: <k>``, echoed when granted) is answered only when the answer is news — the
first report, an answer that differs from the last one on the channel (``accepted`` aside), a
refusal — and at least every k-th report (``telemetry/sender.py`` has the agent's side). Such an
agent that also lets its reports wait (``BATCH_HEADER``: at least the server's delay) has them
stored in batches (``report_batch.py``; the delay granted in ``BATCH_HEADER``, and the agent
waits that much longer for news); any other (the Ray forwarder, older agents, an agent reporting
more often than five batches) has each stored at once.

Why a channel: a report over HTTP costs the Jupyter server a request's worth of work (parsing,
routing, a handler, headers, logging) many times the report's own; on one connection a report is
a frame (bench/README.md has the figures).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections.abc import Awaitable
from http.client import responses
from typing import Any

import tornado.web
import tornado.websocket
from jupyter_core.utils import ensure_async
from jupyter_server.auth import User
from jupyter_server.auth.decorator import authorized, ws_authenticated
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.base.websocket import WebSocketMixin
from jupyter_server.extension.handler import ExtensionHandlerMixin
from pydantic import ValidationError

from ..api import endpoints
from ..telemetry.models import IngestRequest, IngestResponse
from ..telemetry.nodes import ClockAhead, Encoded, TooManyNodes, encode
from ..telemetry.sender import (
    ANSWER_EVERY_HEADER,
    AUTH_SCHEME,
    BATCH_HEADER,
    MAX_BATCH_S,
    MAX_BYTES_HEADER,
    header_seconds,
)
from .gpu_service import GpuService, NodeConflict
from .report_batch import ReportBatch

AUTH_RESOURCE = endpoints.TELEMETRY
OFFLOAD_MIN_BYTES = 64 * 1024  # bigger reports (a backlog) are decoded off the event loop
MAX_PROBLEMS = 3
MAX_ANSWER_EVERY = 60  # a channel's agent hears from the server at least every 60 reports
PING_S = 300.0  # an agent answers pings when it next reports (every 10 s by default)
AGENT_REFUSED = (401, 403, 404, 409)  # the agent, not one report, is refused: close the channel
NO_TOKEN = (
    "Telemetry reports need a node agent token (Authorization: AirAgent <token>): "
    "mint one with `air agent-token NODE` on the Jupyter host."
)


def validation_message(error: ValidationError) -> str:
    """The first problems of a report, each with where it is."""
    problems = []
    for item in error.errors()[:MAX_PROBLEMS]:
        where = ".".join(str(part) for part in item["loc"]) or "body"
        problems.append(f"{where}: {item['msg']}")
    more = error.error_count() - len(problems)
    text = "; ".join(problems) + (f" (and {more} more)" if more > 0 else "")
    return f"Malformed telemetry report: {text}."


def decode(body: bytes) -> tuple[IngestRequest, list[Encoded]]:
    """The validated report and its samples as the history keeps them."""
    request = IngestRequest.model_validate_json(body)
    return request, encode(request)


def too_large(max_bytes: int) -> str:
    return (
        f"A telemetry report may be at most {max_bytes} bytes "
        "(JupyterAir.telemetry_ingest_max_bytes); send fewer samples at once."
    )


def store_decoded(
    gpu: GpuService, agent_node: str, decoded: tuple[IngestRequest, list[Encoded]]
) -> IngestResponse:
    """Store a validated report of ``agent_node``; the answer. Refusals are
    ``HTTPError``s with the status and message an agent is told."""
    request, encoded = decoded
    if request.node != agent_node:
        raise tornado.web.HTTPError(
            403, f"This agent token reports for node {agent_node!r}, not {request.node!r}."
        )
    try:
        response = gpu.ingest(request, encoded)
    except NodeConflict as error:
        raise tornado.web.HTTPError(409, str(error)) from None
    except TooManyNodes as error:
        raise tornado.web.HTTPError(507, str(error)) from None
    except ClockAhead as error:
        raise tornado.web.HTTPError(400, str(error)) from None
    return response


def store_small(gpu: GpuService, agent_node: str, body: bytes) -> IngestResponse:
    """``store_report`` for a body small enough to decode on the event loop."""
    try:
        decoded = decode(body)
    except ValidationError as error:
        raise tornado.web.HTTPError(400, validation_message(error)) from None
    return store_decoded(gpu, agent_node, decoded)


async def store_report(gpu: GpuService, agent_node: str, body: bytes) -> IngestResponse:
    """Validate a report of ``agent_node`` (off the event loop when big) and store it."""
    if len(body) < OFFLOAD_MIN_BYTES:
        return store_small(gpu, agent_node, body)
    try:
        decoded = await asyncio.get_running_loop().run_in_executor(None, decode, body)
    except ValidationError as error:
        raise tornado.web.HTTPError(400, validation_message(error)) from None
    return store_decoded(gpu, agent_node, decoded)


class _AgentAuth(ExtensionHandlerMixin, JupyterHandler):
    """Authentication by agent token, for both ways of reporting."""

    auth_resource = AUTH_RESOURCE
    _track_activity = False  # agents reporting must not keep an idle server "active"
    agent_node: str | None = None
    _agent_token = ""

    @property
    def gpu(self) -> GpuService:
        return self.settings["jupyter_air"]["gpu"]

    @property
    def max_bytes(self) -> int:
        return int(self.settings["jupyter_air"]["ingest_max_bytes"])

    async def _authenticate_agent(self) -> None:
        """Set the agent user from the token (403 without a valid one)."""
        if not self.check_host():
            raise tornado.web.HTTPError(403)
        scheme, _, token = self.request.headers.get("Authorization", "").partition(" ")
        self._agent_token = token.strip() if scheme == AUTH_SCHEME else ""
        node = await self._token_node()
        user = User(username=f"agent:{node}", name=node) if node else None
        self.current_user = self._jupyter_current_user = user
        self.agent_node = node
        if user is None:
            raise tornado.web.HTTPError(403, NO_TOKEN)

    async def _token_node(self) -> str | None:
        """The node the request's token reports for now (the token file re-read when due)."""
        tokens, token = self.gpu.tokens, self._agent_token
        if tokens is None or not token:
            return None
        if tokens.due(token):
            await asyncio.get_running_loop().run_in_executor(None, tokens.reload_if_changed)
        return tokens.node_for(token)

    def check_xsrf_cookie(self) -> None:
        """No XSRF check: only the token in the Authorization header authenticates here."""
        return None


@tornado.web.stream_request_body
class TelemetryIngestHandler(_AgentAuth, APIHandler):
    """``POST air/api/telemetry/ingest``: one report a request."""

    async def prepare(self) -> None:  # type: ignore[override]
        """Authenticate by agent token before any of the body is read; refuse an announced
        body over the limit."""
        await self._authenticate_agent()
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            raise tornado.web.HTTPError(413, too_large(self.max_bytes))
        self._chunks: list[bytes] = []
        self._size = 0

    def data_received(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size <= self.max_bytes:
            self._chunks.append(chunk)
        else:
            self._chunks = []  # refused in post(); keep nothing meanwhile

    def _log(self) -> None:
        """Refusals and errors are logged as Jupyter logs requests; an accepted report is not
        (Jupyter would format a debug record for each, a fair part of a report's cost)."""
        if self.get_status() >= 400:
            super()._log()

    @tornado.web.authenticated
    @authorized
    async def post(self) -> None:
        if self._size > self.max_bytes:
            raise tornado.web.HTTPError(413, too_large(self.max_bytes))
        assert self.agent_node is not None  # authenticated
        answer = await store_report(self.gpu, self.agent_node, b"".join(self._chunks))
        self.set_header("Cache-Control", "no-store")
        self.finish(answer.model_dump_json())


class TelemetryChannelHandler(tornado.websocket.WebSocketHandler, _AgentAuth):
    """``GET air/api/telemetry/channel``: a websocket per agent; each message a report, each
    answer its ``IngestResponse`` (or ``{"status", "message"}``), in order; where the agent
    asked for it, only the answers that are news (the module's doc)."""

    _answer_every = 1  # granted to this channel's agent
    _batch: ReportBatch | None = None  # where its reports wait to be stored with others
    _told: tuple[bool, float, bool, float] | None = None  # the last answer, ``accepted`` aside
    _unanswered = 0  # reports since the last message to the agent

    async def prepare(self) -> None:  # type: ignore[override]
        await self._authenticate_agent()

    @ws_authenticated
    async def get(self, *args: Any, **kwargs: Any) -> None:
        """Authorise the agent (as a POST would be, ``write``), then upgrade."""
        allowed = await ensure_async(
            self.authorizer.is_authorized(self, self.current_user, "write", AUTH_RESOURCE)
        )
        if not allowed:
            raise tornado.web.HTTPError(
                403, f"The authorizer does not let {self.current_user.username!r} report."
            )
        self.set_header(MAX_BYTES_HEADER, str(self.max_bytes))  # agents refuse bigger reports
        every = self.request.headers.get(ANSWER_EVERY_HEADER, "").strip()
        if every.isdigit() and int(every) > 1:
            self._answer_every = min(int(every), MAX_ANSWER_EVERY)
            self.set_header(ANSWER_EVERY_HEADER, str(self._answer_every))
            # an agent that waits for news only and lets its reports wait as long as the
            # server's batch: they are stored in batches
            batch = self.settings["jupyter_air"].get("report_batch")
            asked = header_seconds(self.request.headers.get(BATCH_HEADER), MAX_BATCH_S)
            if batch is not None and asked >= batch.delay_s:
                self._batch = batch
                self.set_header(BATCH_HEADER, f"{batch.delay_s:g}")
        await super().get(*args, **kwargs)

    @property
    def max_message_size(self) -> int:
        return self.max_bytes

    @property
    def ping_interval(self) -> float:
        """Seconds between pings (tornado's own): a channel whose agent is gone is closed."""
        return PING_S

    @property
    def ping_timeout(self) -> float:
        return PING_S

    def check_origin(self, origin_to_satisfy_tornado: str = "") -> bool:
        """A browser page of another origin is refused, as by Jupyter's own websockets."""
        return bool(WebSocketMixin.check_origin(self, origin_to_satisfy_tornado or None))

    def get_compression_options(self) -> dict[str, Any] | None:
        return None  # deflate would cost the server more CPU than the loopback or LAN saves

    def write_error(self, status_code: int, **kwargs: Any) -> None:
        """A refused upgrade answers JSON, as the POST does: ``{"message", "reason"}``."""
        error = kwargs.get("exc_info", (None, None, None))[1]
        message = getattr(error, "log_message", None) or ""
        self.set_header("Content-Type", "application/json")
        reason = responses.get(status_code, "Unknown")
        self.finish(json.dumps({"message": message or reason, "reason": reason}))

    def _log(self) -> None:
        """The upgrade is logged once, at debug level, by Jupyter's websocket mixin."""
        if self.get_status() >= 400:
            super()._log()

    def on_message(self, message: str | bytes) -> Awaitable[None] | None:
        """One report: the token checked again, then stored as a POST would store it. A small
        report whose token needs no look at the token file is stored at once, or, where the
        agent was granted batches, with the others of the server's ``ReportBatch``; this
        channel's next report is read once it is stored."""
        body = message.encode() if isinstance(message, str) else message
        tokens = self.gpu.tokens
        if tokens is None or tokens.due(self._agent_token) or len(body) >= OFFLOAD_MIN_BYTES:
            return self._store_later(body)
        if self._batch is None:
            self._store_now(body)
            return None
        return self._batch.add(functools.partial(self._store_now, body))

    def _store_now(self, body: bytes) -> None:
        tokens = self.gpu.tokens
        try:
            self._check_node(tokens.node_for(self._agent_token) if tokens else None)
            answer = store_small(self.gpu, self.agent_node or "", body)
        except tornado.web.HTTPError as error:
            self._refuse(error.status_code, error.log_message or "")
            return
        self._answer(answer)

    async def _store_later(self, body: bytes) -> None:
        try:
            self._check_node(await self._token_node())
            answer = await store_report(self.gpu, self.agent_node or "", body)
        except tornado.web.HTTPError as error:
            self._refuse(error.status_code, error.log_message or "")
            return
        self._answer(answer)

    def _check_node(self, node: str | None) -> None:
        if node is None or node != self.agent_node:
            raise tornado.web.HTTPError(
                403, "This agent token was revoked or replaced: " + NO_TOKEN
            )

    def _answer(self, answer: IngestResponse) -> None:
        """Write the answer, unless the agent asked for news only and this is none (a write and
        the agent's wake-up were most of a report's cost here: bench/README.md)."""
        if self.ws_connection is None:
            return
        if self._answer_every > 1:
            told = (answer.sample, answer.next_s, answer.have_info, answer.idle_timeout_s)
            self._unanswered += 1
            if told == self._told and self._unanswered < self._answer_every:
                return
            self._told = told
        self._unanswered = 0
        self.write_message(answer.model_dump_json())

    def _refuse(self, status: int, message: str) -> None:
        if self.ws_connection is None:
            return
        self._unanswered = 0
        self.write_message(json.dumps({"status": status, "message": message}))
        if status in AGENT_REFUSED:
            self.close(1008, message[:120])  # policy violation; the reason is cut to fit
