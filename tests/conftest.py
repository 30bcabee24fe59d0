"""Shared pytest fixtures: a Jupyter server with jupyter-air loaded on simulated GPUs."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest_plugins = ("pytest_jupyter.jupyter_server", "netns_rig", "team_support")


@pytest.hookimpl(tryfirst=True)  # before ``-m`` selects by it
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test on a Ray cluster (the loopback one, or the rig of hosts that share nothing)
    is marked ``ray``: ``make test`` runs them on their own (a cluster of three nodes does not
    start reliably on two cores next to other tests), then everything else on two workers
    (``-m "not ray" -n 2``). Those on the rig are marked ``rig`` too: ``make test-rig`` runs
    them (docs/clusters.md says why ``make test`` does not yet)."""
    for item in items:
        fixtures = set(getattr(item, "fixturenames", ()))
        if {"ray_cluster", "netns_rig"} & fixtures:
            item.add_marker(pytest.mark.ray)
        if "netns_rig" in fixtures:
            item.add_marker(pytest.mark.rig)


def pytest_configure(config: pytest.Config) -> None:
    """A SIGTERM (make test stopping the Ray tests it runs in the background) ends the session
    as Ctrl-C does: the fixtures' teardown stops what they started, the Ray cluster included."""
    import signal
    import threading

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, interrupt)


@pytest.fixture
def air_config() -> dict:
    """JupyterAir settings for the test server; override in a module to change them."""
    return {
        "gpu_backend": "simulated",
        "simulated_gpus": 3,
        "gpu_poll_interval": 10.0,
        "mlflow_embedded": False,  # MLflow tests use one tracking server for the session
    }


@pytest.fixture
def server_app_config() -> dict:
    """ServerApp settings of the test server besides loading jupyter-air; override in a module
    to add some (an authorizer class, an identity provider)."""
    return {}


@pytest.fixture
def server_env() -> dict[str, str]:
    """Environment variables set before the test server starts; override in a module (one that
    tracks to the session's MLflow server returns ``mlflow_env``)."""
    return {}


@pytest.fixture
def mlflow_env(mlflow_server) -> dict[str, str]:
    """``server_env`` of a test server that tracks to the session's MLflow server."""
    return {"MLFLOW_TRACKING_URI": mlflow_server.url}


@pytest.fixture
def jp_server_config(
    air_config: dict,
    server_app_config: dict,
    server_env: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
) -> dict:
    for name, value in server_env.items():
        monkeypatch.setenv(name, value)
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_air": True}, **server_app_config},
        "JupyterAir": air_config,
    }


@pytest.fixture
def data_dir(air_config: dict) -> Path:
    """The test server's data folder (``air_config["data_dir"]``)."""
    return Path(air_config["data_dir"])


@pytest.fixture(autouse=True)
def _no_backend_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """A developer's JUPYTER_AIR_* variables must not change what the tests see."""
    monkeypatch.delenv("JUPYTER_AIR_GPU_BACKEND", raising=False)
    monkeypatch.delenv("JUPYTER_AIR_SIMULATED_GPUS", raising=False)
    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)


@pytest.fixture(scope="session")
def mlflow_server(tmp_path_factory: pytest.TempPathFactory):
    """One real MLflow tracking server for the whole test session, run by jupyter-air's own
    lifecycle code (SQLite store in a temporary folder)."""
    import os
    import time

    from jupyter_air.server.mlflow_process import READY, EmbeddedMlflow

    server = EmbeddedMlflow(tmp_path_factory.mktemp("mlflow-session"), start_timeout_s=150)
    server.start()
    deadline = time.monotonic() + 150
    while server.state != READY and time.monotonic() < deadline:
        time.sleep(0.2)
    if server.state != READY:
        log = server.log_file.read_text()[-3000:] if server.log_file.exists() else ""
        server.stop()
        pytest.fail(f"the session's MLflow server did not start: {server.status()}\n{log}")
    # it answers only with its token: MLflow's client in this process, and everything the
    # tests start, send it (as kernels and supervisors of a jupyter-air server do)
    previous = os.environ.get("MLFLOW_TRACKING_TOKEN")
    os.environ["MLFLOW_TRACKING_TOKEN"] = server.token or ""
    yield server
    if previous is None:
        os.environ.pop("MLFLOW_TRACKING_TOKEN", None)
    else:
        os.environ["MLFLOW_TRACKING_TOKEN"] = previous
    server.stop()


@pytest.fixture
def mlflow_client(mlflow_server):
    """MLflow's client of the session's MLflow server."""
    from mlflow.tracking import MlflowClient

    return MlflowClient(tracking_uri=mlflow_server.url)


@pytest.fixture
def env(mlflow_server, monkeypatch, tmp_path):
    """A workloads or CLI test's world on the session's MLflow server
    (``workloads_support.cli_env``); a module that needs more defines its own ``env``."""
    from workloads_support import cli_env

    return cli_env(monkeypatch, tmp_path, mlflow_server)


@pytest.fixture
def ray_env(ray_cluster, mlflow_server, monkeypatch, tmp_path):
    """A CLI test's world whose workloads run on the session's Ray cluster (``env.cluster``);
    the standby supervisors its Ray job runs leave end with it."""
    from workloads_support import cli_env, end_standbys_of

    env = cli_env(monkeypatch, tmp_path, mlflow_server, cluster=ray_cluster)
    ray_cluster.use(monkeypatch)
    yield env
    end_standbys_of(env.store)


class RayCluster:
    """The ``ray_cluster`` fixture: a real Ray cluster of 3 nodes on loopback
    (tests/ray_cluster.py)."""

    def __init__(self, process, info: dict, temp: str) -> None:
        self.process = process
        self.info = info
        self.temp = temp

    @property
    def address(self) -> str:
        return self.info["address"]

    @property
    def workers(self) -> list[str]:
        return self.info["workers"]

    def env(self) -> dict[str, str]:
        """What a process that uses the cluster needs (drivers: supervisors, kernels)."""
        from ray_cluster import LOOPBACK_ENV

        return {**LOOPBACK_ENV, "RAY_ADDRESS": self.address}

    def use(self, monkeypatch) -> None:
        """This test's processes use the cluster (``RAY_ADDRESS``), whatever the machine's
        ``JUPYTER_AIR_CLUSTER`` says."""
        for name, value in self.env().items():
            monkeypatch.setenv(name, value)
        monkeypatch.delenv("JUPYTER_AIR_CLUSTER", raising=False)

    def command(self, line: str, timeout: float = 120.0) -> dict:
        import json
        import select

        self.process.stdin.write(line + "\n")
        self.process.stdin.flush()
        ready, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not ready:
            raise AssertionError(f"the Ray cluster did not answer {line!r} in {timeout} s")
        answer = json.loads(self.process.stdout.readline())
        if "address" in answer:
            self.info = answer
        return answer

    def kill(self, node_id: str) -> None:
        """A machine lost: SIGKILL of that node's raylet and its processes."""
        assert self.command(f"kill {node_id}")["killed"] == node_id
        self.command("nodes")  # the cluster as it is now (``size``, ``workers``)

    @property
    def size(self) -> int:
        return 1 + len(self.workers)

    def ensure(self, count: int) -> None:
        """At least ``count`` nodes (a test that lost one leaves the cluster smaller)."""
        while self.size < count:
            self.command("add")


@pytest.fixture(scope="session")
def ray_cluster():
    """One real multi-node Ray cluster on loopback for the session: a head and 2 workers, each
    with 2 CPUs and 2 fake GPUs. Every Ray process it started is stopped at the end, by its
    session, never by name (a machine-wide stop would end every user's Ray on the machine)."""
    import importlib.util
    import json
    import os
    import select
    import shutil
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    import psutil

    if importlib.util.find_spec("ray") is None:  # not imported here: this process is no driver
        pytest.fail('Ray is not installed: pip install -e ".[test,ray]" (make test does it)')
    from ray_cluster import LOOPBACK_ENV

    temp = tempfile.mkdtemp(prefix="air-ray-", dir="/tmp")  # short: Ray's socket paths
    env = {**os.environ, **LOOPBACK_ENV, "RAY_TMPDIR": temp}
    env.pop("RAY_ADDRESS", None)
    process = subprocess.Popen(
        [sys.executable, str(Path(__file__).with_name("ray_cluster.py")), "3"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=open(os.path.join(temp, "cluster.log"), "w"),  # noqa: SIM115
        text=True,
        env=env,
        start_new_session=True,
    )

    def stop_all() -> None:
        for proc in psutil.process_iter():  # what re-parented to init keeps its session
            try:
                if os.getsid(proc.pid) == process.pid:
                    proc.kill()
            except (psutil.Error, OSError):
                continue
        shutil.rmtree(temp, ignore_errors=True)

    try:  # a start that fails or is interrupted (a test's timeout) leaves nothing running
        ready, _, _ = select.select([process.stdout], [], [], 300)
        if not ready:
            log = Path(temp, "cluster.log").read_text()[-3000:]
            pytest.fail(f"the Ray cluster did not start in 300 s:\n{log}")
        cluster = RayCluster(process, json.loads(process.stdout.readline()), temp)
    except BaseException:
        stop_all()
        raise
    ready_file = os.environ.get("AIR_RAY_READY_FILE")  # make test starts Galata once it exists
    if ready_file:
        Path(ready_file).write_text(cluster.address)
    yield cluster
    try:
        cluster.process.stdin.write("quit\n")
        cluster.process.stdin.flush()
        cluster.process.wait(timeout=60)
    except Exception:
        pass
    stop_all()


@pytest.fixture
def agents(jp_fetch, jp_http_port, jp_base_url, data_dir):
    """Node agents reporting to the test's Jupyter server (``telemetry_support.Agents``); any
    still running at the end are told to stop."""
    from telemetry_support import Agents

    started = Agents(f"http://127.0.0.1:{jp_http_port}{jp_base_url}", data_dir)
    yield started
    for agent in started.started:
        agent.halt()
