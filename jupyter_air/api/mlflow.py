"""The MLflow parts of the REST API: which tracking server the Jupyter server uses and its state
(``air/api/mlflow``), runs (``air/api/runs``, ``air/api/runs/{id}``) and experiments
(``air/api/experiments``). Runs are built from MLflow's REST answers
(``server/mlflow_service.run_summary``)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import ApiModel
from .enums import MlflowMode, MlflowState, RunStatus


class MlflowStatus(ApiModel):
    """``GET air/api/mlflow``, and what every run answer says about MLflow."""

    mode: MlflowMode
    state: MlflowState
    tracking_uri: str | None = Field(None, description="passwords masked")
    ui: str | None = Field(
        None,
        description="where the browser reaches the MLflow UI: a path on this server "
        "(/user/alice/air/mlflow/) or the URL of the user's own server",
    )
    elapsed_s: float | None = Field(None, description="while starting: seconds since it began")
    error: str | None = None
    restarts: int = 0
    ready_after_s: float | None = Field(None, description="how long the last start took")
    next_start_at: float | None = Field(
        None, description="after a failed start: when the next one is tried (unix seconds)"
    )
    reachable: bool | None = Field(
        None, description="external servers, air/api/mlflow only: whether /health answered"
    )


class MlflowRunLinks(ApiModel):
    """Links of a run, as fragments relative to the MLflow UI (``#/experiments/1/runs/<id>``)."""

    run: str
    system_metrics: str
    experiment: str


class RunSummary(ApiModel):
    """A run as the Experiment panel and run displays show it."""

    run_id: str
    run_name: str
    status: RunStatus
    start_time: int | None = Field(None, description="ms since the epoch")
    end_time: int | None = Field(None, description="ms since the epoch; null while it runs")
    experiment_id: str
    parent_run_id: str | None = None
    job_id: str | None = Field(None, description="the job run this run is an attempt of")
    metrics: dict[str, float | None] = Field(
        {}, description="up to 4 latest values, no system metrics; null: NaN or infinite"
    )
    tags: dict[str, str] = Field({}, description="jupyter-air's tags, the parent, the user")
    links: MlflowRunLinks


class ExperimentRef(ApiModel):
    experiment_id: str
    name: str


class Experiment(ExperimentRef):
    """An experiment in ``GET air/api/experiments``."""

    last_update_time: int | None = Field(None, description="ms since the epoch")


class RunsPayload(ApiModel):
    """``GET air/api/runs?notebook=<path>`` or ``?experiment_id=<id>``."""

    mlflow: MlflowStatus = Field(description="'starting' or 'failed': runs is empty")
    experiment: ExperimentRef | None = Field(None, description="null: it does not exist yet")
    experiment_name: str | None = Field(
        None,
        description="the experiment the notebook uses or will use, even before it exists "
        "(null for an experiment id asked while MLflow cannot answer)",
    )
    runs: list[RunSummary] = []
    truncated: bool = Field(False, description="more runs than the limit")


class RunPayload(ApiModel):
    """``GET air/api/runs/{run_id}``: one run as it is now (null while MLflow cannot answer)."""

    mlflow: MlflowStatus
    run: RunSummary | None = None


class ExperimentsPayload(ApiModel):
    """``GET air/api/experiments``: experiments, most recently updated first."""

    mlflow: MlflowStatus
    experiments: list[Experiment] = []


class ShareRequest(ApiModel):
    """``POST air/api/experiments/{experiment_id}/share``: on a team MLflow server with
    authentication, give another user a permission on the experiment (docs/teams.md)."""

    username: str = Field(min_length=1, max_length=256, description="the MLflow user")
    permission: Literal["READ", "EDIT", "MANAGE"]


class SharedExperiment(ApiModel):
    """What ``POST air/api/experiments/{experiment_id}/share`` did."""

    experiment_id: str
    experiment_name: str
    username: str
    permission: Literal["READ", "EDIT", "MANAGE"]
    replaced: bool = Field(description="the user had another permission on it before")
