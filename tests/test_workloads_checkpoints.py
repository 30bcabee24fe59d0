"""Training that survives, with real torchrun ranks (gloo on CPU) on the local backend: a DDP
script in the pattern of PyTorch's tutorial, its rank 0 killed mid-training, resumes on the
retry — from its working folder, and from $JUPYTER_AIR_CHECKPOINT_DIR on two nodes, where the
node that never saved gets node 0's snapshot; torch elastic restarts a crashed rank in place
(max_restarts).

The kill comes at a known point, not at a time: in attempt 1, rank 0 is SIGKILLed right after it
printed that epoch 400's snapshot is saved (tests/fixtures/kill_on_line, a sitecustomize; the
script is unchanged)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from workloads_support import PY, air_json, cli_env, submit_yaml, wait_for, write

from jupyter_air.logs.query import query_logs
from jupyter_air.workloads.paths import checkpoint_home

FIXTURES = Path(__file__).parent / "fixtures"
EPOCHS, SAVE_EVERY = 1200, 400  # rank 0 saves at epochs 0, 400 and 800
FAULT = (
    f"env_variables: {{PYTHONPATH: {FIXTURES / 'kill_on_line'}, "
    f"KILL_ON_LINE: 'Epoch {SAVE_EVERY} | Training snapshot saved'}}\n"
)


@pytest.fixture
def env(mlflow_server, monkeypatch, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(FIXTURES / "ddp_snapshot_train.py", work / "train.py")
    return cli_env(monkeypatch, tmp_path, mlflow_server, work=work)


def lines(env, job_id: str, attempt: int, node: int = 0) -> list[str]:
    return [line.text for line in query_logs(env.store, job_id, attempt=attempt, node=node).lines]


def resumed_epochs(texts: list[str]) -> list[int]:
    return [int(m[1]) for t in texts if (m := re.search(r"from snapshot at Epoch (\d+)", t))]


def test_a_script_that_saves_in_its_working_folder_resumes_on_the_retry(env):
    """The attempts of a job run share one working copy on this machine: the snapshot a killed
    attempt saved there is where the retry finds it."""
    job = submit_yaml(
        env,
        f"experiment_name: resume-{env.tmp.name}\n"
        "compute: {accelerator_type: CPU}\n"
        f"command: {PY} -m torch.distributed.run --nproc_per_node=2 train.py "
        f"{EPOCHS} {SAVE_EVERY}\n"
        "working_dir: work\n"
        "max_retries: 1\n" + FAULT,
    )
    job = wait_for(env.store, job.id, timeout=180)
    assert (job.status, job.reason) == ("SUCCEEDED", "the command succeeded on attempt 2")
    first, second = job.attempts
    assert first.status == "FAILED"
    killed = lines(env, job.id, 1)
    assert resumed_epochs(killed) == [] and not [t for t in killed if "Epoch 800 |" in t]
    assert resumed_epochs(lines(env, job.id, 2)) == [SAVE_EVERY, SAVE_EVERY]  # both ranks
    assert f"[RANK0] trained epochs {SAVE_EVERY} to {EPOCHS}" in lines(env, job.id, 2)


def test_two_nodes_resume_from_the_checkpoint_folder_node_0_saved(env):
    """Only rank 0 (node 0) saves, in $JUPYTER_AIR_CHECKPOINT_DIR; the retry puts its snapshot
    on both nodes, so both ranks resume at the same epoch; the records say from what."""
    job = submit_yaml(
        env,
        f"experiment_name: ckpt-{env.tmp.name}\n"
        "compute: {accelerator_type: CPU, num_nodes: 2}\n"
        f"command: {PY} -m torch.distributed.run --nproc_per_node=1 train.py "
        f"{EPOCHS} {SAVE_EVERY} $JUPYTER_AIR_CHECKPOINT_DIR/snapshot.pt\n"
        "working_dir: work\n"
        "max_retries: 1\n" + FAULT,
    )
    job = wait_for(env.store, job.id, timeout=180)
    assert job.status == "SUCCEEDED", job.reason
    for node in (0, 1):
        assert resumed_epochs(lines(env, job.id, 2, node)) == [SAVE_EVERY], f"node {node}"
    home = checkpoint_home(env.store.data_dir, job.id)
    assert sorted(p.relative_to(home).as_posix() for p in home.rglob("*.pt")) == [
        "node_0/snapshot.pt"  # node 1 wrote nothing of its own
    ]
    first, second = job.attempts
    assert first.checkpoint["saved"]["files"] >= 1
    restored = second.checkpoint["restored"]
    assert (restored["attempt"], restored["run_id"]) == (1, first.mlflow_run_id)
    tags = env.client.get_run(second.mlflow_run_id).data.tags
    assert tags["jupyter_air.resumed_from_attempt"] == "1"
    assert tags["jupyter_air.resumed_from_run"] == first.mlflow_run_id
    shown = air_json("get", "run", job.id)
    assert shown["attempts"][1]["checkpoint"]["restored"]["attempt"] == 1


CRASH_ONCE = """
import os, sys
import torch.distributed as dist
restart = os.environ["TORCHELASTIC_RESTART_COUNT"]
dist.init_process_group("gloo")  # a restarted round meets in a fresh store, not the last one's
dist.barrier()
if dist.get_rank() == 1:  # its node's count: a node restarted by its peer's failure counts 0
    print("restart", restart, flush=True)
if restart == "0" and dist.get_rank() == 1:
    sys.exit(5)
dist.barrier()  # rank 0 of the first round fails here: its peer is gone
dist.destroy_process_group()
"""


def test_max_restarts_lets_torchrun_restart_a_crashed_rank_within_the_attempt(env):
    """Node 1's rank crashes in the first round: torchrun restarts the ranks of both nodes
    together (c10d rendezvous), the attempt succeeds, and its run records one restart."""
    write(env.work, "crash_once.py", CRASH_ONCE)
    job = submit_yaml(
        env,
        f"experiment_name: restarts-{env.tmp.name}\n"
        "compute: {accelerator_type: CPU, num_nodes: 2}\n"
        f"command: {PY} -m torch.distributed.run --nproc_per_node=1 crash_once.py\n"
        "working_dir: work\n"
        "max_restarts: 1\n",
    )
    job = wait_for(env.store, job.id, timeout=120)
    assert (job.status, len(job.attempts)) == ("SUCCEEDED", 1), job.reason
    assert [t for t in lines(env, job.id, 1, node=1) if t.startswith("restart ")] == [
        "restart 0",
        "restart 1",
    ]
    assert job.attempts[0].checkpoint["restarts"] == 1
    tags = env.client.get_run(job.attempts[0].mlflow_run_id).data.tags
    assert tags["jupyter_air.restarts"] == "1"
