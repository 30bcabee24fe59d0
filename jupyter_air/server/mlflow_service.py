"""MLflow as the Jupyter server sees it: which tracking server (embedded or the user's), where the
browser reaches its UI, what kernels are told, and the run queries behind the Experiment panel.

Modes:
- ``embedded``: no ``MLFLOW_TRACKING_URI`` was set; we run one (mlflow_process.py) and proxy its UI
  at ``<base_url>air/mlflow/``.
- ``external``: the user's ``MLFLOW_TRACKING_URI``. A loopback http server is proxied like the
  embedded one (the browser may be on another machine); another http(s) server is linked to
  directly; a non-http store (sqlite:, file:, databricks) has no UI link.
- ``disabled``: no URI and the embedded server turned off.

The run queries go through MLflow's REST API without a thread (``mlflow_queries.py``); answers
are the models of ``jupyter_air.api.mlflow``.
"""

from __future__ import annotations

import logging
import math
import os
import time
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..api.enums import MlflowMode, MlflowState, RunStatus
from ..api.mlflow import (
    Experiment,
    ExperimentRef,
    MlflowRunLinks,
    MlflowStatus,
    RunSummary,
    SharedExperiment,
)
from ..config import BASE_URL, MLFLOW_UI, ROOT_DIR, SERVER_URL
from ..mlflow_server.records import mlflow_folder
from ..tracking.identity import Credentials, CredentialsError, refused_message, user_credentials
from ..tracking.links import redacted, run_links
from ..tracking.naming import (
    TAG_ATTEMPT,
    TAG_JOB,
    TAG_LAUNCHER,
    TAG_NOTEBOOK,
    current_user,
    default_experiment_name,
)
from .mlflow_process import READY, EmbeddedMlflow
from .mlflow_queries import MlflowQueries, MlflowRefused

log = logging.getLogger(__name__)

UI_PATH = "air/mlflow/"
RUN_STATUSES = tuple(RunStatus)
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
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self.user_uri = env.get("MLFLOW_TRACKING_URI") or None
        # the credentials this server's own client sends to the user's server (MLflow reads
        # them from the environment); the UI proxy sends them too
        self.user_token = env.get("MLFLOW_TRACKING_TOKEN") or None
        # on a team server with MLflow's authentication: the user's name and password (from
        # the environment or their credentials file), for this server's calls, its UI proxy
        # and its kernels; a credentials file we refuse is said in the status
        self.credentials: Credentials | None = None
        self.credentials_error: str | None = None
        self.refused: str | None = None  # the server refused them (said once in the log)
        self.process: EmbeddedMlflow | None = None
        if self.user_uri:
            self.mode = MlflowMode.EXTERNAL
            try:
                self.credentials = user_credentials(env)
            except CredentialsError as error:
                self.credentials_error = str(error)
                log.warning("%s", error)
        elif embedded:
            self.mode = MlflowMode.EMBEDDED
            self.process = EmbeddedMlflow(mlflow_folder(data_dir), start_timeout_s=start_timeout_s)
        else:
            self.mode = MlflowMode.DISABLED
        self.queries = MlflowQueries(
            lambda: self.tracking_uri, self.authorization, refused=self._refused
        )
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
        return self.user_token if self.mode == MlflowMode.EXTERNAL else None

    def authorization(self) -> str | None:
        """The ``Authorization`` header for the tracking server: the user's name and password
        on a team server, else the bearer token (``token``), else None."""
        if self.credentials is not None and self.mode == MlflowMode.EXTERNAL:
            return self.credentials.authorization()
        token = self.token
        return f"Bearer {token}" if token else None

    def _refused(self) -> str:
        """The server refused our credentials: what to say (in the log once)."""
        who = self.credentials.username if self.credentials is not None else "(no user)"
        message = refused_message(redacted(self.tracking_uri), who)
        if self.refused != message:
            self.refused = message
            log.warning("%s", message)
        return message

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
            BASE_URL.name: self.base_url,
        }
        if root_dir:
            env[ROOT_DIR.name] = root_dir
        if self.tracking_uri:
            env["MLFLOW_TRACKING_URI"] = self.tracking_uri
        if self.process is not None and self.token:
            env["MLFLOW_TRACKING_TOKEN"] = self.token
        if self.credentials is not None and self.mode == MlflowMode.EXTERNAL:
            env.update(self.credentials.env())  # a kernel's MLflow client runs as this user
        if self.ui:
            env[MLFLOW_UI.name] = self.ui
        if server_url:
            env[SERVER_URL.name] = server_url
        return env

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        if self.process is not None:
            self.process.start()

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop()

    # status --------------------------------------------------------------------------------
    def status(self) -> MlflowStatus:
        base: dict[str, Any] = {
            "mode": self.mode,
            "tracking_uri": redacted(self.tracking_uri),
            "ui": self.ui,
        }
        if self.process is not None:
            return MlflowStatus(**base, **self.process.status())
        if self.mode == MlflowMode.DISABLED:
            return MlflowStatus(
                **base,
                state=MlflowState.DISABLED,
                error="MLflow is turned off (JupyterAir.mlflow_embedded = False) and "
                "MLFLOW_TRACKING_URI is not set.",
            )
        problem = self.credentials_error or self.refused
        if problem:
            return MlflowStatus(**base, state=MlflowState.FAILED, error=problem)
        return MlflowStatus(**base, state=MlflowState.EXTERNAL)

    def unreachable(self, error: Exception) -> MlflowStatus:
        """The status when a query got no answer, saying why."""
        status = self.status()
        message = f"MLflow at {status.tracking_uri} did not answer: {error}"
        if isinstance(error, MlflowRefused):
            message = str(error)
        return status.model_copy(update={"state": MlflowState.FAILED, "error": message})

    @property
    def ready(self) -> bool:
        if self.process is not None:
            return self.process.state == READY
        return self.mode == MlflowMode.EXTERNAL

    async def reachable(self) -> bool:
        """For an external server: does it answer (cached for 10 s)."""
        if self.mode != MlflowMode.EXTERNAL or not self.user_uri:
            return self.ready
        now = time.monotonic()
        if self._external_health and now - self._external_health[0] < 10:
            return self._external_health[1]
        ok = await self.queries.healthy()
        self._external_health = (now, ok)
        return ok

    async def close(self) -> None:
        await self.queries.close()

    # queries -------------------------------------------------------------------------------
    async def experiment_for_notebook(self, path: str) -> tuple[ExperimentRef | None, str]:
        """The experiment a notebook's runs are in: the one of its most recent run tagged with
        the notebook, else the notebook's default experiment (which may not exist yet)."""
        queries = self.queries
        experiments = await queries.search_experiments(1000, [])
        if experiments:
            runs = await queries.search_runs(
                [str(e["experiment_id"]) for e in experiments],
                f"tags.`{TAG_NOTEBOOK}` = '{_quote(path)}'",
                ["attributes.start_time DESC"],
                1,
            )
            if runs:
                experiment = _experiment(
                    await queries.get_experiment(str(runs[0]["info"]["experiment_id"]))
                )
                return experiment, experiment.name
        name = default_experiment_name(path, current_user())
        found = await queries.get_experiment_by_name(name)
        return (_experiment(found) if found is not None else None), name

    async def get_experiment(self, experiment_id: str) -> ExperimentRef:
        return _experiment(await self.queries.get_experiment(experiment_id))

    async def list_runs(
        self, experiment_id: str, status: str | None = None, limit: int = 100
    ) -> tuple[list[RunSummary], bool]:
        filter_string = f"attributes.status = '{status}'" if status else ""
        runs = await self.queries.search_runs(
            [experiment_id], filter_string, ["attributes.start_time DESC"], limit + 1
        )
        return [run_summary(run) for run in runs[:limit]], len(runs) > limit

    async def get_run(self, run_id: str) -> RunSummary:
        return run_summary(await self.queries.get_run(run_id))

    async def share_experiment(
        self, experiment_id: str, username: str, permission: str
    ) -> SharedExperiment:
        """Give ``username`` ``permission`` on the experiment, as this server's user, on a team
        server with MLflow's authentication (``tracking/sharing.py``; raises ShareError)."""
        import asyncio

        from ..tracking.sharing import ShareError, share_experiment

        uri = self.tracking_uri
        if self.mode != MlflowMode.EXTERNAL or not uri:
            raise ShareError(
                "This Jupyter server records runs in jupyter-air's own MLflow server, which has "
                "no users: sharing needs a team MLflow server with authentication "
                "(docs/teams.md).",
                409,
            )
        if self.credentials_error:
            raise ShareError(self.credentials_error, 409)
        credentials = self.credentials
        if credentials is None:
            raise ShareError(
                "The Jupyter server has no MLflow credentials: start it with "
                "MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, or a "
                "~/.mlflow/credentials readable by you alone (docs/teams.md).",
                409,
            )
        loop = asyncio.get_running_loop()  # blocking HTTP: off the event loop
        shared = await loop.run_in_executor(
            None, share_experiment, uri, experiment_id, username, permission, credentials
        )
        return SharedExperiment(**shared.__dict__)

    async def list_experiments(self, limit: int = 200) -> list[Experiment]:
        found = await self.queries.search_experiments(limit, ["last_update_time DESC"])
        return [
            Experiment(
                experiment_id=str(e["experiment_id"]),
                name=e["name"],
                last_update_time=_int(e.get("last_update_time")),
            )
            for e in found
        ]


def run_summary(run: dict[str, Any]) -> RunSummary:
    """A run as MLflow's REST API gives it (``runs/get``, ``runs/search``), summarised."""
    info, data = run["info"], run.get("data") or {}
    all_tags = {t["key"]: t["value"] for t in data.get("tags", [])}
    metrics = {
        m["key"]: _finite(m.get("value"))
        for m in sorted(data.get("metrics", []), key=lambda m: m["key"])
        if not m["key"].startswith("system/")
    }
    shown = dict(list(metrics.items())[:_METRICS_SHOWN])
    kept = (TAG_NOTEBOOK, TAG_LAUNCHER, TAG_JOB, TAG_ATTEMPT, "mlflow.parentRunId", "mlflow.user")
    run_id = info.get("run_id") or info["run_uuid"]
    experiment_id = str(info["experiment_id"])
    return RunSummary(
        run_id=run_id,
        run_name=info.get("run_name") or all_tags.get("mlflow.runName", ""),
        status=info["status"],
        start_time=_int(info.get("start_time")),
        end_time=_int(info.get("end_time")),
        experiment_id=experiment_id,
        parent_run_id=all_tags.get("mlflow.parentRunId"),
        job_id=all_tags.get(TAG_JOB),  # a workload attempt's job run
        metrics=shown,
        tags={k: v for k, v in all_tags.items() if k in kept},
        links=MlflowRunLinks(**run_links(experiment_id, run_id)),
    )


def _experiment(data: dict[str, Any]) -> ExperimentRef:
    return ExperimentRef(experiment_id=str(data["experiment_id"]), name=data["name"])


def _int(value: Any) -> int | None:
    """An int64 of MLflow's JSON (a number, or a string of digits)."""
    return int(value) if value not in (None, "") else None


def _finite(value: Any) -> float | None:
    """A metric value; None for NaN and infinities (``"NaN"`` in MLflow's JSON)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace("'", "\\'")
