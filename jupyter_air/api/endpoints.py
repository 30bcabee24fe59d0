"""Every endpoint of the REST API: its method, path (under ``<base_url>``), the authorizer's
resource, and the models of what it answers and takes. docs/api.md's table is generated from
this list, and the contract test checks that the server registers exactly these routes and that
each answer validates against its model."""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel

from . import gpu, logs, mlflow, schedules, workloads

# the authorizer's resources: a deployment can grant one area and not another
GPU = "air-gpu"
TELEMETRY = "air-telemetry"
MLFLOW = "air-mlflow"
RUNS = "air-runs"
WORKLOADS = "air-workloads"
LOGS = "air-logs"


@dataclass(frozen=True)
class Endpoint:
    method: str
    path: str  # under the server's base URL; {name} is a path parameter
    resource: str
    summary: str
    answer: type[BaseModel] | None  # None: not a JSON answer (a file, the proxied UI)
    body: type[BaseModel] | None = None
    status: int = 200


ENDPOINTS: tuple[Endpoint, ...] = (
    Endpoint(
        "GET", "air/api/gpu", GPU,
        "GPU devices, backend, state and history", gpu.GpuPayload,
    ),
    Endpoint(
        "POST", "air/api/gpu/refresh", GPU,
        "take a sample now, answer like `GET air/api/gpu`", gpu.GpuPayload,
    ),
    Endpoint(
        "GET", "air/api/gpu/nodes", GPU,
        "every node's latest values, health and state", gpu.ClusterOverview,
    ),
    Endpoint(
        "POST", "air/api/telemetry/ingest", TELEMETRY,
        "a node agent's report (agent token only)", gpu.IngestResponse, gpu.IngestRequest,
    ),
    Endpoint(
        "GET", "air/api/telemetry/channel", TELEMETRY,
        "a node agent's websocket: a report (`IngestRequest`) a message, each answered "
        "(`IngestResponse`, or `{status, message}`; with `X-Air-Answer-Every`, only news) "
        "(agent token only)", None, status=101,
    ),
    Endpoint(
        "GET", "air/api/mlflow", MLFLOW,
        "which MLflow server, its state, where its UI is", mlflow.MlflowStatus,
    ),
    Endpoint(
        "ANY", "air/mlflow/{path}", MLFLOW,
        "the MLflow UI (and the API it calls), proxied", None,
    ),
    Endpoint(
        "GET", "air/static/mlflow-page.js", MLFLOW,
        "the script the proxy adds to MLflow's pages (a job-backed run page's Logs tab)", None,
    ),
    Endpoint(
        "GET", "air/api/runs", RUNS,
        "the runs of a notebook's experiment, or of an experiment", mlflow.RunsPayload,
    ),
    Endpoint(
        "GET", "air/api/runs/{run_id}", RUNS,
        "one run, as it is now", mlflow.RunPayload,
    ),
    Endpoint(
        "GET", "air/api/experiments", RUNS,
        "experiments, most recently updated first", mlflow.ExperimentsPayload,
    ),
    Endpoint(
        "POST", "air/api/experiments/{experiment_id}/share", RUNS,
        "share an experiment with a user of a team MLflow server (its auth app)",
        mlflow.SharedExperiment, mlflow.ShareRequest,
    ),
    Endpoint(
        "GET", "air/api/workloads", WORKLOADS,
        "job runs, newest first", workloads.WorkloadsPage,
    ),
    Endpoint(
        "GET", "air/api/workloads/{id}", WORKLOADS,
        "one job run, with its YAML", workloads.JobDetail,
    ),
    Endpoint(
        "POST", "air/api/workloads/{id}/cancel", WORKLOADS,
        "ask for cancellation; answers at once with the job run (follow it with GET)",
        workloads.Job, status=202,
    ),
    Endpoint(
        "GET", "air/api/workloads/{id}/logs", LOGS,
        "log lines: filters, cursors, follow", logs.LogPage,
    ),
    Endpoint(
        "GET", "air/api/workloads/{id}/logs/download", LOGS,
        "every matching line, as a file", None,
    ),
    Endpoint(
        "GET", "air/api/runs/{run_id}/logs", LOGS,
        "the logs of the job run and attempt an MLflow run records (for its run page): "
        "the same query and access rule", logs.LogPage,
    ),
    Endpoint(
        "GET", "air/api/runs/{run_id}/logs/download", LOGS,
        "every matching line of that attempt, as a file", None,
    ),
    Endpoint(
        "GET", "air/api/schedules", WORKLOADS,
        "every schedule: next firing, last runs and firings", schedules.SchedulesPage,
    ),
    Endpoint(
        "GET", "air/api/schedules/{id}", WORKLOADS,
        "one schedule (by id or name), with its workload YAML", schedules.ScheduleDetail,
    ),
    Endpoint(
        "DELETE", "air/api/schedules/{id}", WORKLOADS,
        "remove the schedule (its job runs stay); answers it as it was", schedules.Schedule,
    ),
    Endpoint(
        "POST", "air/api/schedules/{id}/pause", WORKLOADS,
        "stop firing until resumed", schedules.Schedule,
    ),
    Endpoint(
        "POST", "air/api/schedules/{id}/resume", WORKLOADS,
        "fire again from the next slot", schedules.Schedule,
    ),
    Endpoint(
        "POST", "air/api/schedules/{id}/trigger", WORKLOADS,
        "one job run now, outside the slots", workloads.Job, status=201,
    ),
)  # fmt: skip


def models() -> list[type[BaseModel]]:
    """Every model an endpoint answers or takes, once, in the order of the endpoints."""
    found: list[type[BaseModel]] = []
    for endpoint in ENDPOINTS:
        for model in (endpoint.answer, endpoint.body):
            if model is not None and model not in found:
                found.append(model)
    return found
