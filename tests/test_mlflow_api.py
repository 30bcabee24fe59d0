"""The MLflow status, runs and experiments API, and the UI proxy, with the user's own tracking
server (MLFLOW_TRACKING_URI on loopback: the session's real MLflow server)."""

from __future__ import annotations

import json
import time
import uuid

import pytest
from tornado.httpclient import HTTPClientError

from jupyter_air.server.mlflow_process import free_port
from jupyter_air.tracking.naming import TAG_NOTEBOOK, current_user, default_experiment_name


@pytest.fixture
def server_env(mlflow_env) -> dict[str, str]:
    return mlflow_env


def body(response) -> dict:
    return json.loads(response.body)


def make_runs(mlflow_client, notebook: str) -> tuple[str, dict[str, str]]:
    """An experiment with a finished run, a failed one, a parent and its child."""
    name = default_experiment_name(notebook, current_user())
    experiment_id = mlflow_client.create_experiment(name)
    ids = {}
    for label, status in (("first", "FINISHED"), ("broken", "FAILED"), ("parent", "RUNNING")):
        run = mlflow_client.create_run(experiment_id, run_name=label, tags={TAG_NOTEBOOK: notebook})
        mlflow_client.log_metric(run.info.run_id, "loss", 0.25)
        mlflow_client.log_metric(run.info.run_id, "system/cpu_utilization_percentage", 50)
        if status != "RUNNING":
            mlflow_client.set_terminated(run.info.run_id, status)
        ids[label] = run.info.run_id
        time.sleep(0.01)
    child = mlflow_client.create_run(
        experiment_id,
        run_name="child",
        tags={TAG_NOTEBOOK: notebook, "mlflow.parentRunId": ids["parent"]},
    )
    ids["child"] = child.info.run_id
    return experiment_id, ids


async def test_status_of_a_users_server(jp_fetch, mlflow_server, jp_base_url):
    status = body(await jp_fetch("air", "api", "mlflow"))
    assert status["mode"] == "external"
    assert status["state"] == "external"
    assert status["reachable"] is True
    assert status["tracking_uri"] == mlflow_server.url
    # a loopback server is proxied: the browser may not reach 127.0.0.1 of this machine
    assert status["ui"] == f"{jp_base_url}air/mlflow/"
    page = await jp_fetch("air", "mlflow/", headers={"Accept": "text/html"})
    assert page.code == 200


async def test_runs_of_a_notebook(jp_fetch, mlflow_client):
    notebook = f"exp-{uuid.uuid4().hex[:8]}/train.ipynb"
    experiment_id, ids = make_runs(mlflow_client, notebook)
    answer = body(await jp_fetch("air", "api", "runs", params={"notebook": notebook}))
    assert answer["experiment"] == {
        "experiment_id": experiment_id,
        "name": default_experiment_name(notebook, current_user()),
    }
    runs = {r["run_name"]: r for r in answer["runs"]}
    assert set(runs) == {"first", "broken", "parent", "child"}
    assert answer["runs"][0]["run_name"] == "child"  # newest first
    assert runs["broken"]["status"] == "FAILED"
    assert runs["child"]["parent_run_id"] == ids["parent"]
    assert runs["first"]["metrics"] == {"loss": 0.25}  # system metrics are left out
    assert runs["first"]["links"]["run"] == (
        f"#/experiments/{experiment_id}/runs/{ids['first']}?workflowType=machine_learning"
    )
    assert "/system-metrics?" in runs["first"]["links"]["system_metrics"]
    assert runs["first"]["tags"][TAG_NOTEBOOK] == notebook
    assert answer["truncated"] is False

    failed = body(
        await jp_fetch("air", "api", "runs", params={"notebook": notebook, "status": "failed"})
    )
    assert [r["run_name"] for r in failed["runs"]] == ["broken"]
    limited = body(
        await jp_fetch("air", "api", "runs", params={"experiment_id": experiment_id, "limit": "2"})
    )
    assert len(limited["runs"]) == 2 and limited["truncated"] is True


async def test_one_run_answers_its_current_status(jp_fetch, mlflow_client):
    notebook = f"one-{uuid.uuid4().hex[:8]}.ipynb"
    _, ids = make_runs(mlflow_client, notebook)
    running = body(await jp_fetch("air", "api", "runs", ids["parent"]))["run"]
    assert running["status"] == "RUNNING" and running["end_time"] is None
    mlflow_client.set_terminated(ids["parent"], "KILLED")
    ended = body(await jp_fetch("air", "api", "runs", ids["parent"]))["run"]
    assert ended["status"] == "KILLED" and ended["end_time"] >= ended["start_time"]
    assert ended["run_name"] == "parent" and ended["links"]["run"].endswith(
        f"/runs/{ids['parent']}?workflowType=machine_learning"
    )
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("air", "api", "runs", "0" * 32)
    assert error.value.code == 404
    assert "No MLflow run '000" in json.loads(error.value.response.body)["message"]


async def test_a_notebook_whose_runs_moved_experiment_follows_its_latest_run(
    jp_fetch, mlflow_client
):
    notebook = f"moved-{uuid.uuid4().hex[:8]}.ipynb"
    elsewhere = mlflow_client.create_experiment(f"team-{uuid.uuid4().hex[:8]}")
    mlflow_client.create_run(elsewhere, run_name="r", tags={TAG_NOTEBOOK: notebook})
    answer = body(await jp_fetch("air", "api", "runs", params={"notebook": notebook}))
    assert answer["experiment"]["experiment_id"] == elsewhere


async def test_a_notebook_without_runs_names_the_experiment_it_will_use(jp_fetch):
    notebook = f"new/{uuid.uuid4().hex[:8]}.ipynb"
    answer = body(await jp_fetch("air", "api", "runs", params={"notebook": notebook}))
    assert answer["experiment"] is None
    assert answer["runs"] == []
    assert answer["experiment_name"] == default_experiment_name(notebook, current_user())


async def test_experiments_are_listed_newest_first(jp_fetch, mlflow_client):
    name = f"listed-{uuid.uuid4().hex[:8]}"
    mlflow_client.create_experiment(name)
    answer = body(await jp_fetch("air", "api", "experiments"))
    assert answer["experiments"][0]["name"] == name


@pytest.mark.parametrize(
    ("params", "code", "message"),
    [
        ({}, 400, "Give 'notebook'"),
        ({"experiment_id": "424242"}, 404, "No MLflow experiment with id '424242'"),
        ({"notebook": "a.ipynb", "status": "DONE"}, 400, "'status' must be one of"),
        ({"notebook": "a.ipynb", "limit": "0"}, 400, "'limit' must be"),
    ],
)
async def test_bad_queries_are_clear_errors(jp_fetch, params, code, message):
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("air", "api", "runs", params=params)
    assert error.value.code == code
    assert message in json.loads(error.value.response.body)["message"]


@pytest.mark.parametrize(
    "parts",
    [
        ("air", "api", "runs"),
        ("air", "api", "runs", "0123abcd" * 4),
        ("air", "api", "experiments"),
        ("air", "api", "mlflow"),
    ],
)
async def test_every_endpoint_needs_the_token(jp_fetch, parts):
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch(*parts, params={"notebook": "a.ipynb"}, headers={"Authorization": ""})
    assert error.value.code == 403


async def test_unreachable_server_is_reported_with_its_uri(jp_fetch, jp_serverapp):
    service = jp_serverapp.web_app.settings["jupyter_air"]["mlflow"]
    service.user_uri = f"http://127.0.0.1:{free_port()}"
    service._external_health = None
    started = time.monotonic()
    answer = body(await jp_fetch("air", "api", "runs", params={"notebook": "a.ipynb"}))
    assert time.monotonic() - started < 10
    assert answer["mlflow"]["state"] == "failed"
    assert service.user_uri in answer["mlflow"]["error"]
    assert answer["runs"] == []


async def test_a_remote_server_is_linked_to_not_proxied(jp_fetch, jp_serverapp):
    from jupyter_air.server.mlflow_service import MlflowService

    service = MlflowService(
        base_url="/user/alice/",
        data_dir=jp_serverapp.root_dir,
        environ={"MLFLOW_TRACKING_URI": "https://mlflow.example.com/"},
    )
    assert service.proxy_target is None
    assert service.ui == "https://mlflow.example.com/"
    jp_serverapp.web_app.settings["jupyter_air"]["mlflow"] = service
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("air", "mlflow/")
    assert error.value.code == 404
    assert "open https://mlflow.example.com/ directly" in error.value.response.body.decode()


async def test_while_mlflow_starts_everything_says_so(jp_fetch, jp_serverapp, tmp_path):
    from jupyter_air.mlflow_server.records import Endpoint
    from jupyter_air.server.mlflow_service import MlflowService

    service = MlflowService(base_url="/", data_dir=tmp_path, embedded=True, environ={})
    # as its watcher sees a server 3 s into its start
    service.process.endpoint = Endpoint(free_port(), "t")
    service.process._status = {"state": "starting", "started_at": time.time() - 3}
    jp_serverapp.web_app.settings["jupyter_air"]["mlflow"] = service

    status = body(await jp_fetch("air", "api", "mlflow"))
    assert status["state"] == "starting" and status["elapsed_s"] >= 3
    runs = body(await jp_fetch("air", "api", "runs", params={"notebook": "a.ipynb"}))
    assert runs["mlflow"]["state"] == "starting" and runs["runs"] == []

    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("air", "mlflow/", headers={"Accept": "text/html"})
    assert error.value.code == 503
    page = error.value.response.body.decode()
    assert "MLflow is starting (3 s)" in page and 'http-equiv="refresh"' in page
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("air", "mlflow", "ajax-api", "2.0", "mlflow", "experiments", "search")
    assert error.value.code == 503
    assert json.loads(error.value.response.body)["message"].startswith("MLflow is starting")


async def test_artifacts_are_served_in_a_sandbox(jp_fetch, mlflow_client, tmp_path):

    experiment_id = mlflow_client.create_experiment(f"artifacts-{uuid.uuid4().hex[:8]}")
    run = mlflow_client.create_run(experiment_id)
    report = tmp_path / "report.html"
    report.write_text("<script>alert(document.cookie)</script>")
    mlflow_client.log_artifact(run.info.run_id, str(report))
    response = await jp_fetch(
        "air", "mlflow", "get-artifact", params={"path": "report.html", "run_uuid": run.info.run_id}
    )
    assert b"alert" in response.body
    assert response.headers["Content-Security-Policy"] == "sandbox"
    # the UI itself is not sandboxed
    page = await jp_fetch("air", "mlflow/", headers={"Accept": "text/html"})
    assert "Content-Security-Policy" not in page.headers or "sandbox" not in page.headers.get(
        "Content-Security-Policy", ""
    )
