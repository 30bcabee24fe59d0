"""MLflow as the Jupyter server sees it: which tracking server (embedded or the user's), where the
browser reaches its UI, what kernels are told, and the run queries behind the Experiment panel.

Modes:
- ``embedded``: no ``MLFLOW_TRACKING_URI`` was set; we run one (mlflow_process.py) and proxy its UI
  at ``<base_url>air/mlflow/``.
- ``external``: the user's ``MLFLOW_TRACKING_URI``. A loopback http server is proxied like the
  embedded one (the browser may be on another machine); another http(s) server is linked to
  directly; a non-http store (sqlite:, file:, databricks) has no UI link.
- ``disabled``: no URI and the embedded server turned off.

MLflow client calls block, so they run on a thread, never on the event loop.
"""

from __future__ import annotations

import asyncio
import os
import time
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..mlflow_server.records import mlflow_folder
from ..tracking.links import redacted, run_links
from ..tracking.naming import (
    TAG_ATTEMPT,
    TAG_JOB,
    TAG_LAUNCHER,
    TAG_NOTEBOOK,
    current_user,
    default_experiment_name,
)
from .mlflow_process import READY, EmbeddedMlflow, healthy

UI_PATH = "air/mlflow/"
RUN_STATUSES = ("RUNNING", "SCHEDULED", "FINISHED", "FAILED", "KILLED")
_LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
_METRICS_SHOWN = 4


class MlflowService:
    def __init__(
        self,
        *,
        base_url: str,
        data_dir: Path,
        embedded: bool = True,
        start_timeout_s: float = 180.0,
        environ: dict[str, str] | None = None,
    ) -> None:
        environ = os.environ if environ is None else environ
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.user_uri = environ.get("MLFLOW_TRACKING_URI") or None
        # the credentials this server's own client sends to the user's server (MLflow reads
        # them from the environment); the UI proxy sends them too
        self.user_token = environ.get("MLFLOW_TRACKING_TOKEN") or None
        self.process: EmbeddedMlflow | None = None
        if self.user_uri:
            self.mode = "external"
        elif embedded:
            self.mode = "embedded"
            self.process = EmbeddedMlflow(mlflow_folder(data_dir), start_timeout_s=start_timeout_s)
        else:
            self.mode = "disabled"
        self._client: Any = None
        self._client_uri: str | None = None
        self._external_health: tuple[float, bool] | None = None

    # where things are ----------------------------------------------------------------------
    @property
    def tracking_uri(self) -> str | None:
        """The tracking server's URI (the embedded one's once it was started)."""
        if self.process is not None:
            return self.process.url
        return self.user_uri

    @property
    def token(self) -> str | None:
        """The bearer token of the tracking server: the embedded one's, or the user's
        ``MLFLOW_TRACKING_TOKEN`` for their own server."""
        if self.process is not None:
            return self.process.token
        return self.user_token if self.mode == "external" else None

    @property
    def proxy_target(self) -> tuple[str, int] | None:
        """(host, port) the UI proxy forwards to, or None when there is nothing to proxy."""
        if self.process is not None:
            port = self.process.port
            return ("127.0.0.1", port) if port else None
        if self.user_uri:
            parsed = urllib.parse.urlparse(self.user_uri)
            if parsed.scheme == "http" and (parsed.hostname or "") in _LOOPBACK:
                return (parsed.hostname or "127.0.0.1", parsed.port or 80)
        return None

    @property
    def ui(self) -> str | None:
        """Where the browser reaches the MLflow UI: a path on this server, a URL, or None."""
        if self.proxy_target is not None:
            return self.base_url + UI_PATH
        if self.user_uri and urllib.parse.urlparse(self.user_uri).scheme in ("http", "https"):
            return self.user_uri.rstrip("/") + "/"
        return None

    def kernel_environment(
        self, server_url: str | None = None, root_dir: str | None = None
    ) -> dict[str, str]:
        """What kernels (and everything started from them) need to use and link to MLflow.

        ``JPY_SESSION_NAME`` (set by Jupyter) is the notebook's OS path; with the server's root
        folder a kernel finds the notebook's path as the server names it."""
        env = {
            "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
            "JUPYTER_AIR_BASE_URL": self.base_url,
        }
        if root_dir:
            env["JUPYTER_AIR_ROOT_DIR"] = root_dir
        if self.tracking_uri:
            env["MLFLOW_TRACKING_URI"] = self.tracking_uri
        if self.process is not None and self.token:
            env["MLFLOW_TRACKING_TOKEN"] = self.token
        if self.ui:
            env["JUPYTER_AIR_MLFLOW_UI"] = self.ui
        if server_url:
            env["JUPYTER_AIR_SERVER_URL"] = server_url
        return env

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        if self.process is not None:
            self.process.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    # status --------------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        base: dict[str, Any] = {
            "mode": self.mode,
            "tracking_uri": redacted(self.tracking_uri),
            "ui": self.ui,
            "elapsed_s": None,
            "error": None,
            "restarts": 0,
        }
        if self.process is not None:
            base.update(self.process.status())
            return base
        if self.mode == "disabled":
            base["state"] = "disabled"
            base["error"] = (
                "MLflow is turned off (JupyterAir.mlflow_embedded = False) and "
                "MLFLOW_TRACKING_URI is not set."
            )
            return base
        base["state"] = "external"
        return base

    @property
    def ready(self) -> bool:
        if self.process is not None:
            return self.process.state == READY
        return self.mode == "external"

    async def reachable(self) -> bool:
        """For an external http server: does it answer (cached for 10 s)."""
        if self.mode != "external" or not self.user_uri:
            return self.ready
        if not self.user_uri.startswith(("http://", "https://")):
            return True
        now = time.monotonic()
        if self._external_health and now - self._external_health[0] < 10:
            return self._external_health[1]
        ok = await asyncio.get_running_loop().run_in_executor(
            None, healthy, self.user_uri.rstrip("/"), 3.0
        )
        self._external_health = (now, ok)
        return ok

    # queries (blocking: call through `run_blocking`) ---------------------------------------
    @property
    def client(self) -> Any:
        """MLflow's client for this server's queries (a new one when the server moved)."""
        if self._client is None or self._client_uri != self.tracking_uri:
            from mlflow.tracking import MlflowClient

            self._client_uri = self.tracking_uri
            self._client = MlflowClient(tracking_uri=self.tracking_uri)
        return self._client

    async def run_blocking(self, fn: Callable[..., Any], *args: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    def experiment_for_notebook(self, path: str) -> tuple[Any | None, str]:
        """The experiment a notebook's runs are in: the one of its most recent run tagged with
        the notebook, else the notebook's default experiment (which may not exist yet)."""
        client = self.client
        experiments = client.search_experiments(max_results=1000)
        if experiments:
            runs = client.search_runs(
                [e.experiment_id for e in experiments],
                filter_string=f"tags.`{TAG_NOTEBOOK}` = '{_quote(path)}'",
                order_by=["attributes.start_time DESC"],
                max_results=1,
            )
            if runs:
                experiment = client.get_experiment(runs[0].info.experiment_id)
                return experiment, experiment.name
        name = default_experiment_name(path, current_user())
        return client.get_experiment_by_name(name), name

    def list_runs(
        self, experiment_id: str, status: str | None = None, limit: int = 100
    ) -> tuple[list[dict[str, Any]], bool]:
        filter_string = f"attributes.status = '{status}'" if status else ""
        runs = self.client.search_runs(
            [experiment_id],
            filter_string=filter_string,
            order_by=["attributes.start_time DESC"],
            max_results=limit + 1,
        )
        return [run_summary(run) for run in runs[:limit]], len(runs) > limit

    def list_experiments(self, limit: int = 200) -> list[dict[str, Any]]:
        return [
            {
                "experiment_id": e.experiment_id,
                "name": e.name,
                "last_update_time": e.last_update_time,
            }
            for e in self.client.search_experiments(
                max_results=limit, order_by=["last_update_time DESC"]
            )
        ]


def run_summary(run: Any) -> dict[str, Any]:
    info, data = run.info, run.data
    metrics = {k: v for k, v in sorted(data.metrics.items()) if not k.startswith("system/")}
    shown = dict(list(metrics.items())[:_METRICS_SHOWN])
    tags = {
        k: v
        for k, v in data.tags.items()
        if k
        in (TAG_NOTEBOOK, TAG_LAUNCHER, TAG_JOB, TAG_ATTEMPT, "mlflow.parentRunId", "mlflow.user")
    }
    return {
        "run_id": info.run_id,
        "run_name": info.run_name,
        "status": info.status,
        "start_time": info.start_time,
        "end_time": info.end_time,
        "experiment_id": info.experiment_id,
        "parent_run_id": data.tags.get("mlflow.parentRunId"),
        "job_id": data.tags.get(TAG_JOB),  # a workload attempt's job run
        "metrics": shown,
        "tags": tags,
        "links": run_links(info.experiment_id, info.run_id),
    }


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")
