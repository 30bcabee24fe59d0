"""Which experiment a run goes to (docs/mlflow.md), against a real tracking server; and that
processes creating the same new experiment at once all end up in it, none in "Default"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from tracking_support import in_notebook, reset_fluent, unique, use_server

from jupyter_air.tracking.experiments import (
    ExperimentError,
    active_experiment_id,
    get_or_create_experiment,
    resolve_experiment,
    same_location,
)


@pytest.fixture
def server(mlflow_server, monkeypatch):
    use_server(monkeypatch, mlflow_server.url)
    yield mlflow_server
    reset_fluent()


@pytest.fixture
def notebook(tmp_path, monkeypatch) -> str:
    """A notebook at <root>/exp/train.ipynb, as Jupyter and jupyter-air describe it to kernels."""
    in_notebook(monkeypatch, tmp_path)
    return "exp/train.ipynb"


def test_default_is_the_notebooks_experiment(server, notebook):
    user = os.environ["JUPYTERHUB_USER"]
    experiment = resolve_experiment()
    assert experiment.name == f"/Users/{user}/exp/train"
    assert experiment.lifecycle_stage == "active"
    # opens in the MLflow UI's model-training view, not its GenAI one
    assert experiment.tags["mlflow.experimentKind"] == "custom_model_development"
    # resolved again: the same one, not a second
    assert resolve_experiment().experiment_id == experiment.experiment_id


def test_a_renamed_notebook_uses_its_new_name(server, notebook, monkeypatch):
    """JupyterLab tells the kernel the new path (JUPYTER_AIR_NOTEBOOK_PATH); JPY_SESSION_NAME
    still names the path the kernel started with."""
    from jupyter_air.tracking.context import notebook_path

    user = os.environ["JUPYTERHUB_USER"]
    monkeypatch.setenv("JUPYTER_AIR_NOTEBOOK_PATH", "exp/renamed.ipynb")
    assert notebook_path() == "exp/renamed.ipynb"
    assert resolve_experiment().name == f"/Users/{user}/exp/renamed"
    # only notebooks count
    monkeypatch.setenv("JUPYTER_AIR_NOTEBOOK_PATH", "console-1")
    assert notebook_path() == "exp/train.ipynb"


def test_environment_name_wins_over_the_notebook(server, notebook, monkeypatch):
    name = unique("env-exp")
    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", name)
    assert resolve_experiment().name == name


def test_environment_id(server, notebook, monkeypatch):
    import mlflow

    experiment_id = mlflow.MlflowClient().create_experiment(unique("by-id"))
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", experiment_id)
    assert resolve_experiment().experiment_id == experiment_id
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", "987654321")
    with pytest.raises(ExperimentError, match="987654321"):
        resolve_experiment()


def test_active_experiment_wins_over_everything_but_an_explicit_name(server, notebook, monkeypatch):
    import mlflow

    monkeypatch.setenv("MLFLOW_EXPERIMENT_NAME", unique("env-exp"))
    active = mlflow.set_experiment(unique("active"))
    assert active_experiment_id() == active.experiment_id
    assert resolve_experiment().experiment_id == active.experiment_id
    explicit = unique("workload")
    assert resolve_experiment(explicit).name == explicit


def test_deleted_experiment_is_explained(server):
    import mlflow

    name = unique("deleted")
    client = mlflow.MlflowClient()
    client.delete_experiment(client.create_experiment(name))
    with pytest.raises(ExperimentError, match="is deleted"):
        get_or_create_experiment(name)


def test_artifact_location_used_on_creation_and_checked_after(server, tmp_path):
    name = unique("artifacts")
    location = (tmp_path / "artifacts").as_uri()
    experiment = get_or_create_experiment(name, artifact_location=location)
    assert same_location(location, experiment.artifact_location)
    # the same place, said differently, is fine
    again = get_or_create_experiment(name, artifact_location=str(tmp_path / "artifacts") + "/")
    assert again.experiment_id == experiment.experiment_id
    with pytest.raises(ExperimentError, match="already exists with artifact location"):
        get_or_create_experiment(name, artifact_location=(tmp_path / "elsewhere").as_uri())


RACER = textwrap.dedent(
    """
    import json, os, sys, time
    from pathlib import Path

    import mlflow
    from mlflow.tracking import MlflowClient

    from jupyter_air.tracking.runs import ManagedRun

    outcome = {"create": None}
    original = MlflowClient.create_experiment

    def create(self, name, *args, **kwargs):
        try:
            result = original(self, name, *args, **kwargs)
            outcome["create"] = "created"
            return result
        except Exception as error:
            outcome["create"] = type(error).__name__ + ": " + str(error)[:80]
            raise

    MlflowClient.create_experiment = create
    barrier = Path(sys.argv[1])
    (barrier / f"ready-{os.getpid()}").touch()
    while len(list(barrier.glob("ready-*"))) < int(sys.argv[2]):
        time.sleep(0.01)
    run = ManagedRun.start(launcher="race", system_metrics=False)
    run.end()
    print(json.dumps({"experiment_id": run.experiment_id, "run_id": run.run_id,
                      "experiment_name": run.experiment_name, **outcome}))
    """
)


def test_concurrent_processes_share_one_new_experiment(server, notebook, tmp_path):
    racers = 6
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    env = dict(os.environ)
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", RACER, str(barrier), str(racers)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(racers)
    ]
    results = []
    for process in processes:
        out, err = process.communicate(timeout=240)
        assert process.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    user = os.environ["JUPYTERHUB_USER"]
    assert {r["experiment_name"] for r in results} == {f"/Users/{user}/exp/train"}
    assert len({r["experiment_id"] for r in results}) == 1
    assert {r["experiment_id"] for r in results} != {"0"}
    import mlflow

    client = mlflow.MlflowClient()
    experiment_id = results[0]["experiment_id"]
    runs = client.search_runs([experiment_id, "0"], max_results=100)
    where = {run.info.run_id: run.info.experiment_id for run in runs}
    assert all(where[r["run_id"]] == experiment_id for r in results)
    # one process created it; the others lost the race (RESOURCE_ALREADY_EXISTS) or came late
    outcomes = [r["create"] for r in results]
    assert outcomes.count("created") == 1, outcomes
    assert all(o in ("created", None) or "RESOURCE_ALREADY_EXISTS" in o for o in outcomes)


def test_experiment_resolution_outside_a_kernel_names_a_notebook_placeholder(server):
    user = os.environ["JUPYTERHUB_USER"]
    assert resolve_experiment().name == f"/Users/{user}/notebook"


def test_same_location():
    assert same_location("/tmp/a", "file:///tmp/a")
    assert same_location("s3://bucket/x/", "s3://bucket/x")
    assert not same_location("s3://bucket/x", "s3://bucket/y")
    assert same_location(str(Path("/tmp/a/../a")), "file:///tmp/a")
