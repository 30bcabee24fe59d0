"""The `air` command: `air run` (ids and absolute links on the Jupyter server found from its
runtime file, errors with exit codes that create nothing), `air list runs`, `air get run`, a
job that outlives the `air` process that submitted it, and `air` in a shell whose data folder is
not the Jupyter server's (that server's MLflow with its token, or which data folder to use)."""

from __future__ import annotations

import http.server
import json
import os
import socket
import threading
import time

import pytest
from workloads_support import (
    PY,
    air,
    wait_for,
    wait_supervisor_gone,
    wait_until,
    write,
)

from jupyter_air.cli import build_parser


@pytest.fixture
def jupyter_server(env, monkeypatch):
    """A stand-in for a running Jupyter server with jupyter-air: its runtime file, and an HTTP
    server answering GET <base>air/api/mlflow (with the token only)."""
    token = "secret-token"
    tracking_uri = env.url

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            if self.path != "/user/ada/air/api/mlflow":
                self.send_error(404)
                return
            if self.headers.get("Authorization") != f"token {token}":
                self.send_error(403)
                return
            body = json.dumps(
                {
                    "mode": "embedded",
                    "state": "ready",
                    "tracking_uri": tracking_uri,
                    "ui": "/user/ada/air/mlflow/",
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/user/ada/"
    info = {
        "url": url,
        "base_url": "/user/ada/",
        "token": token,
        "pid": os.getpid(),
        "root_dir": str(env.tmp),
    }
    runtime = env.tmp / "runtime"
    (runtime / f"jpserver-{os.getpid()}.json").write_text(json.dumps(info))
    monkeypatch.delenv("MLFLOW_TRACKING_URI")  # found from the server
    yield url
    server.shutdown()


def test_help_has_examples():
    parser = build_parser()
    assert "air run workload.yaml" in parser.format_help()
    assert "exit codes" in parser.format_help()
    result = air("logs", "--help")
    assert result.returncode == 0 and "--download-to" in result.stdout
    assert "examples:" in air("list", "runs", "--help").stdout
    assert air().returncode == 2  # no command: usage


def test_run_prints_the_id_and_links_on_the_jupyter_server(env, jupyter_server):
    write(env.tmp, "ok.py", "print('hello from the job')\n")
    name = f"cli-{env.tmp.name}"
    spec = write(
        env.tmp,
        "w.yaml",
        f"experiment_name: {name}\ncompute: {{accelerator_type: CPU}}\ncommand: {PY} ok.py\n",
    )
    result = air("run", str(spec))
    assert result.returncode == 0, result.stderr
    first = result.stdout.splitlines()[0]
    assert first.startswith("Submitted job run ")
    job_id = first.split()[3]
    experiment_id = env.client.get_experiment_by_name(name).experiment_id
    ui = f"{jupyter_server}air/mlflow/"
    assert f"Job:        {jupyter_server}lab?air-workload={job_id}" in result.stdout
    assert (
        f"Experiment: {ui}#/experiments/{experiment_id}/runs?workflowType=machine_learning"
        in result.stdout
    )
    assert "secret-token" not in result.stdout
    job = wait_for(env.store, job_id)
    assert job.status == "SUCCEEDED"
    assert job.tracking_uri == env.url  # asked the server for it

    shown = air("get", "run", job_id[:6])
    assert shown.returncode == 0, shown.stderr
    run_id = job.attempts[0].mlflow_run_id
    assert f"Job run {job_id}: SUCCEEDED (the command succeeded)" in shown.stdout
    assert f"{ui}#/experiments/{experiment_id}/runs/{run_id}?workflowType=machine_learning" in (
        shown.stdout
    )
    assert "Compute:     CPU" in shown.stdout
    data = json.loads(air("get", "run", job_id, "-o", "json").stdout)
    assert data["attempts"][0]["links"]["system_metrics"].endswith(
        f"/runs/{run_id}/system-metrics?workflowType=machine_learning"
    )
    assert data["links"]["job"] == f"{jupyter_server}lab?air-workload={job_id}"


def test_air_run_in_a_plain_shell_uses_its_own_mlflow_for_the_jobs_life(env, monkeypatch):
    """No Jupyter server, no MLFLOW_TRACKING_URI: `air run` starts jupyter-air's embedded
    server of the data folder (as `mlflow` would use its own store), the job records its run
    there, and the server stops once the job no longer needs it."""
    import psutil

    from jupyter_air.mlflow_server.records import ServerFiles, mlflow_folder

    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN")
    name = f"shell-{env.tmp.name}"
    write(env.tmp, "ok.py", "print('logged from a plain shell')\n")
    spec = write(
        env.tmp,
        "w.yaml",
        f"experiment_name: {name}\ncompute: {{accelerator_type: CPU}}\ncommand: {PY} ok.py\n",
    )
    result = air("run", str(spec), "--follow", timeout=300)
    assert result.returncode == 0, result.stderr
    assert "MLflow is ready" in result.stderr  # it said it was starting, then ready
    assert "logged from a plain shell" in result.stdout
    job_id = result.stdout.splitlines()[0].split()[3]
    job = wait_for(env.store, job_id)
    assert job.status == "SUCCEEDED" and job.tracking == "embedded"
    files = ServerFiles(mlflow_folder(env.store.data_dir))
    endpoint = files.endpoint()
    assert job.tracking_uri == endpoint.url

    def mlflow_processes() -> list:
        found = []
        for process in psutil.process_iter(["cmdline"]):
            try:
                if str(files.store) in " ".join(process.info["cmdline"] or []):
                    found.append(process)
            except psutil.Error:
                continue
        return found

    # nobody needs it any more: it stops by itself
    wait_until(lambda: not mlflow_processes(), 60, "the embedded MLflow server to stop")
    # and the run is in the data folder's store: the next `air run`/Jupyter server shows it
    shown = air("get", "run", job_id, "-o", "json")
    assert json.loads(shown.stdout)["attempts"][0]["mlflow_run_id"] == (
        job.attempts[0].mlflow_run_id
    )
    import sqlite3

    with sqlite3.connect(files.store) as conn:
        status = conn.execute(
            "SELECT status FROM runs WHERE run_uuid = ?", (job.attempts[0].mlflow_run_id,)
        ).fetchone()
    assert status == ("FINISHED",)


def test_the_workloads_own_problems_come_before_the_tracking_server(env, monkeypatch):
    """Asking for GPUs a machine does not have is said first (exit 4), and nothing is started
    to find a tracking server for a workload that cannot run."""
    from jupyter_air.mlflow_server.records import ServerFiles, mlflow_folder

    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # no GPU for this process
    spec = write(
        env.tmp, "w.yaml", "experiment_name: e\ncompute: {num_accelerators: 8}\ncommand: 'true'\n"
    )
    result = air("run", str(spec))
    assert result.returncode == 4, result.stderr
    assert "Not enough GPUs" in result.stderr
    assert ServerFiles(mlflow_folder(env.store.data_dir)).endpoint() is None
    assert not env.store.path.exists() or env.store.count_jobs() == 0


def test_invalid_specs_create_nothing(env):
    name = f"never-{env.tmp.name}"
    cases = {
        "bad.yaml": (
            f"experiment_name: {name}\ncompute:\n  num_acelerators: 2\n  num_accelerators: 0\n"
            "command: x\n",
            2,
            [
                "compute.num_acelerators: unknown field (line 3); did you mean 'num_accelerators'?",
                "compute.num_accelerators: must be an integer from 1 to 64 (per node) (line 4); "
                "got 0",
            ],
        ),
        "syntax.yaml": (
            f"experiment_name: {name}\ncommand: [x\n",
            2,
            ["YAML syntax error", "(line 3, column 1)"],
        ),
        "gpus.yaml": (
            f"experiment_name: {name}\ncompute: {{num_accelerators: 2, accelerator_type: Z9000}}\n"
            "command: x\n",
            4,
            ["Not enough GPUs: this workload needs 2 Z9000 GPUs; this machine has"],
        ),
    }
    for file, (text, code, messages) in cases.items():
        result = air("run", str(write(env.tmp, file, text)))
        assert result.returncode == code, (file, result.stderr)
        for message in messages:
            assert message in result.stderr, (file, result.stderr)
    missing = air("run", str(env.tmp / "missing.yaml"))
    assert missing.returncode == 2 and "no such file" in missing.stderr
    as_json = air("run", str(env.tmp / "bad.yaml"), "--output", "json")
    problems = json.loads(as_json.stderr.splitlines()[0])["problems"]
    assert problems[0] == {
        "field": "compute.num_acelerators",
        "message": "unknown field",
        "line": 3,
        "column": None,
    }
    # nothing was created: no job run, no experiment
    assert not env.store.path.exists() or env.store.count_jobs() == 0
    assert env.client.get_experiment_by_name(name) is None


def test_a_job_outlives_the_process_that_submitted_it(env):
    write(
        env.tmp,
        "wait.py",
        "import pathlib, time\nprint('waiting', flush=True)\n"
        f"while not pathlib.Path({str(env.tmp / 'go')!r}).exists(): time.sleep(0.05)\n"
        "print('went')\n",
    )
    spec = write(
        env.tmp,
        "w.yaml",
        f"experiment_name: outlive-{env.tmp.name}\ncompute: {{accelerator_type: CPU}}\n"
        f"command: {PY} wait.py\n",
    )
    submitted = air("run", str(spec), "--output", "json")  # the `air` process exits here
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["id"]
    wait_until(lambda: env.store.get_job(job_id).status == "RUNNING", 30, "the job to run")
    job = env.store.get_job(job_id)
    import psutil

    supervisor = psutil.Process(job.supervisor_pid)
    assert supervisor.ppid() != os.getpid()  # detached: not a child of the test either
    assert os.getsid(job.supervisor_pid) == job.supervisor_pid  # its own session
    (env.tmp / "go").write_text("")
    assert wait_for(env.store, job_id).status == "SUCCEEDED"


def test_list_runs(env):
    write(env.tmp, "ok.py", "print('ok')\n")
    ids = []
    for name, code in (("a", "0"), ("b", "1")):
        spec = write(
            env.tmp,
            f"{name}.yaml",
            f"experiment_name: list-{name}-{env.tmp.name}\ncompute: {{accelerator_type: CPU}}\n"
            f"command: {PY} -c 'raise SystemExit({code})'\n",
        )
        result = air("run", str(spec), "-o", "json")
        ids.append(json.loads(result.stdout)["id"])
    for job_id in ids:
        wait_for(env.store, job_id)
    none_active = air("list", "runs")
    assert none_active.returncode == 0
    assert "No active job runs. `air list runs --all-status` lists every one." in none_active.stderr
    table = air("list", "runs", "--all-status")
    lines = table.stdout.splitlines()
    assert lines[0].split() == [
        "ID",
        "STATUS",
        "EXPERIMENT",
        "RUN",
        "NAME",
        "ATTEMPTS",
        "COMPUTE",
        "SUBMITTED",
        "DURATION",
    ]
    assert [line.split()[0] for line in lines[1:]] == ids[::-1]  # newest first
    failed = json.loads(air("list", "runs", "--status", "failed", "-o", "json").stdout)
    assert [j["id"] for j in failed] == [ids[1]]
    assert failed[0]["attempts"][0]["reason"] == "node 0 exited with code 1"
    by_experiment = air(
        "list", "runs", "--all-status", "--experiment", f"list-a-{env.tmp.name}", "-o", "json"
    )
    assert [j["id"] for j in json.loads(by_experiment.stdout)] == [ids[0]]
    assert (
        len(json.loads(air("list", "runs", "--all-status", "--limit", "1", "-o", "json").stdout))
        == 1
    )
    assert air("list", "runs", "--status", "DONE").returncode == 2
    assert air("list", "runs", "--limit", "0").returncode == 2
    missing = air("get", "run", "ffffffffffff")
    assert missing.returncode == 5 and "No job run 'ffffffffffff'" in missing.stderr


def test_connection_from_a_kernel_or_terminal_environment(monkeypatch, tmp_path):
    """In a kernel or JupyterLab terminal the server's environment says where things are."""
    from jupyter_air.workloads.connection import NoTrackingServer, find_connection

    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path))  # no server to find
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://127.0.0.1:5999")
    monkeypatch.setenv("JUPYTER_AIR_MLFLOW_UI", "/user/ada/air/mlflow/")
    monkeypatch.setenv("JUPYTER_AIR_SERVER_URL", "https://hub.example.org/user/ada/")
    conn = find_connection()
    assert conn.tracking_uri == "http://127.0.0.1:5999"
    assert conn.mlflow_ui == "https://hub.example.org/user/ada/air/mlflow/"
    assert conn.job_link("abc") == "https://hub.example.org/user/ada/lab?air-workload=abc"
    assert conn.run_links("3", "r1")["run"] == (
        "https://hub.example.org/user/ada/air/mlflow/#/experiments/3/runs/r1"
        "?workflowType=machine_learning"
    )
    # a remote tracking server of your own: links to its UI
    for name in ("JUPYTER_AIR_MLFLOW_UI", "JUPYTER_AIR_SERVER_URL"):
        monkeypatch.delenv(name)
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "https://mlflow.example.org")
    conn = find_connection()
    assert conn.mlflow_ui == "https://mlflow.example.org/" and conn.job_link("x") is None
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    assert find_connection(require_tracking=False) is None
    with pytest.raises(NoTrackingServer):
        find_connection()


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]  # closed again: nothing listens there


def test_only_a_host_and_port_is_probed_before_connecting_to_ray():
    from jupyter_air.backends.base import ClusterUnreachableError
    from jupyter_air.backends.ray_backend import probe

    probe("auto", 1.0)  # Ray's own discovery: nothing to probe
    with socket.create_server(("127.0.0.1", 0)) as listening:
        probe(f"127.0.0.1:{listening.getsockname()[1]}", 1.0)  # something answers
    for address in (f"127.0.0.1:{closed_port()}", f"ray://127.0.0.1:{closed_port()}"):
        with pytest.raises(ClusterUnreachableError, match=f"the Ray cluster at {address} does"):
            probe(address, 1.0)


def test_a_ray_client_address_is_refused_at_once_with_the_setup_that_works(env, monkeypatch):
    """``ray://`` (Ray Client, a Jupyter host outside the cluster): refused before anything
    connects, saying to make the Jupyter host a Ray node; exit 4, no job run created."""
    monkeypatch.setenv("RAY_ADDRESS", "ray://127.0.0.1:10001")
    spec = write(
        env.tmp,
        "w.yaml",
        "experiment_name: e\ncompute: {num_nodes: 2, accelerator_type: CPU}\ncommand: 'true'\n",
    )
    result = air("run", str(spec), timeout=60)
    assert result.returncode == 4, result.stderr
    assert "ray://127.0.0.1:10001 is a Ray Client address" in result.stderr
    assert "ray start --address=HEAD:6379 --num-cpus=0" in result.stderr
    assert "Traceback" not in result.stderr
    assert env.store.list_jobs() == []


def test_a_ray_cluster_that_does_not_answer_is_said_at_once(env, monkeypatch):
    """A wrong RAY_ADDRESS: one clear error within seconds (``ray.init`` alone waits for
    minutes), exit 4, no job run created."""
    port = closed_port()
    monkeypatch.setenv("RAY_ADDRESS", f"127.0.0.1:{port}")
    monkeypatch.setenv("JUPYTER_AIR_RAY_CONNECT_TIMEOUT_S", "3")
    spec = write(
        env.tmp,
        "w.yaml",
        "experiment_name: e\ncompute: {num_nodes: 2, accelerator_type: CPU}\ncommand: 'true'\n",
    )
    started = time.monotonic()
    result = air("run", str(spec), timeout=60)
    assert result.returncode == 4, result.stderr
    assert f"the Ray cluster at 127.0.0.1:{port} does not answer" in result.stderr
    assert "docs/clusters.md" in result.stderr and "Traceback" not in result.stderr
    assert time.monotonic() - started < 30
    assert not env.store.path.exists() or env.store.count_jobs() == 0


# a data folder other than the Jupyter server's ------------------------------------------------
def spec_file(env, name: str):
    project = env.tmp / "project"  # its own folder: the snapshot holds nothing else of the test's
    write(project, "ok.py", "print('tracked')\n")
    return write(
        project,
        "w.yaml",
        f"experiment_name: {name}\ncompute: {{accelerator_type: CPU}}\ncommand: {PY} ok.py\n",
    )


def record_server_data_folder(env, data) -> None:
    """What a running jupyter-air server writes in Jupyter's runtime folder: its data folder."""
    runtime = env.tmp / "runtime"
    record = {"pid": os.getpid(), "data_dir": str(data)}
    (runtime / f"jupyter-air-{os.getpid()}.json").write_text(json.dumps(record))


def test_air_run_uses_the_jupyter_servers_mlflow_with_the_token_of_its_data_folder(
    env,
    jupyter_server,
    mlflow_server,
    monkeypatch,
):
    theirs = env.tmp / "theirs"  # the Jupyter server's data folder: its MLflow server's
    theirs.mkdir()
    (theirs / "mlflow").symlink_to(mlflow_server.files.folder)
    record_server_data_folder(env, theirs)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN")  # a plain shell: no token of its own
    import psutil

    token = mlflow_server.token
    name = f"other-folder-{env.tmp.name}"

    result = air("run", str(spec_file(env, name)), timeout=120)

    assert result.returncode == 0, result.stderr
    assert "MLflow is starting" not in result.stderr
    assert token not in result.stdout + result.stderr
    job_id = result.stdout.splitlines()[0].split()[3]
    job = wait_for(env.store, job_id)
    assert job.status == "SUCCEEDED", job.reason
    assert job.tracking_uri == mlflow_server.url and job.tracking == "external"
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", token)  # this process reads the run back
    run = env.client.get_run(job.attempts[0].mlflow_run_id)
    assert run.info.status == "FINISHED"
    # the token is in no record, log or command line of ours
    wait_supervisor_gone(job)
    folder = env.store.data_dir / "workloads"
    for path in folder.rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    for process in psutil.process_iter(["cmdline"]):
        try:
            assert token not in " ".join(process.info["cmdline"] or [])
        except psutil.Error:
            continue


def test_a_server_token_that_cannot_be_read_is_said_at_once(
    env,
    jupyter_server,
    monkeypatch,
):
    """Its data folder is not recorded (or not readable): which data folders differ, what to do,
    exit 3 within seconds — not 180 s of "MLflow is starting" and a traceback."""
    theirs = env.tmp / "theirs"
    theirs.mkdir()  # no mlflow/endpoint.json there
    record_server_data_folder(env, theirs)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN")

    result = air("run", str(spec_file(env, "unread")), timeout=60)

    assert result.returncode == 3, result.stderr
    assert "Traceback" not in result.stderr and "MLflow is starting" not in result.stderr
    assert f"jupyter-air's MLflow server of the data folder {theirs}" in result.stderr
    assert f"this command uses the data folder {env.store.data_dir}" in result.stderr
    assert f"JUPYTER_AIR_DATA_DIR={theirs}" in result.stderr
    assert not env.store.path.exists() or env.store.count_jobs() == 0


def test_a_tracking_server_refusing_our_token_is_said_at_once(env, monkeypatch):
    monkeypatch.setenv("MLFLOW_TRACKING_TOKEN", "not-the-token")

    result = air("run", str(spec_file(env, "refused")), timeout=60)

    assert result.returncode == 3, result.stderr
    assert f"MLflow at {env.url} refuses our credentials: HTTP 401" in result.stderr
    assert "(we sent MLFLOW_TRACKING_TOKEN)" in result.stderr
    assert "not-the-token" not in result.stderr
    assert "Traceback" not in result.stderr and "MLflow is starting" not in result.stderr


@pytest.mark.parametrize(
    "argv",
    [["list", "runs"], ["get", "run", "abc"], ["logs", "abc"], ["run", "w.yaml"]],
)
def test_every_command_maps_a_tracking_server_not_ready_to_exit_3(argv, monkeypatch, capsys):
    from jupyter_air.cli import commands_jobs, commands_logs, commands_run
    from jupyter_air.tracking.readiness import TrackingServerNotReady

    def not_ready(args):
        raise TrackingServerNotReady("MLflow at http://127.0.0.1:9 did not answer within 180 s.")

    for module, name in (
        (commands_jobs, "cmd_list"),
        (commands_jobs, "cmd_get"),
        (commands_logs, "cmd_logs"),
        (commands_run, "cmd_run"),
    ):
        monkeypatch.setattr(module, name, not_ready)

    from jupyter_air.cli import EXIT_NO_TRACKING, main

    assert main(argv) == EXIT_NO_TRACKING
    err = capsys.readouterr().err
    assert err == "air: MLflow at http://127.0.0.1:9 did not answer within 180 s.\n"
