"""REST handlers for MLflow (status, runs, experiments) and the proxy that serves its UI at
``<base_url>air/mlflow/`` behind Jupyter's login.

Resources for the authorizer: ``air-mlflow`` (status, UI and the script of ours it gets),
``air-runs`` (runs and experiments).
"""

from __future__ import annotations

import html
import json
import logging
from typing import Any

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler, JupyterHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin
from jupyter_server_proxy.handlers import ProxyHandler

from ..api import endpoints
from ..api.enums import MlflowState
from ..api.mlflow import (
    ExperimentRef,
    ExperimentsPayload,
    MlflowStatus,
    RunPayload,
    RunsPayload,
    ShareRequest,
)
from .mlflow_page import SCRIPT_PATH, MlflowPageScriptHandler, script_tag
from .mlflow_queries import NOT_FOUND, MlflowError, MlflowUnreachable
from .mlflow_service import RUN_STATUSES, MlflowService
from .mlflow_xsrf import page_rewriter

log = logging.getLogger(__name__)

MLFLOW_RESOURCE = endpoints.MLFLOW
RUNS_RESOURCE = endpoints.RUNS


def _service(handler: tornado.web.RequestHandler) -> MlflowService:
    return handler.settings["jupyter_air"]["mlflow"]


class MlflowStatusHandler(ExtensionHandlerMixin, APIHandler):
    auth_resource = MLFLOW_RESOURCE

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        service = _service(self)
        status = service.status()
        if status.state == MlflowState.EXTERNAL:
            status.reachable = await service.reachable()
        self.finish(status.model_dump_json())


class _RunsBase(ExtensionHandlerMixin, APIHandler):
    auth_resource = RUNS_RESOURCE

    async def _not_ready(self, service: MlflowService) -> MlflowStatus | None:
        """The status to answer with when MLflow cannot be queried now, else None."""
        if not service.ready:
            return service.status()
        if not await service.reachable():
            return self._unreachable(service, ConnectionError("no answer to /health"))
        return None

    async def _answered_not_ready(
        self, service: MlflowService, answer: RunsPayload | RunPayload | ExperimentsPayload
    ) -> bool:
        """Whether MLflow cannot be queried now: then ``answer`` is sent, with the status."""
        not_ready = await self._not_ready(service)
        if not_ready is None:
            return False
        answer.mlflow = not_ready
        self.finish(answer.model_dump_json())
        return True

    def _unreachable(self, service: MlflowService, error: Exception) -> MlflowStatus:
        status = service.unreachable(error)
        log.warning("jupyter-air: %s", status.error)
        return status


class RunsHandler(_RunsBase):
    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        service = _service(self)
        notebook = self.get_query_argument("notebook", None)
        experiment_id = self.get_query_argument("experiment_id", None)
        status = self.get_query_argument("status", None) or None
        if not notebook and not experiment_id:
            raise tornado.web.HTTPError(400, "Give 'notebook' (a path) or 'experiment_id'.")
        if status is not None and status.upper() not in RUN_STATUSES:
            raise tornado.web.HTTPError(
                400, f"'status' must be one of {', '.join(RUN_STATUSES)} (got {status!r})"
            )
        try:
            limit = int(self.get_query_argument("limit", "100"))
        except ValueError:
            limit = 0
        if not 1 <= limit <= 1000:
            raise tornado.web.HTTPError(400, "'limit' must be a whole number from 1 to 1000")

        from ..tracking.naming import current_user, default_experiment_name

        answer = RunsPayload(
            mlflow=service.status(),
            experiment_name=default_experiment_name(notebook, current_user()) if notebook else None,
        )
        if await self._answered_not_ready(service, answer):
            return
        try:
            if experiment_id:
                experiment: ExperimentRef | None = await service.get_experiment(experiment_id)
                assert experiment is not None
                name = experiment.name
            else:
                assert notebook is not None
                experiment, name = await service.experiment_for_notebook(notebook)
            answer.experiment_name = name
            if experiment is not None:
                answer.experiment = experiment
                answer.runs, answer.truncated = await service.list_runs(
                    experiment.experiment_id, status and status.upper(), limit
                )
        except MlflowUnreachable as error:
            answer.mlflow = self._unreachable(service, error)
        except MlflowError as error:
            if error.code == NOT_FOUND:
                raise tornado.web.HTTPError(
                    404, f"No MLflow experiment with id {experiment_id!r}"
                ) from None
            answer.mlflow = self._unreachable(service, error)
        self.finish(answer.model_dump_json())


class RunHandler(_RunsBase):
    """One run's summary: a run display in a reopened notebook asks whether the run it shows as
    RUNNING is still running."""

    @tornado.web.authenticated
    @authorized
    async def get(self, run_id: str) -> None:
        service = _service(self)
        answer = RunPayload(mlflow=service.status())
        if await self._answered_not_ready(service, answer):
            return
        try:
            answer.run = await service.get_run(run_id)
        except MlflowUnreachable as error:
            answer.mlflow = self._unreachable(service, error)
        except MlflowError as error:
            if error.code in (NOT_FOUND, "INVALID_PARAMETER_VALUE"):
                raise tornado.web.HTTPError(404, f"No MLflow run {run_id!r}") from None
            answer.mlflow = self._unreachable(service, error)
        self.finish(answer.model_dump_json())


class ExperimentsHandler(_RunsBase):
    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        service = _service(self)
        answer = ExperimentsPayload(mlflow=service.status())
        if await self._answered_not_ready(service, answer):
            return
        try:
            answer.experiments = await service.list_experiments()
        except MlflowError as error:
            answer.mlflow = self._unreachable(service, error)
        self.finish(answer.model_dump_json())


class ShareExperimentHandler(_RunsBase):
    """Share an experiment with another user of a team MLflow server (the Experiment panel's
    backend; ``air share experiment`` is the same). XSRF-checked like every write."""

    @tornado.web.authenticated
    @authorized
    async def post(self, experiment_id: str) -> None:
        from pydantic import ValidationError

        from ..tracking.sharing import ShareError

        try:
            request = ShareRequest.model_validate_json(self.request.body or b"{}")
        except ValidationError as error:
            first = error.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "body"
            raise tornado.web.HTTPError(400, f"{where}: {first['msg']}") from None
        try:
            shared = await _service(self).share_experiment(
                experiment_id, request.username, request.permission
            )
        except ShareError as error:
            self.set_status(error.status)
            self.finish(json.dumps({"message": str(error)}))
            return
        self.finish(shared.model_dump_json())


STARTING_PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>MLflow is starting</title>
<style>body{{font-family:sans-serif;margin:3em;color:#333}}</style></head>
<body><h2>{title}</h2><p>{detail}</p></body></html>
"""


def sandbox_artifacts(response: Any, path: str) -> None:
    """Artifacts are user content (an HTML report, an SVG): served from Jupyter's origin they
    could run script with the user's Jupyter rights, so they get a sandbox of their own."""
    if "artifact" in path:
        response.headers["Content-Security-Policy"] = "sandbox"
        response.headers["X-Content-Type-Options"] = "nosniff"


class MlflowProxyHandler(ProxyHandler):
    """Serves the MLflow UI (and its API, for the UI) from the tracking server we proxy.

    Authentication is enforced by ``ProxyHandler.prepare``; XSRF by Jupyter's own check (see
    ``check_xsrf_cookie``); authorisation is checked here. MLflow 3.5+ rejects requests whose
    Host/Origin are not its own, so both are rewritten (which is why MLflow's own origin check
    cannot protect it here).
    """

    auth_resource = MLFLOW_RESOURCE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.proxy_base = "air/mlflow"
        # MLflow's pages get the XSRF script, then ours (the run page's Logs tab, mlflow_page.py)
        self.rewrite_response = (sandbox_artifacts, page_rewriter(script_tag(self.base_url)))

    def check_xsrf_cookie(self) -> None:
        """jupyter-server-proxy leaves XSRF to the proxied app; here every POST, PUT, PATCH and
        DELETE passes Jupyter's check, as on any Jupyter API: Jupyter's token, or the ``_xsrf``
        cookie with its ``X-XSRFToken`` header (which MLflow's pages send, see mlflow_xsrf)."""
        return JupyterHandler.check_xsrf_cookie(self)

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        await super().prepare(*args, **kwargs)
        if self._finished:
            return
        action = "read" if self.request.method in ("GET", "HEAD", "OPTIONS") else "write"
        if not self.authorizer.is_authorized(self, self.current_user, action, MLFLOW_RESOURCE):
            raise tornado.web.HTTPError(403, "You don't have access to the MLflow UI.")

    def _target(self) -> tuple[str, int] | None:
        """Where to forward to; None (with a 404 already answered) when nothing is proxied."""
        service = _service(self)
        target = service.proxy_target
        if target is None:
            self.set_status(404)
            self.set_header("Content-Type", "text/plain; charset=utf-8")
            self.finish(
                "No MLflow UI is served here"
                + (f": open {service.ui} directly." if service.ui else ".")
            )
        return target

    def _refuse_while_not_ready(self) -> bool:
        service = _service(self)
        if service.ready:
            return False
        status = service.status()
        if status.state == MlflowState.STARTING:
            title = f"MLflow is starting ({status.elapsed_s or 0:.0f} s)…"
            detail = "This page reloads by itself when it is ready (usually 5 to 60 s)."
        else:
            title = "MLflow is not running"
            detail = html.escape(status.error or "The tracking server stopped.")
        self.set_status(503)
        self.set_header("Retry-After", "2")
        if "text/html" in self.request.headers.get("Accept", ""):
            self.set_header("Content-Type", "text/html; charset=utf-8")
            self.finish(STARTING_PAGE.format(title=html.escape(title), detail=detail))
        else:
            self.set_header("Content-Type", "application/json")
            self.finish(json.dumps({"message": title, "mlflow": status.model_dump(mode="json")}))
        return True

    def proxy_request_options(self) -> dict[str, Any]:
        options = super().proxy_request_options()
        # tornado's client refuses a body on DELETE unless told; MLflow's API takes JSON bodies
        # on DELETE (registered-models/delete, …)
        options["allow_nonstandard_methods"] = True
        return options

    def proxy_request_headers(self) -> Any:
        headers = super().proxy_request_headers()
        # Jupyter's credentials stay with Jupyter: MLflow gets its own token (the override),
        # never the browser's Jupyter token, login cookie or XSRF cookie
        if not _service(self).authorization():
            headers.pop("Authorization", None)
        if "Cookie" in headers:
            kept = _without_cookies(headers["Cookie"], {self.cookie_name, "_xsrf"})
            del headers["Cookie"]
            if kept:
                headers["Cookie"] = kept
        if "text/html" in self.request.headers.get("Accept", ""):
            # a page cached before it carried the XSRF script must not come back as a 304 (every
            # write from it would be refused); the pages served now are never cached
            for name in ("If-None-Match", "If-Modified-Since"):
                if name in headers:
                    del headers[name]
        return headers

    def get_request_headers_override(self) -> dict[str, str]:
        """Every header the proxy sets on what it forwards to MLflow (the one place for them)."""
        target = _service(self).proxy_target
        if target is None:
            return {}
        host, port = target
        headers = {"Host": f"{host}:{port}"}
        authorization = _service(self).authorization()
        if authorization:  # the embedded server's token, or the user's name and password
            headers["Authorization"] = authorization
        if "Origin" in self.request.headers:
            headers["Origin"] = f"http://{host}:{port}"
        return headers

    async def _forward(self, proxied_path: str) -> None:
        target = self._target()
        if target is None or self._refuse_while_not_ready():
            return
        await ProxyHandler.proxy(self, target[0], target[1], proxied_path)

    async def http_get(self, proxied_path: str = "") -> None:
        _ = self.xsrf_token  # sets the `_xsrf` cookie that MLflow's pages echo, when missing
        await self._forward(proxied_path)

    async def open(self, proxied_path: str = "") -> None:
        target = _service(self).proxy_target
        if target is None:
            self.close(code=1011, reason="No MLflow UI is served here")
            return
        await self.proxy_open(target[0], target[1], proxied_path)

    async def post(self, proxied_path: str = "") -> None:
        await self._forward(proxied_path)

    # every other method is forwarded as POST is
    put = patch = delete = head = options = post


def _without_cookies(header: str, names: set[str]) -> str:
    """A ``Cookie`` header without the cookies named ``names``."""
    parts = [part.strip() for part in header.split(";")]
    return "; ".join(p for p in parts if p and p.split("=", 1)[0].strip() not in names)


class MlflowAddSlashHandler(ExtensionHandlerMixin, APIHandler):
    @tornado.web.authenticated
    def get(self) -> None:
        self.redirect(self.request.path + "/")


def mlflow_handlers() -> list[tuple[str, type]]:
    return [
        (r"/air/api/mlflow", MlflowStatusHandler),
        (r"/air/api/runs", RunsHandler),
        (r"/air/api/runs/([A-Za-z0-9_-]{1,64})", RunHandler),
        (r"/air/api/experiments", ExperimentsHandler),
        (r"/air/api/experiments/([0-9A-Za-z_-]{1,64})/share", ShareExperimentHandler),
        (r"/air/mlflow", MlflowAddSlashHandler),
        (r"/air/mlflow/(.*)", MlflowProxyHandler),
        (rf"/{SCRIPT_PATH}", MlflowPageScriptHandler),
    ]
