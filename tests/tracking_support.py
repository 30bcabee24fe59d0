"""Helpers shared by the tests of jupyter_air.tracking (imported by them; no fixtures here)."""

from __future__ import annotations

import sys
import uuid

import pytest


def unique(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


def use_server(monkeypatch: pytest.MonkeyPatch, url: str) -> None:
    """Point this process at the session's tracking server, with MLflow's per-process state as a
    fresh kernel has it (no active experiment, no active run, no MLFLOW_* leftovers)."""
    monkeypatch.setenv("MLFLOW_TRACKING_URI", url)
    monkeypatch.setenv("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    for name in (
        "MLFLOW_EXPERIMENT_NAME",
        "MLFLOW_EXPERIMENT_ID",
        "MLFLOW_RUN_ID",
        "JPY_SESSION_NAME",
        "JUPYTER_AIR_ROOT_DIR",
        "JUPYTER_AIR_MLFLOW_UI",
        "JUPYTER_AIR_BASE_URL",
        "JUPYTER_AIR_SERVER_URL",
        "MLFLOW_SYSTEM_METRICS_NODE_ID",
        "MLFLOW_SYSTEM_METRICS_SAMPLING_INTERVAL",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUPYTERHUB_USER", unique("user"))
    reset_fluent()


def reset_fluent() -> None:
    """End runs left active and forget the active experiment (MLflow keeps both per process)."""
    fluent = sys.modules.get("mlflow.tracking.fluent")
    if fluent is None:
        return
    while fluent.active_run() is not None:
        fluent.end_run()
    fluent._active_experiment_id = None
