"""Shared pytest fixtures: a Jupyter server with jupyter-air loaded on simulated GPUs."""

from __future__ import annotations

import pytest

pytest_plugins = ("pytest_jupyter.jupyter_server",)


@pytest.fixture
def air_config() -> dict:
    """JupyterAir settings for the test server; override in a module to change them."""
    return {"gpu_backend": "simulated", "simulated_gpus": 3, "gpu_poll_interval": 10.0}


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
