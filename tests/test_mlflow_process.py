"""The embedded MLflow server's lifecycle: start, token, health, restart after a crash (of MLflow,
of its uvicorn child, of its guard), the same port and token after a restart, users that share
it, stop without leaving a process behind, and cleanup of what a dead guard left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request

import psutil
import pytest

from jupyter_air.mlflow_server.control import ensure_running, leave, stop_leftover
from jupyter_air.mlflow_server.records import (
    Lease,
    ServerFiles,
    free_port,
    live_leases,
    mlflow_folder,
)
from jupyter_air.server.mlflow_process import READY, STOPPED, EmbeddedMlflow, healthy
from jupyter_air.server.mlflow_service import MlflowService


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
        try:
            cmdline = " ".join(proc.info["cmdline"] or [])
        except psutil.Error:
            continue
        if str(path) in cmdline and proc.pid != os.getpid():
            found.append(proc)
    return found


def get(url: str, token: str | None = None) -> int:
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as error:
        return error.code


def uvicorn_child(mlflow_pid: int) -> psutil.Process:
    children = psutil.Process(mlflow_pid).children()
    assert children, "mlflow server runs uvicorn as a child"
    return children[0]


@pytest.fixture
def server(tmp_path):
    server = EmbeddedMlflow(tmp_path / "mlflow", start_timeout_s=150)
    server.start()
    assert wait_for(lambda: server.state == READY, 150), server.status()
    yield server
    server.stop()
    assert wait_for(lambda: not processes_using(tmp_path / "mlflow"), 15), processes_using(
        tmp_path / "mlflow"
    )


def test_session_server_is_healthy_and_serves_the_api(mlflow_server):
    assert mlflow_server.state == READY
    assert healthy(mlflow_server.url, token=mlflow_server.token)
    assert mlflow_server.status()["ready_after_s"] > 0
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=mlflow_server.url)  # the token comes from the environment
    experiment_id = client.create_experiment(f"lifecycle-{time.time()}")
    run = client.create_run(experiment_id)
    assert client.get_run(run.info.run_id).info.status == "RUNNING"


def test_the_port_answers_nothing_without_the_token(mlflow_server):
    """Another user of the machine reaching 127.0.0.1:<port> gets nothing without the token."""
    search = f"{mlflow_server.url}/api/2.0/mlflow/experiments/search?max_results=1"
    assert get(search) == 401
    assert get(search, token="not-the-token") == 401
    assert get(f"{mlflow_server.url}/health") == 401
    assert get(f"{mlflow_server.url}/") == 401  # the UI too
    assert get(search, token=mlflow_server.token) == 200
    assert not healthy(mlflow_server.url, token="")
    # the token is kept where only this user can read it
    mode = (mlflow_server.files.endpoint_file.stat().st_mode) & 0o777
    assert mode == 0o600
    # and so is everything MLflow keeps (its guard runs it with a umask of 077)
    files = mlflow_server.files
    for path in (files.store, files.log_file, files.status_file):
        assert path.stat().st_mode & 0o777 == 0o600, path
    for path in (files.folder, files.artifacts, files.leases):
        assert path.stat().st_mode & 0o777 == 0o700, path


def test_a_server_refusing_our_token_is_not_starting(mlflow_server):
    """401 is an answer: the wait stops at once and says so, whatever its timeout."""
    from jupyter_air.tracking.readiness import (
        TrackingServerRefused,
        forget,
        health,
        wait_for_tracking_server,
    )

    assert health(mlflow_server.url, token="not-the-token") == 401
    assert health(mlflow_server.url, token=mlflow_server.token) == 200
    assert health("http://127.0.0.1:1", timeout=1) is None
    forget(mlflow_server.url)
    said = []
    with pytest.raises(TrackingServerRefused) as refused:
        wait_for_tracking_server(
            mlflow_server.url,
            timeout_s=600,
            token="not-the-token",
            credentials="the token in /x/endpoint.json",
            report=lambda elapsed, done: said.append(elapsed),
        )
    assert str(refused.value).startswith(
        f"MLflow at {mlflow_server.url} refuses our credentials: HTTP 401 "
        "(we sent the token in /x/endpoint.json)."
    )
    assert "not-the-token" not in str(refused.value)
    assert said == []  # never "MLflow is starting"


def test_a_server_that_crashes_comes_back_on_the_same_address(server):
    """Three ways to crash, one server (each start costs seconds): the address and the token
    stay the same, so kernels and jobs that were given them keep working."""
    url, token = server.url, server.token

    # 1. MLflow and its uvicorn child die (the whole group)
    first_pid = server.pid
    os.killpg(first_pid, signal.SIGKILL)
    assert wait_for(lambda: server.pid not in (None, first_pid) and server.state == READY, 150)
    assert server.restarts == 1
    assert (server.url, server.token) == (url, token)
    assert healthy(server.url, token=token)

    # 2. `mlflow server` alone is SIGKILLed: its uvicorn child is stopped with its group, and
    # the restart on the same port succeeds at once instead of "address already in use"
    second_pid = server.pid
    child = uvicorn_child(second_pid)
    os.kill(second_pid, signal.SIGKILL)
    assert wait_for(lambda: not child.is_running() or child.status() == "zombie", 30)
    assert wait_for(lambda: server.pid not in (None, second_pid) and server.state == READY, 150)
    assert server.restarts == 2
    assert "address already in use" not in server.log_file.read_text().lower()
    assert server.url == url

    # 3. the guard is SIGKILLed, MLflow left running: it is stopped, and a new guard serves the
    # same port and token
    record = server.files.read_endpoint()
    old_mlflow = psutil.Process(server.pid)
    os.kill(record.guard_pid, signal.SIGKILL)
    assert wait_for(lambda: not old_mlflow.is_running() or old_mlflow.status() == "zombie", 60)
    assert wait_for(lambda: server.state == READY and server.pid != old_mlflow.pid, 150)
    assert server.files.read_endpoint().guard_pid != record.guard_pid
    assert (server.url, server.token) == (url, token)


def test_users_share_one_server_and_the_last_one_stops_it(tmp_path):
    """A second user (a job's supervisor) joins the running server; the first one leaving does
    not stop it — a Jupyter server restarted while a job runs leaves the job's MLflow up."""
    server = EmbeddedMlflow(tmp_path / "mlflow", start_timeout_s=150)
    server.start()
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    try:
        assert wait_for(lambda: server.state == READY, 150), server.status()
        endpoint, _ = ensure_running(server.files.folder, "supervisor", lease_pid=other.pid)
        assert endpoint.url == server.url
        guard_pid = server.files.read_endpoint().guard_pid
        server.stop()  # this process leaves
        time.sleep(2.5)  # more than the guard's lease check
        assert healthy(endpoint.url, token=endpoint.token)
        assert server.files.read_endpoint().guard_pid == guard_pid
        # the other user goes away without a word: the guard notices and stops MLflow
        other.kill()
        other.wait()
        assert wait_for(lambda: not processes_using(tmp_path / "mlflow"), 30)
        assert server.files.read_status()["state"] == STOPPED
    finally:
        other.kill()
        other.wait()
        server.stop()
    # started again: the same port (it is free) and the same token
    again = EmbeddedMlflow(tmp_path / "mlflow", start_timeout_s=150)
    again.start()
    try:
        assert (again.url, again.token) == (endpoint.url, endpoint.token)
        assert wait_for(lambda: again.state == READY, 150), again.status()
    finally:
        again.stop()
    assert wait_for(lambda: not processes_using(tmp_path / "mlflow"), 15)


def test_air_run_joining_the_running_server_keeps_it_while_its_last_user_leaves(
    tmp_path, monkeypatch
):
    """`air run` from a plain shell as the previous job ends: it joins the data folder's running
    server with a lease of its own, so the guard does not stop MLflow under the job about to
    start (which then waited for an MLflow that had stopped, and failed after 180 s)."""
    from jupyter_air.workloads.connection import find_connection

    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_TOKEN", "JUPYTER_AIR_SERVER_URL"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "runtime"))  # no Jupyter server
    data = tmp_path / "data"
    folder = mlflow_folder(data)
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
    connection = None
    try:
        endpoint, _ = ensure_running(folder, "the previous job", lease_pid=job.pid)
        assert wait_for(lambda: healthy(endpoint.url, token=endpoint.token), 150)
        connection = find_connection(start_embedded=True, data=data)
        assert connection is not None and connection.tracking_uri == endpoint.url
        assert connection.lease is not None and connection.lease.held
        job.kill()  # the previous job ends
        job.wait()
        time.sleep(3)  # the guard looks at its leases every second
        assert healthy(endpoint.url, token=endpoint.token)
    finally:
        job.kill()
        job.wait()
        if connection is not None and connection.lease is not None:
            leave(folder, connection.lease)
    assert wait_for(lambda: not processes_using(folder), 30), processes_using(folder)


def test_a_server_whose_users_were_killed_stops_by_itself(tmp_path):
    """SIGKILL of the only user (a Jupyter server) leaves no chance to stop MLflow: its guard
    sees the lease's process gone and stops it."""
    script = (
        "import sys, time\n"
        "from pathlib import Path\n"
        "from jupyter_air.server.mlflow_process import EmbeddedMlflow\n"
        "server = EmbeddedMlflow(Path(sys.argv[1]))\n"
        "server.start()\n"
        "print(server.files.read_endpoint().guard_pid, flush=True)\n"
        "time.sleep(600)\n"
    )
    owner = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path / "mlflow")], stdout=subprocess.PIPE, text=True
    )
    guard_pid = int(owner.stdout.readline())
    assert wait_for(lambda: len(processes_using(tmp_path / "mlflow")) >= 2, 60)
    owner.kill()
    owner.wait()
    assert wait_for(lambda: not processes_using(tmp_path / "mlflow"), 30), [
        p.info["cmdline"] for p in processes_using(tmp_path / "mlflow")
    ]
    # the guard itself exits once MLflow is gone (a moment after, on a loaded machine)
    assert wait_for(lambda: gone(guard_pid), 30)


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_leftover_mlflow_of_the_folder_is_stopped_before_a_start(tmp_path):
    files = ServerFiles(tmp_path / "mlflow")
    files.make()
    # a process group standing in for an MLflow whose guard is gone, running this store
    leftover = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", str(files.store)],
        start_new_session=True,
    )
    unrelated = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"], start_new_session=True
    )
    try:
        files.write_status({"state": READY, "mlflow_pid": unrelated.pid})
        assert not stop_leftover(files)  # not ours (another store): left alone
        assert unrelated.poll() is None
        files.write_status({"state": READY, "mlflow_pid": leftover.pid})
        assert stop_leftover(files)
        assert leftover.wait(timeout=10) == -signal.SIGKILL
    finally:
        for process in (leftover, unrelated):
            process.kill()
            process.wait()


def test_a_crash_loop_backs_off_and_says_why(tmp_path):
    """An MLflow that cannot start (its store is not a database) is restarted with a growing
    delay, and its status says what failed and when it tries again."""
    folder = tmp_path / "mlflow"
    files = ServerFiles(folder)
    files.make()
    files.store.write_bytes(b"this is not a SQLite database" * 100)
    server = EmbeddedMlflow(folder, start_timeout_s=60)
    server.start()
    try:
        assert wait_for(lambda: server.restarts >= 2, 120), server.status()
        status = server.status()
        assert status["state"] in ("failed", "starting")
        assert wait_for(lambda: server.status()["state"] == "failed", 30)
        status = server.status()
        assert "MLflow exited with code" in status["error"]
        assert "restart" in status["error"] and str(files.log_file) in status["error"]
        assert status["next_start_at"] > time.time() - 1
        # 1 s, then 2 s, then 4 s…: not a restart every few seconds forever
        before = server.restarts
        time.sleep(8)
        assert server.restarts - before <= 2
    finally:
        server.stop()
    assert wait_for(lambda: not processes_using(folder), 15)


def test_the_command_is_the_documented_one(tmp_path):
    server = EmbeddedMlflow(tmp_path)
    command = server.command()
    assert command[1:4] == ["-m", "mlflow", "server"]
    assert command[command.index("--app-name") + 1] == "jupyter-air"
    assert command[command.index("--host") :][:2] == ["--host", "127.0.0.1"]
    assert "--workers" in command and command[command.index("--workers") + 1] == "1"
    assert f"sqlite:///{tmp_path / 'mlflow.db'}" in command


@pytest.mark.parametrize("uri", ["http://127.0.0.1:1", "not a url"])
def test_health_of_nothing_is_false(uri):
    assert healthy(uri, timeout=1) is False


def test_ready_is_not_what_the_guard_said_before_mlflow_died(tmp_path):
    """The guard's last status says ready; MLflow's process has died since (the guard checks it
    every 2 s): the server reads as not ready at once, saying why."""
    from jupyter_air.mlflow_server.records import EndpointRecord
    from jupyter_air.pids import process_start_time

    files = ServerFiles(tmp_path)
    files.make()
    me = os.getpid()  # stands for the guard: alive
    files.write_endpoint(EndpointRecord(free_port(), "t", me, process_start_time(me)))
    mlflow = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    status = {"state": "ready", "guard_pid": me, "mlflow_pid": mlflow.pid}
    files.write_status({**status, "mlflow_started": process_start_time(mlflow.pid)})
    server = EmbeddedMlflow(tmp_path)
    server.endpoint = files.endpoint()
    server._read()
    assert server.state == READY and server.status()["state"] == "ready"

    mlflow.kill()
    mlflow.wait()
    assert server.state != READY
    assert server.status()["state"] == "failed"
    assert f"MLflow (pid {mlflow.pid}) exited" in server.status()["error"]
    service = MlflowService(base_url="/", data_dir=tmp_path)
    service.process = server
    assert not service.ready


def test_leases_of_dead_processes_do_not_count(tmp_path):
    files = ServerFiles(tmp_path)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    mine = Lease.take(files, "test")
    (files.leases / f"{dead.pid}.json").write_text(json.dumps({"pid": dead.pid, "started": 1.0}))
    assert [lease["pid"] for lease in live_leases(files)] == [os.getpid()]
    assert not (files.leases / f"{dead.pid}.json").exists()
    mine.release()
    assert live_leases(files) == []
    assert leave(tmp_path, mine) is False  # nothing was running
