"""End to end: a notebook executed by nbclient in a real ipykernel, with the environment the
jupyter-air server gives kernels. MLflow runs typed in cells are displayed (and updated in place),
escaped, linked under the base URL, tagged and put in the notebook's experiment."""

from __future__ import annotations

import json
import os
import re
import sys
import uuid

import nbformat
import pytest
from tracking_support import UI, execute_notebook, in_notebook, unique, use_server

from jupyter_air.tracking.display import MIME_TYPE
from jupyter_air.tracking.naming import TAG_KERNEL_ID, TAG_NOTEBOOK

HOSTILE = "<img src=x onerror=alert(1)>"


@pytest.fixture
def executed(mlflow_server, monkeypatch, tmp_path):
    """Run the notebook once; give back the executed notebook, the experiment name it set, the
    user and the kernel's connection file."""
    # what the jupyter-air server and Jupyter put in a kernel's environment
    use_server(monkeypatch, mlflow_server.url)
    path = in_notebook(monkeypatch, tmp_path, links=True)
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    chosen = unique("x")
    cells = [
        "%load_ext jupyter_air",
        "import mlflow",
        f'with mlflow.start_run(run_name="{HOSTILE}"):\n    mlflow.log_metric("loss", 0.5)',
        "with mlflow.start_run(run_name='outer') as outer:\n"
        "    with mlflow.start_run(run_name='inner', nested=True) as inner:\n"
        "        pass\n"
        "print('nested', outer.info.run_id, inner.info.run_id)",
        f"mlflow.set_experiment({chosen!r})\n"
        "with mlflow.start_run(run_name='in-x') as r:\n"
        "    pass\n"
        "print('chosen', r.info.run_id)",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    # a connection file named as jupyter-server names them: kernel-<kernel id>.json
    kernel_id = str(uuid.uuid4())
    execute_notebook(nb, path, tmp_path / f"kernel-{kernel_id}.json")
    return nb, chosen, os.environ["JUPYTERHUB_USER"], kernel_id


def run_displays(cell) -> list[dict]:
    displays = [o for o in cell.outputs if o.output_type == "display_data"]
    return [o for o in displays if MIME_TYPE in o.get("data", {})]


def stream_text(nb) -> str:
    return "".join(o.text for c in nb.cells for o in c.outputs if o.output_type == "stream")


def test_runs_typed_in_a_notebook(executed):
    import mlflow

    nb, chosen, user, kernel_id = executed
    client = mlflow.MlflowClient()

    # the display: one output, updated in place to FINISHED
    (shown,) = run_displays(nb.cells[2])
    payload = shown["data"][MIME_TYPE]
    assert payload["status"] == "FINISHED"
    assert payload["end_time"] is not None
    assert payload["run_name"] == HOSTILE  # raw in JSON
    assert payload["ui"] == UI
    run_id, experiment_id = payload["run_id"], payload["experiment_id"]
    html = shown["data"]["text/html"]
    assert "<img" not in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    view = "?workflowType=machine_learning"
    assert f'href="{UI}#/experiments/{experiment_id}/runs/{run_id}{view}"' in html
    assert f'href="{UI}#/experiments/{experiment_id}/runs/{run_id}/system-metrics{view}"' in html
    assert f'href="{UI}#/experiments/{experiment_id}/runs{view}"' in html
    assert "FINISHED" in shown["data"]["text/plain"]
    # MLflow's own link line stays suppressed; nothing went to stderr
    text = stream_text(nb)
    assert "View run" not in text and "View experiment" not in text
    assert not [o for c in nb.cells for o in c.outputs if o.output_type == "error"]

    # in MLflow: the notebook's experiment, tagged with the notebook and the kernel
    run = client.get_run(run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["loss"] == 0.5
    assert client.get_experiment(run.info.experiment_id).name == f"/Users/{user}/exp/train"
    assert run.data.tags[TAG_NOTEBOOK] == "exp/train.ipynb"
    assert run.data.tags["mlflow.source.name"] == "exp/train.ipynb"
    assert run.data.tags["mlflow.source.type"] == "NOTEBOOK"
    assert run.data.tags[TAG_KERNEL_ID] == kernel_id

    # nested: a child of the outer run, both displayed and finished
    outer_id, inner_id = re.search(r"nested (\w+) (\w+)", text).groups()
    inner = client.get_run(inner_id)
    assert inner.data.tags["mlflow.parentRunId"] == outer_id
    assert inner.info.experiment_id == client.get_run(outer_id).info.experiment_id
    shown_nested = [d["data"][MIME_TYPE] for d in run_displays(nb.cells[3])]
    assert [(p["run_id"], p["status"]) for p in shown_nested] == [
        (outer_id, "FINISHED"),
        (inner_id, "FINISHED"),
    ]
    assert shown_nested[1]["parent_run_id"] == outer_id

    # set_experiment wins
    (chosen_id,) = re.search(r"chosen (\w+)", text).groups()
    assert client.get_experiment(client.get_run(chosen_id).info.experiment_id).name == chosen
    (shown_chosen,) = run_displays(nb.cells[4])
    assert shown_chosen["data"][MIME_TYPE]["experiment_name"] == chosen

    # the saved notebook keeps the bundle (no live display ids needed to read it)
    json.dumps(nb)
