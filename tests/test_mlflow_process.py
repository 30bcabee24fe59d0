"""The embedded MLflow server's lifecycle: start, health, restart after a crash, stop without
leaving a process behind, and cleanup of servers left by a Jupyter server that crashed."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from jupyter_air.server.mlflow_process import READY, STOPPED, EmbeddedMlflow, healthy


def wait_for(predicate, timeout: float = 120.0, step: float = 0.2) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def processes_using(path) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if str(path) in cmdline:
            found.append(proc)
    return found


def test_session_server_is_healthy_and_serves_the_api(mlflow_server):
    assert mlflow_server.state == READY
    assert healthy(mlflow_server.url)
    assert mlflow_server.status()["ready_after_s"] > 0
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server.url)
    experiment_id = client.create_experiment(f"lifecycle-{time.time()}")
    run = client.create_run(experiment_id)
    assert client.get_run(run.info.run_id).info.status == "RUNNING"


def test_a_crashed_server_is_restarted_and_a_stopped_one_leaves_nothing(tmp_path):
    server = EmbeddedMlflow(tmp_path / "mlflow", start_timeout_s=150)
    server.start()
    try:
        assert wait_for(lambda: server.state == READY, 150), server.status()
        first_pid = server.pid
        os.killpg(first_pid, signal.SIGKILL)  # the whole server dies
        assert wait_for(lambda: server.pid != first_pid and server.state == READY, 150)
        assert server.restarts == 1
        assert healthy(server.url)  # same URL: kernels keep working
    finally:
        server.stop()
    assert server.state == STOPPED
    assert wait_for(lambda: not processes_using(tmp_path / "mlflow"), 10), processes_using(
        tmp_path / "mlflow"
    )
    assert not list((tmp_path / "mlflow").glob("server-*.json"))


def test_a_server_left_by_a_dead_jupyter_server_is_stopped(tmp_path):
    data = tmp_path / "mlflow"
    data.mkdir()
    # a process group standing in for a leftover server, and a record naming a dead owner
    leftover = subprocess.Popen(
        [sys.executable, "-c", f"import time; time.sleep(600)  # {data}"],
        start_new_session=True,
    )
    dead_owner = subprocess.Popen([sys.executable, "-c", "pass"])
    dead_owner.wait()
    (data / f"server-{dead_owner.pid}.json").write_text(
        json.dumps({"owner": dead_owner.pid, "pid": leftover.pid, "port": 1, "store": "x"})
    )
    # a record whose owner is alive (another Jupyter server on the same folder) is left alone
    (data / "server-1.json").write_text(
        json.dumps({"owner": 1, "pid": leftover.pid, "port": 1, "store": "x"})
    )
    EmbeddedMlflow(data).stop_leftovers()
    assert leftover.wait(timeout=10) == -signal.SIGKILL
    assert not (data / f"server-{dead_owner.pid}.json").exists()
    assert (data / "server-1.json").exists()


def test_the_command_is_the_documented_one(tmp_path):
    server = EmbeddedMlflow(tmp_path, port=5123)
    command = server.command()
    assert command[1:4] == ["-m", "jupyter_air.server.process_guard", str(os.getpid())]
    assert command[5:8] == ["-m", "mlflow", "server"]
    assert command[command.index("--host") :][:2] == ["--host", "127.0.0.1"]
    assert "--workers" in command and command[command.index("--workers") + 1] == "1"
    assert f"sqlite:///{tmp_path / 'mlflow.db'}" in command
    assert server.url == "http://127.0.0.1:5123"


@pytest.mark.parametrize("uri", ["http://127.0.0.1:1", "not a url"])
def test_health_of_nothing_is_false(uri):
    assert healthy(uri, timeout=1) is False


def test_a_server_whose_jupyter_server_was_killed_stops_by_itself(tmp_path):
    """SIGKILL leaves no chance to stop MLflow: its guard sees the parent gone and stops it."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from jupyter_air.server.mlflow_process import EmbeddedMlflow\n"
        "server = EmbeddedMlflow(Path(sys.argv[1]))\n"
        "server.start()\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "mlflow")], stdout=subprocess.PIPE, text=True
    )
    guard_pid = int(owner.stdout.readline())
    assert wait_for(lambda: len(processes_using(tmp_path / "mlflow")) >= 2, 60)
    owner.kill()
    owner.wait()
    assert wait_for(lambda: not processes_using(tmp_path / "mlflow"), 20), [
        p.info["cmdline"] for p in processes_using(tmp_path / "mlflow")
    ]
    assert not psutil.pid_exists(guard_pid) or psutil.Process(guard_pid).status() == "zombie"
