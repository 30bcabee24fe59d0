"""%%air_run and %air_run end to end in a real kernel: a 2-rank gloo cell run as a job (logs in
the cell, the attempt's run displayed with its links), bad arguments answered with the usage, a
failing cell retried then reported as one error, a YAML file on two nodes with node prefixes,
and Ctrl-C cancelling the job."""

from __future__ import annotations

import os
import sys
import time

import nbformat
import pytest
from kernel_support import running_kernel
from nbclient import NotebookClient
from workloads_support import PY, air_environment, alive, wait_until, write

from jupyter_air.tracking.display import MIME_TYPE
from jupyter_air.workloads.store import JobStore

UI = "/user/ada/air/mlflow/"

GLOO = """\
%%air_run --gpus 2 --experiment {experiment} --run-name gloo
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(t)
print(f"rank {{dist.get_rank()}} of {{dist.get_world_size()}} sum {{t.item()}}")
dist.destroy_process_group()
"""


@pytest.fixture
def kernel_env(mlflow_server, monkeypatch, tmp_path):
    data = air_environment(monkeypatch, tmp_path, mlflow_server.url)
    # what a jupyter-air server puts in a kernel's environment
    monkeypatch.setenv("JUPYTER_AIR_MLFLOW_UI", UI)
    monkeypatch.setenv("JUPYTER_AIR_BASE_URL", "/user/ada/")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    return JobStore.for_data_dir(data), tmp_path


def outputs(cell, kind):
    return [o for o in cell.outputs if o.output_type == kind]


def stream(cell, name):
    return "".join(o.text for o in outputs(cell, "stream") if o.name == name)


def test_air_run_in_a_notebook(kernel_env):
    store, tmp = kernel_env
    experiment = f"magic-{tmp.name}"
    write(tmp, "bad.yaml", "experiment_name: x\ncompute: {num_acelerators: 1}\ncommand: x\n")
    write(
        tmp,
        "two.yaml",
        f"experiment_name: {experiment}\ncompute: {{accelerator_type: CPU, num_nodes: 2}}\n"
        f"command: {PY} -c \"import os; print('hi from', os.environ['NODE_RANK'])\"\n",
    )
    cells = [
        "%load_ext jupyter_air",
        GLOO.format(experiment=experiment),
        "%%air_run --gpus nope\nprint(1)",
        "%air_run",
        "%air_run bad.yaml",
        f"%%air_run --max-retries 1 --experiment {experiment}\nraise ValueError('nope')",
        "%air_run two.yaml",
    ]
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    client = NotebookClient(
        nb,
        timeout=240,
        kernel_name="python3",
        allow_errors=True,
        resources={"metadata": {"path": str(tmp)}},
    )
    client.execute()
    _, gloo, bad_args, no_args, bad_file, failing, two = nb.cells

    # the 2-rank gloo cell: its ranks' output, its run displayed (FINISHED, linked), SUCCEEDED
    assert not outputs(gloo, "error"), outputs(gloo, "error")
    out = stream(gloo, "stdout")
    assert "rank 0 of 2 sum 3.0" in out and "rank 1 of 2 sum 3.0" in out
    assert "SUCCEEDED" in out
    succeeded = store.list_jobs(experiment=experiment, status="SUCCEEDED")
    (job,) = [j for j in succeeded if j.run_name == "gloo"]
    assert job.source == "magic"
    assert job.compute["num_accelerators"] == 2
    assert "--nproc_per_node=2" in job.command
    runs = [o for o in outputs(gloo, "display_data") if MIME_TYPE in o.data]
    (payload,) = [o.data[MIME_TYPE] for o in runs]
    assert payload["run_id"] == job.attempts[0].mlflow_run_id
    assert payload["status"] == "FINISHED" and payload["ui"] == UI
    assert (
        f"{UI}#/experiments/{job.experiment_id}/runs/{payload['run_id']}"
        in (runs[0].data["text/html"])
    )
    assert "OMP_NUM_THREADS" not in stream(gloo, "stderr")  # no torchrun banner

    # bad arguments: the usage, no traceback
    for cell in (bad_args, no_args):
        assert not outputs(cell, "error")
        assert "UsageError" in stream(cell, "stderr")
        assert "%%air_run [--gpus N] [--experiment E]" in stream(cell, "stderr")

    # a bad file: one error naming the field and line
    (error,) = outputs(bad_file, "error")
    assert error.ename == "AirRunError"
    assert "compute.num_acelerators: unknown field (line 2)" in error.evalue
    assert len(error.traceback) == 1

    # a failing cell: both attempts shown, then one error with the reason
    (error,) = outputs(failing, "error")
    assert error.ename == "WorkloadFailed"
    assert "FAILED: node 0 exited with code 1 (failed 2 attempts)" in error.evalue
    shown = [
        o.data[MIME_TYPE]["status"] for o in outputs(failing, "display_data") if MIME_TYPE in o.data
    ]
    assert shown == ["FAILED", "FAILED"]
    assert "ValueError: nope" in stream(failing, "stderr")
    assert "Attempt 1 failed (node 0 exited with code 1); retrying." in stream(failing, "stderr")

    # a YAML file on two nodes: lines prefixed by node
    assert not outputs(two, "error")
    assert "[node 0] hi from 0" in stream(two, "stdout")
    assert "[node 1] hi from 1" in stream(two, "stdout")


def test_interrupting_the_cell_cancels_the_job(kernel_env):
    store, tmp = kernel_env
    with running_kernel(tmp, timeout=60) as (km, kc):
        kc.execute_interactive("%load_ext jupyter_air", timeout=60)
        msg_id = kc.execute(
            "%%air_run --experiment interrupt\n"
            "import time, os\nprint('started', os.getpid(), flush=True)\ntime.sleep(300)\n"
        )
        wait_until(lambda: store.list_jobs(status="RUNNING"), 60, "the job to run")
        (job,) = store.list_jobs(status="RUNNING")
        wait_until(lambda: job.id and store.get_job(job.id).attempts, 30, "its first attempt")
        wait_until(
            lambda: any(
                line for line in (tmp / "data").rglob("node_0.log") if "started" in line.read_text()
            ),
            60,
            "the cell's code to start",
        )
        time.sleep(0.3)
        km.interrupt_kernel()
        error = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=60)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "error":
                error = msg["content"]
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
    assert error is not None and error["ename"] == "WorkloadCancelled"
    assert "CANCELLED (interrupted)" in error["evalue"]
    ended = store.get_job(job.id)
    assert ended.status == "CANCELLED"
    assert not alive(ended.supervisor_pid)
    assert not any(alive(n.pid) for a in ended.attempts for n in a.nodes)
