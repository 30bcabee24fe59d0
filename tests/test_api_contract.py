"""The REST API's one contract (jupyter_air/api): the committed JSON Schema, TypeScript types and
docs/api.md section are what the models generate; the server registers exactly the endpoints
the contract lists; and every answer of a real Jupyter server (real MLflow, a real job run, a
real agent report) is what its model allows — valid against the model and the committed JSON
Schema, and unchanged by a round trip through the model (no field the model does not know, no
value it would change)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import uuid
from pathlib import Path

import jsonschema
import pytest
from pydantic import BaseModel, ValidationError
from telemetry_support import telemetry_config
from workloads_support import PY, wait_for

from jupyter_air.api import endpoints, gpu, logs, mlflow, schedules, workloads
from jupyter_air.server.gpu_handlers import gpu_handlers
from jupyter_air.server.mlflow_handlers import mlflow_handlers
from jupyter_air.server.workload_handlers import workload_handlers
from jupyter_air.telemetry.agent import AUTH_SCHEME, INGEST_PATH
from jupyter_air.telemetry.agent_tokens import mint_token
from jupyter_air.tracking.naming import TAG_NOTEBOOK
from jupyter_air.workloads import load_spec, submit
from jupyter_air.workloads.connection import Connection
from jupyter_air.workloads.store import JobStore

ROOT = Path(__file__).resolve().parent.parent
SCHEMA = json.loads((ROOT / "jupyter_air" / "api" / "schema.json").read_text())
NOT_API = {"air/mlflow"}  # a redirect to air/mlflow/
# answered only on a team MLflow server with authentication: tests/test_identities.py checks
# its answer (check_answer) against a real one
TEAM_SERVER_ONLY = {("POST", "air/api/experiments/{experiment_id}/share")}


def check_answer(model: type[BaseModel], answer: dict) -> None:
    """``answer`` is what ``model`` allows: it validates against the model and the committed
    schema, and the model gives back what it was given unchanged (a field the model does not
    know is dropped, a value it converts is changed: either is a difference)."""
    parsed = model.model_validate(answer)
    again = parsed.model_dump(mode="json", exclude_unset=True)
    assert again == answer, f"{model.__name__} changes the answer"
    schema = {**SCHEMA, "$ref": f"#/$defs/{model.__name__}"}
    jsonschema.validate(answer, schema, cls=jsonschema.Draft202012Validator)


def test_the_committed_schema_types_and_docs_are_what_the_models_generate():
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "api_types.py"), "--check"],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert set(SCHEMA["$defs"]) >= {m.__name__ for m in endpoints.models()}


def test_a_stale_generated_file_is_found(tmp_path, monkeypatch):
    sys.path.insert(0, str(ROOT / "scripts"))
    try:
        import api_types
    finally:
        sys.path.remove(str(ROOT / "scripts"))
    for path in api_types.outputs():
        copy = tmp_path / path.relative_to(ROOT)
        copy.parent.mkdir(parents=True, exist_ok=True)
        copy.write_text(path.read_text())
    monkeypatch.setattr(api_types, "ROOT", tmp_path)
    assert api_types.main(["--check"]) == 0
    models = tmp_path / "src" / "api" / "models.ts"
    models.write_text(models.read_text().replace("  run_name: string;", "  run_name?: string;"))
    assert api_types.main(["--check"]) == 1
    assert api_types.main([]) == 0  # written again
    assert api_types.main(["--check"]) == 0


def test_the_check_refuses_answers_the_model_does_not_allow():
    good = {"t": 1.5, "message": "MLflow did not answer"}
    check_answer(workloads.JobWarning, good)
    for bad in ({**good, "extra": 1}, {"t": 1.5}, {**good, "t": "soon"}):
        with pytest.raises((AssertionError, ValidationError, jsonschema.ValidationError)):
            check_answer(workloads.JobWarning, bad)


def test_the_server_registers_exactly_the_listed_endpoints():
    def shape(path: str) -> str:
        path = re.sub(r"\(.*?\)", "{}", path.strip("/").replace("(.*)", "{}"))
        return re.sub(r"\{\w*\}", "{}", path)

    served = {shape(path) for path, _ in gpu_handlers() + mlflow_handlers() + workload_handlers()}
    listed = {shape(e.path) for e in endpoints.ENDPOINTS}
    assert served - NOT_API == listed


@pytest.fixture
def air_config(tmp_path) -> dict:
    return telemetry_config(tmp_path)


@pytest.fixture
def server_env(mlflow_env) -> dict[str, str]:
    return mlflow_env


JOB = f"""
experiment_name: contract-{uuid.uuid4().hex[:8]}
compute: {{accelerator_type: CPU}}
command: >-
  {PY} -c "import sys; print('hello'); print('WARNING careful', file=sys.stderr)"
"""


async def test_every_answer_of_a_real_server_is_what_its_model_allows(
    jp_fetch, jp_serverapp, mlflow_server, air_config
):
    import asyncio

    from mlflow.tracking import MlflowClient

    data = Path(air_config["data_dir"])
    store = JobStore.for_data_dir(data)
    job = submit(
        load_spec(JOB),
        store=store,
        spec_yaml=JOB,
        connection=Connection(tracking_uri=mlflow_server.url),
    )
    await asyncio.get_running_loop().run_in_executor(None, wait_for, store, job.id)
    client = MlflowClient(tracking_uri=mlflow_server.url)
    notebook = f"contract-{uuid.uuid4().hex[:8]}.ipynb"
    experiment_id = client.create_experiment(notebook)
    run = client.create_run(experiment_id, tags={TAG_NOTEBOOK: notebook})
    client.log_metric(run.info.run_id, "loss", float("nan"))  # not JSON: served as null
    client.log_metric(run.info.run_id, "accuracy", 0.5)
    token = mint_token(data, "gpu-1")
    from jupyter_air.workloads.schedules import create_schedule
    from jupyter_air.workloads.spec import ScheduleSpec

    schedule = create_schedule(
        store, name="contract", settings=ScheduleSpec(cron="0 3 * * *"), spec_yaml=JOB,
        spec_path=None,
    )  # fmt: skip
    one = f"air/api/schedules/{schedule.id}"

    async def answer(model, *parts, code=200, **kwargs) -> dict:
        response = await jp_fetch(*parts, **kwargs)
        assert response.code == code, parts
        assert response.headers["Content-Type"].startswith("application/json"), parts
        body = json.loads(response.body)
        check_answer(model, body)
        return body

    ingest = {
        "node": "gpu-1",
        "agent": {"version": "0.1.0", "interval_s": 10.0, "started": 1.0},
        "sampling": False,
    }
    seen: set[tuple[str, str]] = set()
    runs, jobs = "air/api/runs", "air/api/workloads"
    calls = [
        ("GET", "air/api/gpu", gpu.GpuPayload, {}),
        ("POST", "air/api/gpu/refresh", gpu.GpuPayload, {"method": "POST", "body": b""}),
        ("GET", "air/api/gpu/nodes", gpu.ClusterOverview, {}),
        (
            "POST",
            "air/api/telemetry/ingest",
            gpu.IngestResponse,
            {
                "path": INGEST_PATH,
                "method": "POST",
                "body": json.dumps(ingest).encode(),
                "headers": {"Authorization": f"{AUTH_SCHEME} {token}"},
            },
        ),
        ("GET", "air/api/mlflow", mlflow.MlflowStatus, {}),
        ("GET", "air/api/runs", mlflow.RunsPayload, {"params": {"notebook": notebook}}),
        ("GET", "air/api/runs/{run_id}", mlflow.RunPayload, {"path": f"{runs}/{run.info.run_id}"}),
        ("GET", "air/api/experiments", mlflow.ExperimentsPayload, {}),
        ("GET", "air/api/workloads", workloads.WorkloadsPage, {}),
        ("GET", "air/api/workloads/{id}", workloads.JobDetail, {"path": f"{jobs}/{job.id}"}),
        (
            "GET",
            "air/api/workloads/{id}/logs",
            logs.LogPage,
            {"path": f"air/api/workloads/{job.id}/logs"},
        ),
        (
            "GET",
            "air/api/runs/{run_id}/logs",
            logs.LogPage,
            {"path": f"{runs}/{store.get_job(job.id).attempts[0].mlflow_run_id}/logs"},
        ),
        (
            "POST",
            "air/api/workloads/{id}/cancel",
            workloads.Job,
            {"path": f"air/api/workloads/{job.id}/cancel", "method": "POST", "body": b""},
        ),
        ("GET", "air/api/schedules", schedules.SchedulesPage, {}),
        ("GET", "air/api/schedules/{id}", schedules.ScheduleDetail, {"path": one}),
        (
            "POST", "air/api/schedules/{id}/pause", schedules.Schedule,
            {"path": f"{one}/pause", "method": "POST", "body": b""},
        ),
        (
            "POST", "air/api/schedules/{id}/resume", schedules.Schedule,
            {"path": f"{one}/resume", "method": "POST", "body": b""},
        ),
        (
            "POST", "air/api/schedules/{id}/trigger", workloads.Job,
            {"path": f"{one}/trigger", "method": "POST", "body": b""},
        ),
        (
            "DELETE", "air/api/schedules/{id}", schedules.Schedule,
            {"path": one, "method": "DELETE"},
        ),
    ]  # fmt: skip
    bodies = {}
    for method, path, model, options in calls:
        listed = next(e for e in endpoints.ENDPOINTS if (e.method, e.path) == (method, path))
        assert listed.answer is model
        where = options.pop("path", path)
        code = 200 if listed.status == 202 else listed.status  # the job run had ended: 200
        bodies[path] = await answer(model, *where.split("/"), code=code, **options)
        seen.add((method, path))
    listed = {(e.method, e.path) for e in endpoints.ENDPOINTS if e.answer is not None}
    assert seen == listed - TEAM_SERVER_ONLY

    # what the answers say, not only their shapes
    runs = bodies["air/api/runs"]["runs"]
    assert [r["metrics"] for r in runs] == [{"accuracy": 0.5, "loss": None}]
    detail = bodies["air/api/workloads/{id}"]
    assert detail["status"] == "SUCCEEDED" and detail["spec_yaml"] == JOB
    assert detail["supervisor_seen_at"] is not None and detail["supervisor_silent_s"] is None
    levels = {line["level"] for line in bodies["air/api/workloads/{id}/logs"]["lines"]}
    assert levels == {"info", "warning"}
    assert bodies["air/api/telemetry/ingest"]["accepted"] == 0
    (listed,) = bodies["air/api/schedules"]["schedules"]
    assert listed["name"] == "contract" and listed["next_firing_at"] is not None
    assert bodies["air/api/schedules/{id}/pause"]["paused"] is True
    assert bodies["air/api/schedules/{id}/resume"]["paused"] is False
    fired = bodies["air/api/schedules/{id}/trigger"]
    assert store.get_job(fired["id"]).schedule_id == schedule.id
    deleted = bodies["air/api/schedules/{id}"]  # DELETE's answer: the schedule as it was
    assert [(f["slot"], f["job_id"]) for f in deleted["firings"]] == [(None, fired["id"])]
    assert store.list_schedules() == []
    await asyncio.get_running_loop().run_in_executor(None, wait_for, store, fired["id"])
