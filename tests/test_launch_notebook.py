"""End to end in a notebook: nbclient runs a real ipykernel with the environment the jupyter-air
server gives kernels. A function defined in one cell, using a notebook global, runs on 2 CPU
ranks from another cell: rank-prefixed output and the run display in the cell, the results, the
MLflow run FINISHED in the notebook's experiment; a failing rank's error names the rank and shows
the cell's line."""

from __future__ import annotations

import os
import re
import sys
import uuid

import nbformat
import pytest
from tracking_support import UI, execute_notebook, in_notebook, streams, use_server

from jupyter_air.tracking.display import MIME_TYPE

pytestmark = pytest.mark.timeout(240)

ANSI = re.compile(r"\x1b\[[0-9;]*m")

CELLS = [
    "from jupyter_air import distributed\nimport os\nSCALE = 10",
    # the function, in its own cell, uses the notebook global SCALE
    """@distributed(gpus=2)
def train(x):
    import torch
    import torch.distributed as dist

    dist.init_process_group()
    total = torch.tensor([float(dist.get_rank() + 1)])
    dist.all_reduce(total)
    print(f"sum {total.item()}")
    if int(os.environ["RANK"]) == 0:
        import mlflow
        mlflow.log_metric("sum", total.item())
    return total.item() * SCALE + x""",
    "results = train.distributed(1)\nprint('results', results)",
    """@distributed(gpus=2, mlflow=False)
def broken():
    if os.environ["RANK"] == "1":
        raise ValueError("broken on purpose")

broken.distributed()""",
]


@pytest.fixture
def executed(mlflow_server, monkeypatch, tmp_path):
    use_server(monkeypatch, mlflow_server.url)
    path = in_notebook(monkeypatch, tmp_path, links=True)
    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.cells[3].metadata["tags"] = ["raises-exception"]
    execute_notebook(nb, path, tmp_path / f"kernel-{uuid.uuid4()}.json")
    return nb


def test_distributed_from_a_notebook(executed):
    import mlflow

    nb = executed
    call = nb.cells[2]
    errors = [o for o in call.outputs if o.output_type == "error"]
    assert not errors, errors

    # rank-prefixed lines from both ranks, and the results
    out = streams(call, "stdout")
    assert "[rank 0] sum 3.0" in out
    assert "[rank 1] sum 3.0" in out
    assert "results [31.0, 31.0]" in out

    # the run display, updated in place to FINISHED; no live widget (nbclient shows none)
    (shown,) = [o for o in call.outputs if o.output_type == "display_data"]
    assert set(shown["data"]) == {MIME_TYPE, "text/html", "text/plain"}
    assert "widgets" not in nb.metadata
    payload = shown["data"][MIME_TYPE]
    assert payload["status"] == "FINISHED" and payload["end_time"] is not None
    assert payload["ui"] == UI
    assert f'href="{UI}#/experiments/{payload["experiment_id"]}/runs/' in shown["data"]["text/html"]

    run = mlflow.MlflowClient().get_run(payload["run_id"])
    assert run.info.status == "FINISHED"
    assert run.data.metrics["sum"] == 3.0  # logged by rank 0 into the kernel's run
    user = os.environ["JUPYTERHUB_USER"]
    experiment = mlflow.MlflowClient().get_experiment(run.info.experiment_id)
    assert experiment.name == f"/Users/{user}/exp/train"

    # a failing rank: its exception, named, with the cell's line
    (error,) = [o for o in nb.cells[3].outputs if o.output_type == "error"]
    assert error.ename == "ValueError" and error.evalue == "broken on purpose"
    text = ANSI.sub("", "\n".join(error.traceback))
    assert "rank 1 of 2 raised" in text
    assert "Cell In[4], line 4, in broken" in text
    assert 'raise ValueError("broken on purpose")' in text
    assert "raised on rank 1 of 2" in text  # the note
    for launcher in ("call.py", "driver.py"):  # the launcher's frames are left out
        assert f"jupyter_air/launch/{launcher}" not in text
    assert "system_metrics_monitor" not in streams(call)  # MLflow's monitor keeps quiet
