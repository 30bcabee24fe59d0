"""REST handlers for GPU Resources: ``GET air/api/gpu`` (one node), ``POST air/api/gpu/refresh``
and ``GET air/api/gpu/nodes`` (the cluster overview).

All are authenticated (Jupyter's token or cookie) and authorised against the ``air-gpu``
resource through the server's authorizer. Node agents report through ``gpu_ingest.py`` (a POST
or a websocket channel).
"""

from __future__ import annotations

import math

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin

from ..api import endpoints
from .gpu_ingest import TelemetryChannelHandler, TelemetryIngestHandler
from .gpu_service import GpuService

AUTH_RESOURCE = endpoints.GPU


class _GpuHandler(ExtensionHandlerMixin, APIHandler):
    auth_resource = AUTH_RESOURCE

    @property
    def gpu(self) -> GpuService:
        return self.settings["jupyter_air"]["gpu"]

    def _since(self) -> float | None:
        raw = self.get_query_argument("since", None)
        if raw is None or raw == "":
            return None
        try:
            since = float(raw)
        except ValueError:
            since = math.nan
        if not math.isfinite(since):
            raise tornado.web.HTTPError(
                400, f"'since' must be a unix time in seconds (got {raw!r})"
            )
        return since

    def _node(self) -> str | None:
        node = self.get_query_argument("node", None) or None
        if node is not None and not self.gpu.knows(node):
            raise tornado.web.HTTPError(
                404,
                f"No telemetry from node {node!r}: this server is node {self.gpu.node!r}, and "
                "no agent reports under that name (air/api/gpu/nodes lists every node).",
            )
        return node

    async def _finish(self, text: str) -> None:
        accept = self.request.headers.get("Accept-Encoding", "")
        body, gzipped = await self.gpu.body(text, accept_gzip="gzip" in accept)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Vary", "Accept-Encoding")
        if gzipped:
            self.set_header("Content-Encoding", "gzip")
        self.finish(body)

    async def _serve(self, refresh: bool) -> None:
        """Validate the query, count the request as activity (resuming paused sampling, with
        a fresh sample of this node, or taking one now for a refresh) and answer."""
        since = self._since()
        node = self._node()
        was_paused = await self.gpu.on_request(node, refresh=refresh)
        await self._finish(self.gpu.payload(since, resumed=was_paused, node=node))


class GpuHandler(_GpuHandler):
    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        await self._serve(refresh=False)


class GpuRefreshHandler(_GpuHandler):
    @tornado.web.authenticated
    @authorized
    async def post(self) -> None:
        await self._serve(refresh=True)


class GpuNodesHandler(_GpuHandler):
    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        since = self._since()
        was_idle = await self.gpu.on_overview_request()
        await self._finish(await self.gpu.overview(since, resumed=was_idle))


def gpu_handlers() -> list[tuple[str, type]]:
    return [
        (r"/air/api/gpu", GpuHandler),
        (r"/air/api/gpu/refresh", GpuRefreshHandler),
        (r"/air/api/gpu/nodes", GpuNodesHandler),
        (r"/air/api/telemetry/ingest", TelemetryIngestHandler),
        (r"/air/api/telemetry/channel", TelemetryChannelHandler),
    ]
