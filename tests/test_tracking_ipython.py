"""The IPython extension in an in-process IPython shell: loading wraps MLflow once (and not before
the notebook imports mlflow), unloading restores it, runs started in cells are displayed, updated,
tagged and put in the notebook's experiment, and a starting tracking server is waited for."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time

import pytest
from tracking_support import in_notebook, reset_fluent, unique, use_server

import jupyter_air
from jupyter_air.tracking import readiness
from jupyter_air.tracking.display import MIME_TYPE
from jupyter_air.tracking.naming import TAG_NOTEBOOK


@pytest.fixture
def shell(mlflow_server, monkeypatch, tmp_path):
    from IPython.core.displaypub import CapturingDisplayPublisher
    from IPython.core.interactiveshell import InteractiveShell

    use_server(monkeypatch, mlflow_server.url)

    in_notebook(monkeypatch, tmp_path, links=True)
    shell = InteractiveShell.instance()
    shell.display_pub = CapturingDisplayPublisher()
    yield shell
    jupyter_air.unload_ipython_extension(shell)
    reset_fluent()
    InteractiveShell.clear_instance()


def run_cell(shell, code: str) -> None:
    result = shell.run_cell(textwrap.dedent(code))
    result.raise_error()


def run_outputs(shell) -> list[dict]:
    return [o for o in shell.display_pub.outputs if MIME_TYPE in o["data"]]


def test_load_twice_wraps_once_and_unload_restores(shell):
    import mlflow

    original = mlflow.tracking.fluent.start_run
    original_end = mlflow.tracking.fluent.end_run
    shell.run_line_magic("load_ext", "jupyter_air")
    jupyter_air.load_ipython_extension(shell)  # again, directly
    assert mlflow.start_run is mlflow.tracking.fluent.start_run
    assert mlflow.start_run is not original
    assert mlflow.start_run.__wrapped__ is original
    assert mlflow.end_run.__wrapped__ is original_end
    assert mlflow.start_run.__name__ == "start_run"
    callbacks = [c for c in shell.events.callbacks["post_run_cell"] if "NotebookRuns" in repr(c)]
    assert len(callbacks) == 1
    shell.run_line_magic("unload_ext", "jupyter_air")
    assert mlflow.start_run is original and mlflow.tracking.fluent.start_run is original
    assert mlflow.end_run is original_end
    assert not [c for c in shell.events.callbacks["post_run_cell"] if "NotebookRuns" in repr(c)]


def test_run_in_a_cell_is_shown_then_updated_tagged_and_in_the_notebooks_experiment(shell):
    jupyter_air.load_ipython_extension(shell)
    run_cell(
        shell,
        """
        import mlflow
        with mlflow.start_run(run_name="cell run") as run:
            mlflow.log_metric("loss", 0.5)
        """,
    )
    outputs = run_outputs(shell)
    assert [o["update"] for o in outputs] == [False, True]
    first, last = (o["data"][MIME_TYPE] for o in outputs)
    assert first["status"] == "RUNNING" and last["status"] == "FINISHED"
    assert last["end_time"] is not None
    display_ids = {o["transient"]["display_id"] for o in outputs}
    assert display_ids == {f"jupyter-air-run-{first['run_id']}"}
    user = os.environ["JUPYTERHUB_USER"]
    assert first["experiment_name"] == f"/Users/{user}/exp/train"
    assert first["ui"] == "/user/alice/air/mlflow/"

    import mlflow

    run = mlflow.MlflowClient().get_run(first["run_id"])
    assert run.data.tags[TAG_NOTEBOOK] == "exp/train.ipynb"
    assert run.data.tags["mlflow.source.name"] == "exp/train.ipynb"
    assert run.data.tags["mlflow.source.type"] == "NOTEBOOK"
    assert mlflow.MlflowClient().get_experiment(run.info.experiment_id).name == (
        f"/Users/{user}/exp/train"
    )


def test_nested_run_is_a_child_in_the_parents_experiment(shell):
    jupyter_air.load_ipython_extension(shell)
    run_cell(
        shell,
        """
        import mlflow
        with mlflow.start_run(run_name="outer") as outer:
            with mlflow.start_run(run_name="inner", nested=True) as inner:
                pass
        """,
    )
    payloads = [o["data"][MIME_TYPE] for o in run_outputs(shell) if not o["update"]]
    outer, inner = payloads
    assert inner["parent_run_id"] == outer["run_id"]
    assert inner["experiment_id"] == outer["experiment_id"]


def test_set_experiment_is_left_to_mlflow(shell):
    jupyter_air.load_ipython_extension(shell)
    name = unique("chosen")
    run_cell(
        shell,
        f"""
        import mlflow
        mlflow.set_experiment({name!r})
        with mlflow.start_run():
            pass
        """,
    )
    assert run_outputs(shell)[0]["data"][MIME_TYPE]["experiment_name"] == name


def test_a_run_mlflow_starts_by_itself_is_shown(shell):
    """``mlflow.log_metric`` without a run starts one, as autologging does."""
    jupyter_air.load_ipython_extension(shell)
    run_cell(shell, "import mlflow\nmlflow.log_metric('x', 1.0)")
    (shown,) = run_outputs(shell)
    assert shown["data"][MIME_TYPE]["experiment_name"].endswith("/exp/train")


def test_status_changed_elsewhere_is_updated_after_the_cell(shell):
    jupyter_air.load_ipython_extension(shell)
    run_cell(shell, "import mlflow\nrun = mlflow.start_run()")
    run_cell(shell, "pass")  # nothing changed: no update
    assert [o["update"] for o in run_outputs(shell)] == [False]
    run_cell(shell, "mlflow.MlflowClient().set_terminated(run.info.run_id, 'KILLED')")
    outputs = run_outputs(shell)
    assert [o["update"] for o in outputs] == [False, True]
    assert outputs[-1]["data"][MIME_TYPE]["status"] == "KILLED"


def test_start_run_waits_for_a_starting_server_and_says_so(shell, tmp_path, monkeypatch):
    from jupyter_air.server.mlflow_process import EmbeddedMlflow

    jupyter_air.load_ipython_extension(shell)
    server = EmbeddedMlflow(tmp_path / "late", start_timeout_s=150)
    readiness.forget()
    server.start()  # returns at once: its address and token are known, MLflow is starting
    try:
        for name, value in server.env().items():  # as the server gives them to kernels
            monkeypatch.setenv(name, value)
        started = time.monotonic()
        run_cell(shell, "import mlflow\nwith mlflow.start_run() as run:\n    pass")
        waited = time.monotonic() - started
    finally:
        server.stop()
    texts = [
        o["data"]["text/plain"] for o in shell.display_pub.outputs if MIME_TYPE not in o["data"]
    ]
    assert texts[0].startswith("MLflow is starting (")
    assert texts[-1].startswith("MLflow is ready (waited ")
    waiting = [o for o in shell.display_pub.outputs if MIME_TYPE not in o["data"]]
    assert waiting[0]["update"] is False and all(o["update"] for o in waiting[1:])
    assert len({o["transient"]["display_id"] for o in waiting}) == 1  # one line, updated
    statuses = [o["data"][MIME_TYPE]["status"] for o in run_outputs(shell)]
    assert statuses == ["RUNNING", "FINISHED"]
    print(f"start_run waited {waited:.1f} s for a cold MLflow server")


def test_loading_does_not_import_mlflow_which_is_wrapped_when_imported():
    code = textwrap.dedent(
        """
        import sys
        from IPython.core.interactiveshell import InteractiveShell
        shell = InteractiveShell.instance()
        shell.run_line_magic("load_ext", "jupyter_air")
        assert "mlflow" not in sys.modules, "loading imported mlflow"
        import mlflow
        assert getattr(mlflow.start_run, "__jupyter_air_wrapped__", None) is not None
        assert mlflow.tracking.fluent.start_run is mlflow.start_run
        import importlib.resources
        assert importlib.resources.files("mlflow").joinpath("__init__.py").is_file()
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip().endswith("ok")
