"""``.distributed(remote=True)`` from real kernels, on this machine (the local backend): the call
is a job run whose first attempt fails and second succeeds — the cell shows both attempts (each
restarting its ranks once: ``max_restarts``) and returns the second's results, with one MLflow
run per attempt; a last attempt failing raises the
rank's own exception; a call whose kernel is interrupted and shut down goes on, and
``jupyter_air.job(ID).result()`` in a new kernel returns its results."""

from __future__ import annotations

import re
import time

import nbformat
import pytest
from kernel_support import running_kernel
from mlflow.tracking import MlflowClient
from nbclient import NotebookClient
from workloads_support import air_environment, wait_until

from jupyter_air.workloads.store import JobStore

pytestmark = pytest.mark.timeout(420)

RETRIED = """\
from jupyter_air import distributed

@distributed(gpus=2, experiment={experiment!r}, run_name="remote")
def train(scale):
    import os
    import torch, torch.distributed as dist

    dist.init_process_group("gloo")
    rank = dist.get_rank()
    attempt, restart = os.environ["JUPYTER_AIR_ATTEMPT"], os.environ["TORCHELASTIC_RESTART_COUNT"]
    print(f"rank {{rank}} attempt {{attempt}} restart {{restart}}", flush=True)
    if attempt == "1" and rank == 1:
        raise ValueError("the first attempt fails")
    if restart == "0":
        raise ValueError("the first round of the second attempt fails")
    total = torch.tensor([1.0])
    dist.all_reduce(total)
    dist.destroy_process_group()
    return rank * scale + total.item()

print("results", train.distributed(10, remote=True, max_retries=1, max_restarts=1))
"""

FAILING = """\
@distributed(gpus=2, experiment={experiment!r}, remote=True)
def broken():
    import os
    if os.environ["RANK"] == "1":
        raise KeyError("rank one is broken")

broken.distributed()
"""


@pytest.fixture
def kernel_env(mlflow_server, monkeypatch, tmp_path):
    data = air_environment(monkeypatch, tmp_path, mlflow_server.url)
    return JobStore.for_data_dir(data), tmp_path, mlflow_server.url


def stream(cell) -> str:
    return "".join(o.text for o in cell.outputs if o.output_type == "stream")


def test_a_retried_call_returns_the_last_attempts_results(kernel_env):
    store, tmp, uri = kernel_env
    experiment = f"remote-{tmp.name}"
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(RETRIED.format(experiment=experiment)),
        nbformat.v4.new_code_cell(FAILING.format(experiment=experiment)),
    ]
    client = NotebookClient(
        nb, timeout=300, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(tmp)}},
    )  # fmt: skip
    client.execute()
    retried, failing = nb.cells
    text = stream(retried)
    assert "results [2.0, 12.0]" in text, text[-3000:]
    assert "[rank 1] rank 1 attempt 1" in text and "[rank 0] rank 0 attempt 2" in text
    assert "Attempt 2 of 2" in text
    assert "[rank 1] rank 1 attempt 1 restart 1" in text  # the first attempt restarted its ranks
    assert "[rank 0] rank 0 attempt 2 restart 1" in text
    assert "the first round of the second attempt fails — torch elastic starts every rank" in text
    jobs = sorted(store.list_jobs(), key=lambda j: j.submitted_at)
    first = jobs[0]
    assert first.source == "distributed" and first.status == "SUCCEEDED"
    assert [a.status for a in first.attempts] == ["FAILED", "SUCCEEDED"]
    runs = [MlflowClient(uri).get_run(a.mlflow_run_id) for a in first.attempts]
    assert [r.info.status for r in runs] == ["FAILED", "FINISHED"]
    assert {r.data.tags.get("jupyter_air.function") for r in runs} == {"train"}
    assert [r.data.tags.get("jupyter_air.restarts") for r in runs] == ["1", "1"]

    errors = [o for o in failing.outputs if o.output_type == "error"]
    assert errors and errors[0].ename == "KeyError", stream(failing)[-3000:]
    assert "rank one is broken" in errors[0].evalue
    assert "rank 1 of 2" in "\n".join(errors[0].traceback)
    assert jobs[1].status == "FAILED"


WAITING = """\
from jupyter_air import distributed
import pathlib

@distributed(gpus=2, experiment={experiment!r}, remote=True)
def wait_for(flag):
    import os, pathlib, time
    print("waiting", flush=True)
    while not pathlib.Path(flag).exists():
        time.sleep(0.2)
    return int(os.environ["RANK"]) + 100

wait_for.distributed({flag!r})
"""


def test_a_call_outlives_its_kernel_and_a_new_kernel_reads_its_results(kernel_env):
    store, tmp, _uri = kernel_env
    flag = tmp / "go"
    with running_kernel(tmp, timeout=120) as (km, kc):
        msg_id = kc.execute(WAITING.format(experiment=f"outlive-{tmp.name}", flag=str(flag)))
        wait_until(lambda: store.list_jobs(), timeout=120, what="the job run")
        job_id = store.list_jobs()[0].id
        wait_until(lambda: "waiting" in _log(store, job_id), timeout=180, what="the ranks")
        km.interrupt_kernel()
        prompt = kc.get_stdin_msg(timeout=60)  # the cell asks whether to cancel the job too
        assert f"Cancel job run {job_id} too?" in prompt["content"]["prompt"]
        kc.input("")  # the default: no
        said = _collect(kc, msg_id, timeout_s=60)
        assert "Stopped following job run" in said and "it goes on" in said, said[-2000:]
    assert store.get_job(job_id).status == "RUNNING"
    flag.touch()

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(
            f"import jupyter_air\nh = jupyter_air.job({job_id!r})\n"
            "print('results', h.result(timeout=180), h.status)"
        )
    ]
    NotebookClient(nb, timeout=240, kernel_name="python3").execute()
    assert "results [100, 101] SUCCEEDED" in stream(nb.cells[0])


def _log(store: JobStore, job_id: str) -> str:
    from jupyter_air.launch.remote import JobHandle

    return JobHandle(job_id, store).logs()


def _collect(kc, msg_id: str, timeout_s: float) -> str:
    """Everything the execution ``msg_id`` printed, until it ends."""
    out, deadline = [], time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except Exception:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        content = msg["content"]
        if msg["msg_type"] == "stream":
            out.append(content["text"])
        elif msg["msg_type"] == "error":
            out.append("\n".join(content["traceback"]))
        elif msg["msg_type"] == "status" and content["execution_state"] == "idle":
            break
    return re.sub(r"\x1b\[[0-9;]*m", "", "".join(out))
