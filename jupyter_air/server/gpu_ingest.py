"""``POST air/api/telemetry/ingest``: where node agents report their samples.

Authenticated by a per-node agent token only (``Authorization: AirAgent <token>``,
``telemetry/agent_tokens.py``): neither Jupyter's token nor a login cookie is accepted here, and
an agent token is accepted nowhere else. Because no cookie can authenticate a request, a page in a
browser cannot make one on a user's behalf, so there is no XSRF check (agents are not browsers).
A token reports for its own node only (403 otherwise) and the request is then authorised against
the ``air-telemetry`` resource, as the agent user ``agent:<node>``. The body is limited
(413 before it is read, when its length is announced) and validated whole against
``IngestRequest`` (400 naming the field); nothing is stored unless all of it is valid.
"""

from __future__ import annotations

import asyncio

import tornado.web
from jupyter_server.auth import User
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from pydantic import ValidationError

from ..api import endpoints
from ..telemetry.agent import AUTH_SCHEME
from ..telemetry.models import IngestRequest
from ..telemetry.nodes import ClockAhead, Encoded, TooManyNodes, encode
from .gpu_service import GpuService, NodeConflict

AUTH_RESOURCE = endpoints.TELEMETRY
OFFLOAD_MIN_BYTES = 64 * 1024  # bigger reports (a backlog) are decoded off the event loop
MAX_PROBLEMS = 3


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


@tornado.web.stream_request_body
class TelemetryIngestHandler(ExtensionHandlerMixin, APIHandler):
    auth_resource = AUTH_RESOURCE
    _track_activity = False  # agents reporting must not keep an idle server "active"

    @property
    def gpu(self) -> GpuService:
        return self.settings["jupyter_air"]["gpu"]

    @property
    def max_bytes(self) -> int:
        return int(self.settings["jupyter_air"]["ingest_max_bytes"])

    async def prepare(self) -> None:  # type: ignore[override]
        """Authenticate by agent token before any of the body is read; refuse an announced
        body over the limit."""
        if not self.check_host():
            raise tornado.web.HTTPError(403)
        node = await self._agent_node()
        user = User(username=f"agent:{node}", name=node) if node else None
        self.current_user = self._jupyter_current_user = user
        self.agent_node = node
        if user is None:
            raise tornado.web.HTTPError(
                403,
                "Telemetry reports need a node agent token (Authorization: AirAgent <token>): "
                "mint one with `air agent-token NODE` on the Jupyter host.",
            )
        length = self.request.headers.get("Content-Length")
        if length is not None and length.isdigit() and int(length) > self.max_bytes:
            raise tornado.web.HTTPError(413, self._too_large())
        self._chunks: list[bytes] = []
        self._size = 0

    async def _agent_node(self) -> str | None:
        tokens = self.gpu.tokens
        scheme, _, token = self.request.headers.get("Authorization", "").partition(" ")
        if tokens is None or scheme != AUTH_SCHEME or not token.strip():
            return None
        token = token.strip()
        if tokens.due(token):
            await asyncio.get_running_loop().run_in_executor(None, tokens.reload_if_changed)
        return tokens.node_for(token)

    def check_xsrf_cookie(self) -> None:
        """No XSRF check: only the token in the Authorization header authenticates here."""
        return None

    def data_received(self, chunk: bytes) -> None:
        self._size += len(chunk)
        if self._size <= self.max_bytes:
            self._chunks.append(chunk)
        else:
            self._chunks = []  # refused in post(); keep nothing meanwhile

    def _too_large(self) -> str:
        return (
            f"A telemetry report may be at most {self.max_bytes} bytes "
            "(JupyterAir.telemetry_ingest_max_bytes); send fewer samples at once."
        )

    @tornado.web.authenticated
    @authorized
    async def post(self) -> None:
        if self._size > self.max_bytes:
            raise tornado.web.HTTPError(413, self._too_large())
        body = b"".join(self._chunks)
        try:
            if len(body) >= OFFLOAD_MIN_BYTES:
                loop = asyncio.get_running_loop()
                request, encoded = await loop.run_in_executor(None, decode, body)
            else:
                request, encoded = decode(body)
        except ValidationError as error:
            raise tornado.web.HTTPError(400, validation_message(error)) from None
        if request.node != self.agent_node:
            raise tornado.web.HTTPError(
                403,
                f"This agent token reports for node {self.agent_node!r}, not {request.node!r}.",
            )
        try:
            response = self.gpu.ingest(request, encoded)
        except NodeConflict as error:
            raise tornado.web.HTTPError(409, str(error)) from None
        except TooManyNodes as error:
            raise tornado.web.HTTPError(507, str(error)) from None
        except ClockAhead as error:
            raise tornado.web.HTTPError(400, str(error)) from None
        self.set_header("Cache-Control", "no-store")
        self.finish(response.model_dump_json())
