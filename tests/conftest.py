"""Shared pytest fixtures: a Jupyter server with jupyter-air loaded on simulated GPUs."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytest_jupyter.jupyter_server",)


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
def jp_server_config(air_config: dict) -> dict:
    return {
        "ServerApp": {"jpserver_extensions": {"jupyter_air": True}},
        "JupyterAir": air_config,
    }


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
    yield server
    server.stop()


@pytest.fixture
def agents(jp_fetch, jp_http_port, jp_base_url, air_config):
    """Node agents reporting to the test's Jupyter server (``telemetry_support.Agents``); any
    still running at the end are told to stop."""
    from pathlib import Path

    from telemetry_support import Agents

    started = Agents(f"http://127.0.0.1:{jp_http_port}{jp_base_url}", Path(air_config["data_dir"]))
    yield started
    for agent in started.started:
        agent.halt()
