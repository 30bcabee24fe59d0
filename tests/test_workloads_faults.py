"""Jobs and their tracking server under faults: a Jupyter server restarted mid-job, a tracking
server that goes away mid-job and comes back, runs left open closed by the Jupyter server's
background task, the data folder rule shared by the server and everything it starts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from workloads_support import (
    PY,
    JupyterServer,
    air,
    air_environment,
    server_config,
    wait_for,
    wait_until,
    write,
)

from jupyter_air.mlflow_server.records import ServerFiles, mlflow_folder
from jupyter_air.server.mlflow_process import READY, EmbeddedMlflow, healthy
from jupyter_air.tracking.naming import TAG_ATTEMPT, TAG_JOB
from jupyter_air.workloads.connection import Connection
from jupyter_air.workloads.jobs import submit
from jupyter_air.workloads.reconcile import reconcile
from jupyter_air.workloads.spec_loading import load_spec
from jupyter_air.workloads.store import JobStore

TICKER = """
import os, sys, time
for i in range(int(sys.argv[1])):
    print(f"tick {i}", flush=True)
    time.sleep(0.5)
if len(sys.argv) > 2:
    import mlflow
    mlflow.log_metric("ticks", int(sys.argv[1]))
print("done", flush=True)
"""


def test_a_jupyter_server_restarted_mid_job_leaves_the_job_and_its_run_whole(
    mlflow_server, monkeypatch, tmp_path
):
    """The job's supervisor holds the embedded MLflow server: a Jupyter server stopped and
    started again mid-job finds it running on the same address; the job ends on time, its run
    FINISHED with what the command logged after the restart, and nothing warns."""
    data = air_environment(monkeypatch, tmp_path, None)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    monkeypatch.delenv("JUPYTER_AIR_DATA_DIR")  # the server's configuration says it
    server = JupyterServer(tmp_path, data, ready=lambda s: s.mlflow_state() == "ready")
    server.start()
    try:
        files = ServerFiles(mlflow_folder(data))
        address = files.endpoint()
        write(tmp_path, "ticker.py", TICKER)
        spec = write(
            tmp_path,
            "w.yaml",
            f"experiment_name: restart-{tmp_path.name}\ncompute: {{accelerator_type: CPU}}\n"
            f"command: {PY} ticker.py 24 log\n",
        )
        submitted = air("run", str(spec), "-o", "json", cwd=tmp_path)
        assert submitted.returncode == 0, submitted.stderr
        job_id = json.loads(submitted.stdout)["id"]
        store = JobStore.for_data_dir(data)
        wait_until(
            lambda: store.get_job(job_id).status == "RUNNING" and store.get_job(job_id).attempts,
            60,
            "the job to run",
        )
        server.stop()  # mid-job
        assert healthy(address.url, token=address.token)  # the job's server is still up
        server.start()
        assert files.endpoint() == address  # same port, same token: nothing to re-resolve
        job = wait_for(store, job_id, timeout=120)
        assert job.status == "SUCCEEDED", job.reason
        took = job.ended_at - job.attempts[0].started_at
        assert took < 12 + 30, took  # the command's 12 s and the run's end; not minutes
        assert job.warnings == []
        from mlflow.tracking import MlflowClient

        monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", address.token)
        client = MlflowClient(tracking_uri=address.url)
        run = client.get_run(job.attempts[0].mlflow_run_id)
        assert run.info.status == "FINISHED"
        assert run.data.metrics["ticks"] == 24  # logged by the node after the restart
        logged = [a.path for a in client.list_artifacts(run.info.run_id, "logs/attempt_1")]
        assert logged == ["logs/attempt_1/node_0.log"]
    finally:
        server.stop()
    guard = ServerFiles(mlflow_folder(data)).read_endpoint()
    wait_until(lambda: not guard.guard_alive(), 30, "MLflow to stop with its last user")


@pytest.fixture
def flaky_tracking(tmp_path):
    """A tracking server of the user's own (on loopback, with a token) that the test stops."""
    server = EmbeddedMlflow(tmp_path / "user-mlflow", start_timeout_s=150)
    server.start()
    wait_until(lambda: server.state == READY, 150, "the user's MLflow server")
    yield server
    server.stop()


def test_a_tracking_server_that_goes_away_mid_job_does_not_hold_the_job_up(
    mlflow_server, flaky_tracking, monkeypatch, tmp_path
):
    """MLflow stops mid-job: the job ends when its command does, the job run says what MLflow
    missed, and once MLflow answers again its run ends FINISHED with the logs attached."""
    data = air_environment(monkeypatch, tmp_path, flaky_tracking.url)
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", flaky_tracking.token)
    store = JobStore.for_data_dir(data)
    write(tmp_path, "ticker.py", TICKER)
    text = (
        f"experiment_name: away-{tmp_path.name}\ncompute: {{accelerator_type: CPU}}\n"
        f"command: {PY} ticker.py 10\n"
    )
    from jupyter_air.workloads.capacity import GpuInventory

    job = submit(
        load_spec(text, base_dir=tmp_path),
        store=store,
        spec_yaml=text,
        inventory=GpuInventory([], "none"),
        connection=Connection(tracking_uri=flaky_tracking.url, token=flaky_tracking.token),
    )
    wait_until(lambda: store.get_job(job.id).attempts, 60, "the attempt to start")
    flaky_tracking.stop()  # the tracking server goes away
    job = wait_for(store, job.id, timeout=90)
    assert job.status == "SUCCEEDED"
    took = job.ended_at - job.attempts[0].started_at
    assert took < 5 + 25, took  # the command's 5 s and bounded MLflow calls, not minutes
    assert any("did not answer" in w["message"] for w in job.warnings), job.warnings
    assert job.runs_closed_at is None
    shown = air("get", "run", job.id)
    assert "Warnings" in shown.stdout and "did not answer" in shown.stdout

    flaky_tracking.start()  # back: same folder, same port and token
    wait_until(lambda: flaky_tracking.state == READY, 150, "MLflow to come back")
    report = reconcile(store, [job.id])
    assert report.closed == [job.id], report
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=flaky_tracking.url)
    run = client.get_run(store.get_job(job.id).attempts[0].mlflow_run_id)
    assert run.info.status == "FINISHED"
    assert abs(run.info.end_time / 1000 - job.attempts[0].ended_at) < 2  # the attempt's end
    logged = [a.path for a in client.list_artifacts(run.info.run_id, "logs/attempt_1")]
    assert logged == ["logs/attempt_1/node_0.log"]


@pytest.fixture
def air_config(tmp_path: Path, mlflow_server) -> dict:
    return server_config(tmp_path / "srv")


async def test_the_server_closes_runs_that_ended_jobs_left_open(
    jp_serverapp, mlflow_server, monkeypatch, tmp_path
):
    """A job run that ended while MLflow did not answer (its run still RUNNING, an attempt
    that never got a run): the Jupyter server's background task records both."""
    import asyncio

    from mlflow.tracking import MlflowClient

    service = jp_serverapp.web_app.settings["jupyter_air"]["workloads"]
    store = service.store
    client = MlflowClient(tracking_uri=mlflow_server.url)
    experiment_id = client.create_experiment(f"open-{tmp_path.name}")
    open_run = client.create_run(experiment_id)
    job = store.create_job(
        id="00000000abcd", experiment_name=f"open-{tmp_path.name}", experiment_id=experiment_id,
        run_name="r", command="true", compute={"num_nodes": 1}, max_retries=1, spec={},
        tracking_uri=mlflow_server.url, tracking="external",
    )  # fmt: skip
    store.start_attempt(job.id, 1, mlflow_run_id=open_run.info.run_id)
    store.finish_attempt(job.id, 1, "FAILED", "exit code 1", exit_code=1)
    store.start_attempt(job.id, 2)  # MLflow was down: no run
    store.finish_attempt(job.id, 2, "SUCCEEDED", "exit code 0", exit_code=0)
    store.finish_job(job.id, "SUCCEEDED", "the command succeeded on attempt 2")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", mlflow_server.url)
    said = await asyncio.wait_for(service.reconcile_once(), 120)
    assert "1 job run(s) closed" in said, said
    job = store.get_job(job.id)
    assert job.runs_closed_at is not None
    assert client.get_run(open_run.info.run_id).info.status == "FAILED"
    late = client.get_run(job.attempts[1].mlflow_run_id)
    assert late.info.status == "FINISHED"
    assert late.data.tags[TAG_JOB] == job.id
    assert late.data.tags[TAG_ATTEMPT] == "2"


def test_the_server_honours_jupyter_air_data_dir(monkeypatch, tmp_path):
    """JUPYTER_AIR_DATA_DIR set, nothing configured: the server uses that folder, as `air`,
    kernels and supervisors do (one rule, one function)."""
    from jupyter_air.config import data_dir
    from jupyter_air.server.app import JupyterAir

    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(tmp_path / "chosen"))
    assert Path(JupyterAir().data_dir) == tmp_path / "chosen" == data_dir()
    monkeypatch.delenv("JUPYTER_AIR_DATA_DIR")
    from jupyter_core.paths import jupyter_data_dir

    assert Path(JupyterAir().data_dir) == Path(jupyter_data_dir()) / "air"
    assert Path(JupyterAir(data_dir=str(tmp_path / "configured")).data_dir) == (
        tmp_path / "configured"
    )
