"""REST handlers for GPU Resources: ``GET air/api/gpu`` and ``POST air/api/gpu/refresh``.

Both are authenticated (Jupyter's token or cookie) and authorised against the ``air-gpu``
resource through the server's authorizer.
"""

from __future__ import annotations

import math

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin

from .gpu_service import GpuService

AUTH_RESOURCE = "air-gpu"


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

    def _check_node(self) -> None:
        node = self.get_query_argument("node", None)
        if node and node != self.gpu.sampler.node:
            raise tornado.web.HTTPError(
                404,
                f"No telemetry from node {node!r}; this server reports node "
                f"{self.gpu.sampler.node!r}.",
            )

    async def _serve(self, refresh: bool) -> None:
        """Validate the query, count the request as activity (resuming a paused sampler with
        a fresh sample, or taking one now for a refresh) and answer with the payload."""
        since = self._since()
        self._check_node()
        gpu = self.gpu
        gpu.ensure_started()
        was_paused = gpu.poll_loop.paused
        if refresh:
            await gpu.poll_loop.refresh()
        else:
            await gpu.poll_loop.on_request()
        accept = self.request.headers.get("Accept-Encoding", "")
        body, gzipped = await gpu.body(since, resumed=was_paused, accept_gzip="gzip" in accept)
        self.set_header("Content-Type", "application/json")
        self.set_header("Cache-Control", "no-store")
        self.set_header("Vary", "Accept-Encoding")
        if gzipped:
            self.set_header("Content-Encoding", "gzip")
        self.finish(body)


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


def gpu_handlers() -> list[tuple[str, type]]:
    return [
        (r"/air/api/gpu", GpuHandler),
        (r"/air/api/gpu/refresh", GpuRefreshHandler),
    ]
