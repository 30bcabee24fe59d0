"""A team MLflow server with MLflow's own authentication (``mlflow server --app-name
basic-auth``, a real one on 127.0.0.1): runs recorded as the user whose credentials made them,
``air share experiment``, one clear sentence for a wrong password, the credentials file only its
owner may read, and secrets kept out of a job's records and logs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from team_support import call
from workloads_support import PY, air, air_environment, wait_for, wait_supervisor_gone, write

# one worker runs them all (make test: --dist loadgroup), so the team server starts once
pytestmark = [pytest.mark.timeout(600), pytest.mark.xdist_group("team-mlflow")]


def as_user(monkeypatch: pytest.MonkeyPatch, server, name: str | None, password: str | None = None):
    """This process (and what it starts) as ``name`` on the team server: MLflow's variables."""
    from jupyter_air.tracking import readiness

    readiness.forget()
    monkeypatch.setenv("MLFLOW_TRACKING_URI", server.url)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)  # the session's embedded one's
    monkeypatch.setenv("HOME", str(server.folder / "home-of-nobody"))  # no credentials file
    if name is None:
        monkeypatch.delenv("MLFLOW_TRACKING_USERNAME", raising=False)
        monkeypatch.delenv("MLFLOW_TRACKING_PASSWORD", raising=False)
        return
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", name)
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", password or server.users[name][1])


def can_read(server, name: str, experiment_id: str) -> int:
    return call(
        server.url,
        f"api/2.0/mlflow/experiments/get?experiment_id={experiment_id}",
        server.users[name],
    )


# the credentials -------------------------------------------------------------------------------
def test_credentials_come_from_the_environment_then_a_file_only_its_owner_reads(tmp_path):
    from jupyter_air.tracking.identity import CredentialsError, user_credentials

    path = tmp_path / "credentials"
    path.write_text("[mlflow]\nmlflow_tracking_username = carol\nmlflow_tracking_password = pw1\n")
    path.chmod(0o600)

    found = user_credentials({}, path)
    assert found is not None and (found.username, found.password) == ("carol", "pw1")
    assert "pw1" not in repr(found)
    env = {"MLFLOW_TRACKING_USERNAME": "dave", "MLFLOW_TRACKING_PASSWORD": "pw2"}
    assert user_credentials(env, path).username == "dave"  # type: ignore[union-attr]
    assert user_credentials({}, tmp_path / "none") is None

    path.chmod(0o644)
    with pytest.raises(CredentialsError) as refused:
        user_credentials({}, path)
    assert f"chmod 600 {path}" in str(refused.value) and "mode 644" in str(refused.value)
    assert "pw1" not in str(refused.value)


def test_secrets_of_the_environment_are_hidden_from_stored_text():
    from jupyter_air.tracking.identity import credentials_env, hide_secrets

    env = {
        "MLFLOW_TRACKING_USERNAME": "alice",
        "MLFLOW_TRACKING_PASSWORD": "s3cret-pw",
        "MLFLOW_TRACKING_TOKEN": "tok-123456",
        "HOME": "/home/alice",
    }
    text = "POST http://alice:s3cret-pw@host/ with Bearer tok-123456 failed"
    assert hide_secrets(text, env) == "POST http://alice:***@host/ with Bearer *** failed"
    assert credentials_env(env) == {
        "MLFLOW_TRACKING_USERNAME": "alice",
        "MLFLOW_TRACKING_PASSWORD": "s3cret-pw",
    }


def test_a_workload_yaml_may_not_hold_a_credential(tmp_path):
    from jupyter_air.workloads.spec import SpecError
    from jupyter_air.workloads.spec_loading import load_spec

    for name in ("MLFLOW_TRACKING_PASSWORD", "MLFLOW_TRACKING_USERNAME", "MLFLOW_TRACKING_TOKEN"):
        text = f"experiment_name: e\ncommand: echo\nenv_variables: {{{name}: hunter2}}\n"
        with pytest.raises(SpecError) as error:
            load_spec(text, base_dir=tmp_path)
        said = str(error.value)
        assert f"env_variables.{name}" in said and "is a credential" in said, said
        assert "hunter2" not in said


# the server ------------------------------------------------------------------------------------
def test_a_run_made_with_alices_credentials_is_alices_and_bob_reads_it_once_shared(
    team_server, monkeypatch, tmp_path
):
    """The kernel's path (``ManagedRun``, what ``.distributed()`` uses) with alice's
    credentials in the environment, as the Jupyter server gives them to kernels."""
    from tracking_support import reset_fluent, use_server

    import mlflow
    from jupyter_air.tracking.runs import ManagedRun

    use_server(monkeypatch, team_server.url)
    as_user(monkeypatch, team_server, "alice")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", "alice-private")
    try:
        with ManagedRun.start(launcher="distributed", run_name="a", system_metrics=False) as run:
            pass
    finally:
        reset_fluent()
    alice = mlflow.MlflowClient(team_server.url)
    recorded = alice.get_run(run.run_id)
    assert recorded.info.user_id == "alice" and recorded.info.status == "FINISHED"
    experiment_id = run.experiment_id

    assert can_read(team_server, "bob", experiment_id) == 403

    air_environment(monkeypatch, tmp_path, team_server.url)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    result = air("share", "experiment", "alice-private", "--with", "bob", "--permission", "read")
    assert result.returncode == 0, result.stderr
    assert "bob has READ on experiment 'alice-private'" in result.stdout
    assert can_read(team_server, "bob", experiment_id) == 200

    # again, by id, with another permission: the grant is replaced
    result = air("share", "experiment", experiment_id, "--with", "bob", "--permission", "EDIT")
    assert result.returncode == 0, result.stderr
    assert "replaces" in result.stdout
    assert team_server.users["alice"][1] not in result.stdout + result.stderr


def test_air_reads_the_credentials_file_only_when_others_cannot(team_server, monkeypatch, tmp_path):
    import mlflow

    as_user(monkeypatch, team_server, "alice")
    mlflow.MlflowClient(team_server.url).create_experiment("alice-from-file")
    air_environment(monkeypatch, tmp_path, team_server.url)
    as_user(monkeypatch, team_server, None)  # nothing in the environment: the file only
    home = tmp_path / "home"
    monkeypatch.setenv("HOME", str(home))
    credentials = home / ".mlflow" / "credentials"
    credentials.parent.mkdir(parents=True)
    password = team_server.users["alice"][1]
    credentials.write_text(
        f"[mlflow]\nmlflow_tracking_username = alice\nmlflow_tracking_password = {password}\n"
    )
    share = ("share", "experiment", "alice-from-file", "--with", "bob", "--permission", "READ")

    credentials.chmod(0o644)
    refused = air(*share)
    assert refused.returncode == 3, refused.stderr
    assert f"MLflow's credentials file {credentials} can be read by other users" in refused.stderr
    assert f"chmod 600 {credentials}" in refused.stderr and password not in refused.stderr
    listed = air("list", "runs")  # what needs no credentials works, the file said once
    assert listed.returncode == 0, listed.stderr
    assert listed.stderr.count("can be read by other users") == 1, listed.stderr

    credentials.chmod(0o600)
    shared = air(*share)
    assert shared.returncode == 0, shared.stderr
    assert "bob has READ on experiment 'alice-from-file'" in shared.stdout


def test_sharing_says_what_is_wrong_in_a_sentence(team_server, monkeypatch, tmp_path):
    from jupyter_air.tracking.experiments import get_or_create_experiment

    as_user(monkeypatch, team_server, "alice")
    import mlflow

    get_or_create_experiment("alice-shares", client=mlflow.MlflowClient(team_server.url))
    air_environment(monkeypatch, tmp_path, team_server.url)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)

    unknown_user = air(
        "share", "experiment", "alice-shares", "--with", "zed", "--permission", "READ"
    )
    assert unknown_user.returncode == 5, unknown_user.stderr
    assert f"MLflow at {team_server.url} has no user 'zed'" in unknown_user.stderr

    unknown = air("share", "experiment", "no-such-exp", "--with", "bob", "--permission", "READ")
    assert unknown.returncode == 5, unknown.stderr
    assert "No experiment 'no-such-exp' that user alice can see" in unknown.stderr

    for result in (unknown_user, unknown):
        assert "Traceback" not in result.stderr
        assert team_server.users["alice"][1] not in result.stderr + result.stdout


def test_sharing_on_a_server_without_authentication_says_so():
    """A tracking server without MLflow's auth app (no ``users/current``) has no permissions to
    set: said in a sentence, nothing sent."""
    import http.server
    import threading

    from jupyter_air.tracking.identity import Credentials
    from jupyter_air.tracking.sharing import ShareError, share_experiment

    asked: list[str] = []

    class NoAuth(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            asked.append(self.path)
            self.send_response(404)
            self.end_headers()

        do_POST = do_GET

        def log_message(self, *args) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), NoAuth)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        with pytest.raises(ShareError) as error:
            share_experiment(url, "x", "bob", "READ", Credentials("alice", "pw"))
    finally:
        server.shutdown()
        thread.join(timeout=30)
    assert str(error.value).startswith(f"MLflow at {url} runs without authentication")
    assert asked == ["/api/2.0/mlflow/users/current"]


def test_a_wrong_password_is_one_clear_sentence(team_server, monkeypatch, tmp_path):
    as_user(monkeypatch, team_server, "alice", password="not-her-password")
    air_environment(monkeypatch, tmp_path, team_server.url)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    write(tmp_path / "project", "never.py", "print('never')\n")
    spec = write(
        tmp_path / "project",
        "w.yaml",
        f"experiment_name: refused\ncompute: {{accelerator_type: CPU}}\ncommand: {PY} never.py\n",
    )

    result = air("run", str(spec), timeout=120)

    expected = f"MLflow at {team_server.url} refused user alice: wrong password or unknown user."
    assert result.returncode == 3, result.stderr
    assert result.stderr.count(expected) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "not-her-password" not in result.stderr + result.stdout


def test_the_kernels_path_says_a_wrong_password_in_a_sentence(team_server, monkeypatch):
    from jupyter_air.tracking.readiness import TrackingServerRefused, wait_for_tracking_server

    as_user(monkeypatch, team_server, "bob", password="wrong")
    with pytest.raises(TrackingServerRefused) as error:
        wait_for_tracking_server(team_server.url)
    assert str(error.value) == (
        f"MLflow at {team_server.url} refused user bob: wrong password or unknown user."
    )
    as_user(monkeypatch, team_server, "bob")
    assert wait_for_tracking_server(team_server.url) >= 0.0


def test_a_workload_logs_its_run_as_the_user_and_keeps_no_secret(
    team_server, monkeypatch, tmp_path
):
    as_user(monkeypatch, team_server, "bob")
    data = air_environment(monkeypatch, tmp_path, team_server.url)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    password = team_server.users["bob"][1]
    project = tmp_path / "project"  # its own folder: the snapshot holds nothing else
    write(
        project,
        "train.py",
        """
        import os

        import mlflow

        mlflow.log_metric("loss", 0.5)  # into the attempt's run (MLFLOW_RUN_ID)
        print("user", os.environ["MLFLOW_TRACKING_USERNAME"])
        """,
    )
    spec = write(
        project,
        "w.yaml",
        f"experiment_name: bobs-workload\ncompute: {{accelerator_type: CPU}}\n"
        f"command: {PY} train.py\n",
    )

    result = air("run", str(spec), "--output", "json", timeout=180)
    assert result.returncode == 0, result.stderr
    job_id = json.loads(result.stdout)["id"]
    from jupyter_air.workloads.store import JobStore

    job = wait_for(JobStore.for_data_dir(data), job_id, timeout=240)
    assert job.status == "SUCCEEDED", job

    import mlflow

    bob = mlflow.MlflowClient(team_server.url)
    experiment = bob.get_experiment_by_name("bobs-workload")
    assert experiment is not None
    runs = bob.search_runs([experiment.experiment_id])
    assert runs and {r.info.user_id for r in runs} == {"bob"}
    assert runs[0].data.metrics.get("loss") == 0.5
    assert can_read(team_server, "alice", str(experiment.experiment_id)) == 403

    wait_supervisor_gone(job)  # what it writes last is searched too
    files = _files(data)
    assert any(b"user bob" in p.read_bytes() for p in files), "the job's log has no 'user bob'"
    leaked = [str(p) for p in files if password.encode() in p.read_bytes()]
    assert not leaked, f"bob's password is written in {leaked}"


def test_the_jupyter_servers_kernels_and_queries_use_the_users_credentials(team_server):
    from jupyter_air.server.mlflow_service import MlflowService

    alice = team_server.users["alice"]
    env = {
        "MLFLOW_TRACKING_URI": team_server.url,
        "MLFLOW_TRACKING_USERNAME": alice[0],
        "MLFLOW_TRACKING_PASSWORD": alice[1],
    }
    service = MlflowService(base_url="/", data_dir=team_server.folder, environ=env)
    kernel = service.kernel_environment()
    assert kernel["MLFLOW_TRACKING_USERNAME"] == "alice"
    assert kernel["MLFLOW_TRACKING_PASSWORD"] == alice[1]
    assert (service.authorization() or "").startswith("Basic ")
    assert alice[1] not in service.status().model_dump_json()

    import asyncio

    async def experiments(s: MlflowService):
        try:
            return await s.list_experiments()
        finally:
            await s.close()

    assert isinstance(asyncio.run(experiments(service)), list)

    wrong = MlflowService(
        base_url="/", data_dir=team_server.folder, environ={**env, "MLFLOW_TRACKING_PASSWORD": "x"}
    )
    from jupyter_air.server.mlflow_queries import MlflowRefused

    with pytest.raises(MlflowRefused) as refused:
        asyncio.run(experiments(wrong))
    expected = f"MLflow at {team_server.url} refused user alice: wrong password or unknown user."
    assert str(refused.value) == expected
    assert wrong.status().error == expected


def _files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file()]


# the Experiment panel's backend ----------------------------------------------------------------
@pytest.fixture
def jp_server_config(team_server, monkeypatch) -> dict:
    """A Jupyter server started by alice, on the team server."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", team_server.url)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    monkeypatch.setenv("MLFLOW_TRACKING_USERNAME", "alice")
    monkeypatch.setenv("MLFLOW_TRACKING_PASSWORD", team_server.users["alice"][1])
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_air": True}},
        "JupyterAir": {"gpu_backend": "simulated", "mlflow_embedded": False},
    }


async def test_the_experiment_panels_backend_shares_as_the_servers_user(team_server, jp_fetch):
    from test_api_contract import check_answer
    from tornado.httpclient import HTTPClientError

    import mlflow
    from jupyter_air.api.mlflow import SharedExperiment

    experiment_id = mlflow.MlflowClient(team_server.url).create_experiment("alice-panel")
    assert can_read(team_server, "bob", experiment_id) == 403

    path = ("air", "api", "experiments", experiment_id, "share")
    body = json.dumps({"username": "bob", "permission": "READ"})
    answer = json.loads((await jp_fetch(*path, method="POST", body=body)).body)
    check_answer(SharedExperiment, answer)
    assert answer["experiment_name"] == "alice-panel" and answer["replaced"] is False
    assert can_read(team_server, "bob", experiment_id) == 200

    with pytest.raises(HTTPClientError) as unknown:
        body = json.dumps({"username": "zed", "permission": "READ"})
        await jp_fetch(*path, method="POST", body=body)
    assert unknown.value.code == 404
    message = json.loads(unknown.value.response.body)["message"]  # type: ignore[union-attr]
    assert message == f"MLflow at {team_server.url} has no user 'zed'."

    with pytest.raises(HTTPClientError) as invalid:
        body = json.dumps({"username": "bob", "permission": "OWN"})
        await jp_fetch(*path, method="POST", body=body)
    assert invalid.value.code == 400
