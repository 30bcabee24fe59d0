"""Helpers shared by the tests of jupyter_air.tracking (imported by them; no fixtures here)."""

from __future__ import annotations

import sys
import uuid
from pathlib import Path
from typing import Any

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


UI = "/user/alice/air/mlflow/"  # the MLflow UI of alice's server, under JupyterHub


def in_notebook(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, *, links: bool = False) -> Path:
    """This process as Jupyter and jupyter-air describe the notebook ``exp/train.ipynb`` to its
    kernel, the server's root ``tmp_path/root`` (after ``use_server``, which clears this);
    ``links``: the base URL and MLflow UI of alice's server too. Returns the notebook's path (an
    empty notebook there)."""
    root = tmp_path / "root"
    (root / "exp").mkdir(parents=True)
    path = root / "exp" / "train.ipynb"
    path.write_text("{}")
    monkeypatch.setenv("JUPYTER_AIR_ROOT_DIR", str(root))
    monkeypatch.setenv("JPY_SESSION_NAME", str(path))
    if links:
        monkeypatch.setenv("JUPYTER_AIR_BASE_URL", "/user/alice/")
        monkeypatch.setenv("JUPYTER_AIR_MLFLOW_UI", UI)
    return path


def execute_notebook(nb: Any, path: Path, connection_file: Path) -> None:
    """Run every cell of ``nb``, saved at ``path``, in a real kernel started in its folder with
    ``connection_file``; the executed notebook is saved there, as a person would find it."""
    import nbformat
    from jupyter_client.manager import KernelManager
    from nbclient import NotebookClient

    nbformat.write(nb, path)
    km = KernelManager(kernel_name="python3", connection_file=str(connection_file))
    client = NotebookClient(
        nb, km=km, timeout=180, resources={"metadata": {"path": str(path.parent)}}
    )
    try:
        client.execute()
    finally:  # a kernel manager given to nbclient is not shut down by it
        if km.has_kernel:
            km.shutdown_kernel(now=True)
    nbformat.write(nb, path)


def streams(cell: Any, name: str | None = None) -> str:
    """The text an executed cell printed: on stream ``name`` (``stdout``, ``stderr``) or both."""
    return "".join(
        o.text
        for o in cell.outputs
        if o.output_type == "stream" and (name is None or o.name == name)
    )


def reset_fluent() -> None:
    """End runs left active and forget the active experiment (MLflow keeps both per process)."""
    fluent = sys.modules.get("mlflow.tracking.fluent")
    if fluent is None:
        return
    while fluent.active_run() is not None:
        fluent.end_run()
    fluent._active_experiment_id = None
