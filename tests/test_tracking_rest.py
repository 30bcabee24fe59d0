"""The REST tracking client of supervisors and ``air run`` (tracking/rest.py) against a real
MLflow server: what it writes, MLflow's own client reads back the same; what MLflow's client
wrote, it reads; it retries what MLflow's client retries and says in a sentence what failed;
and a process that uses it never imports mlflow (the 1.5 CPU s it exists to save)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from mlflow.entities import RunTag
from mlflow.tracking import MlflowClient

from jupyter_air.tracking.experiments import TRAINING_EXPERIMENT_TAGS, get_or_create_experiment
from jupyter_air.tracking.rest import RestClient, RestError, client_for


@pytest.fixture
def clients(mlflow_server) -> tuple[RestClient, MlflowClient]:
    return RestClient(mlflow_server.url), MlflowClient(tracking_uri=mlflow_server.url)


def _name(what: str) -> str:
    return f"rest-{what}-{uuid.uuid4().hex[:8]}"


def test_experiments_it_creates_are_mlflows_and_a_second_creation_is_refused(clients):
    rest, mlflow = clients
    name = _name("experiment")
    assert rest.get_experiment_by_name(name) is None
    experiment = get_or_create_experiment(name, client=rest)
    theirs = mlflow.get_experiment_by_name(name)
    assert theirs is not None and theirs.experiment_id == experiment.experiment_id
    assert theirs.tags.items() >= TRAINING_EXPERIMENT_TAGS.items()
    assert experiment.lifecycle_stage == theirs.lifecycle_stage == "active"
    assert experiment.artifact_location == theirs.artifact_location
    # several processes creating it at once: the losers find the winner's
    assert get_or_create_experiment(name, client=rest).experiment_id == experiment.experiment_id
    with pytest.raises(RestError) as refused:
        rest.create_experiment(name)
    assert refused.value.error_code == "RESOURCE_ALREADY_EXISTS"
    assert name in str(refused.value) and "MLflow at http://127.0.0.1:" in str(refused.value)
    mlflow.delete_experiment(experiment.experiment_id)
    assert rest.get_experiment(experiment.experiment_id).lifecycle_stage == "deleted"


def test_a_run_it_creates_tags_and_ends_reads_the_same_in_mlflows_client(clients):
    rest, mlflow = clients
    experiment_id = rest.create_experiment(_name("runs"))
    started = int(time.time() * 1000) - 5000
    tags = {"jupyter_air.job": "abc", "mlflow.user": "alice", "mlflow.source.type": "JOB"}
    run = rest.create_run(experiment_id, start_time=started, tags=tags, run_name="train-1")
    rest.set_tag(run.info.run_id, "jupyter_air.reason", "exit code 0")
    rest.log_batch(run.info.run_id, tags=[RunTag("a", "1"), RunTag("b", "2")])
    assert rest.get_run(run.info.run_id).info.status == "RUNNING"
    rest.set_terminated(run.info.run_id, "KILLED", end_time=started + 1000)

    theirs = mlflow.get_run(run.info.run_id)
    assert theirs.info.run_name == "train-1"
    assert theirs.info.status == "KILLED"
    assert (theirs.info.start_time, theirs.info.end_time) == (started, started + 1000)
    assert theirs.info.user_id == "alice"
    assert theirs.data.tags.items() >= {**tags, "jupyter_air.reason": "exit code 0"}.items()
    assert {"a": "1", "b": "2"}.items() <= theirs.data.tags.items()
    mlflow.log_metric(run.info.run_id, "loss", 0.25)
    mlflow.log_param(run.info.run_id, "lr", "0.1")
    ours = rest.get_run(run.info.run_id)
    assert ours.info.artifact_uri == theirs.info.artifact_uri
    assert (ours.data.metrics, ours.data.params) == ({"loss": 0.25}, {"lr": "0.1"})
    assert ours.data.tags == mlflow.get_run(run.info.run_id).data.tags


def test_artifacts_it_uploads_are_listed_and_read_by_mlflow(clients, tmp_path):
    rest, mlflow = clients
    run = rest.create_run(rest.create_experiment(_name("artifacts")))
    log = tmp_path / "node_0.log"
    log.write_text("line one\nline two\n")
    rest.log_artifact(run.info.run_id, str(log), "logs/attempt_1")
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "train me.py").write_text("print('hi')\n")
    (code / "pkg" / "model.py").write_bytes(b"\x00\x01 binary")
    rest.log_artifacts(run.info.run_id, str(code), "code")

    run_id = run.info.run_id
    assert [f.path for f in mlflow.list_artifacts(run_id, "logs/attempt_1")] == [
        "logs/attempt_1/node_0.log"
    ]
    assert sorted(f.path for f in mlflow.list_artifacts(run_id, "code")) == [
        "code/pkg",
        "code/train me.py",
    ]
    got = Path(mlflow.download_artifacts(run_id, "", str(tmp_path / "back")))
    assert (got / "logs" / "attempt_1" / "node_0.log").read_text() == "line one\nline two\n"
    assert (got / "code" / "train me.py").read_text() == "print('hi')\n"
    assert (got / "code" / "pkg" / "model.py").read_bytes() == b"\x00\x01 binary"
    assert run.info.artifact_uri.startswith("mlflow-artifacts:/")  # the server's proxy took them

    # an experiment whose artifacts live on a filesystem this process sees: copied there
    shared = tmp_path / "shared-artifacts"
    local = rest.create_experiment(_name("local"), artifact_location=str(shared))
    run = rest.create_run(local)
    rest.log_artifact(run.info.run_id, str(log), "logs/attempt_1")
    [stored] = shared.rglob("node_0.log")
    assert stored.read_text() == "line one\nline two\n"
    assert stored.parent.parts[-2:] == ("logs", "attempt_1")
    assert [f.path for f in mlflow.list_artifacts(run.info.run_id, "logs/attempt_1")] == [
        "logs/attempt_1/node_0.log"
    ]


def test_a_process_using_it_never_imports_mlflow(mlflow_server):
    script = """
import sys
from jupyter_air.tracking.experiments import get_or_create_experiment
from jupyter_air.tracking.rest import client_for
client = client_for(sys.argv[1])
experiment = get_or_create_experiment(sys.argv[2], client=client)
run = client.create_run(experiment.experiment_id, tags={"k": "v"})
client.set_terminated(run.info.run_id, "FINISHED")
print(client.get_run(run.info.run_id).info.status, "mlflow" in sys.modules)
"""
    done = subprocess.run(
        [sys.executable, "-c", script, mlflow_server.url, _name("lean")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MLFLOW_TRACKING_TOKEN": mlflow_server.token or ""},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["FINISHED", "False"]


def test_other_tracking_uris_get_mlflows_own_client(tmp_path, monkeypatch):
    assert isinstance(client_for("http://127.0.0.1:5000"), RestClient)
    assert isinstance(client_for(f"sqlite:///{tmp_path}/mlflow.db"), MlflowClient)
    monkeypatch.setenv("MLFLOW_TRACKING_AUTH", "some_plugin")  # only MLflow's client knows it
    assert isinstance(client_for("https://mlflow.example"), MlflowClient)


class _Flaky(BaseHTTPRequestHandler):
    """Answers 503 to the first ``failures`` requests, then MLflow's answer to get-by-name."""

    failures = 0
    seen: list[str] = []

    def do_GET(self) -> None:
        type(self).seen.append(self.headers.get("Authorization") or "")
        if len(type(self).seen) <= type(self).failures:
            self.send_response(503)
            self.end_headers()
            return
        body = json.dumps({"experiment": {"experiment_id": "7", "name": "x"}}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def flaky_server():
    _Flaky.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Flaky)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_a_failing_server_is_retried_as_mlflows_client_would_with_the_token(
    flaky_server, monkeypatch
):
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "s3cret-token")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "2")
    _Flaky.failures = 2
    assert RestClient(flaky_server).get_experiment_by_name("x").experiment_id == "7"
    assert _Flaky.seen == ["Bearer s3cret-token"] * 3

    _Flaky.seen, _Flaky.failures = [], 5  # more failures than retries: the last answer says
    with pytest.raises(RestError) as failed:
        RestClient(flaky_server).get_experiment_by_name("x")
    assert len(_Flaky.seen) == 3 and failed.value.status == 503
    assert "s3cret" not in str(failed.value)


def test_no_answer_is_one_sentence_after_the_retries(monkeypatch):
    import socket

    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "1")
    monkeypatch.setenv("MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR", "0")
    with pytest.raises(RestError) as failed:
        RestClient(f"http://127.0.0.1:{port}").create_run("0")
    assert str(failed.value).startswith(f"MLflow at http://127.0.0.1:{port} did not answer: ")
    assert failed.value.status == 0
