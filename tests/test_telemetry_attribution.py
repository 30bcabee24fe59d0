"""A GPU process is attributed to the MLflow run, rank and job it works for, read from its
environment or its ancestors' — on real process trees shaped like a `.distributed()` call and a
workload node."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import threading
import time

import pytest
from fake_nvml import FakeGpu, FakeNvml, MiB

from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.models import Sample
from jupyter_air.telemetry.nvml import NvmlBackend
from jupyter_air.telemetry.simulated import SimulatedBackend

# Starts a child with the environment given in argv[1] (JSON; "inherit" keeps ours), prints the
# child's pid once the child runs, and lives until stdin closes, like a launcher above its ranks.
LAUNCHER = textwrap.dedent(
    """
    import json, os, subprocess, sys
    spec = json.loads(sys.argv[1])
    env = dict(os.environ) if spec.pop("inherit", False) else {"PATH": os.environ["PATH"]}
    env.update(spec)
    child = subprocess.Popen(
        [sys.executable, "-c", "import sys; print(flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env=env,
    )
    child.stdout.readline()
    print(child.pid, flush=True)
    sys.stdin.read()
    child.stdin.close()
    child.wait()
    """
)


@pytest.fixture
def tree():
    """``tree(parent_env, child_env)`` → (launcher pid, child pid), both stopped at the end."""
    started: list[subprocess.Popen] = []

    def start(parent_env: dict[str, str], child_env: dict[str, str]) -> tuple[int, int]:
        env = {"PATH": os.environ["PATH"], **parent_env}
        launcher = subprocess.Popen(
            [sys.executable, "-c", LAUNCHER, json.dumps(child_env)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
            text=True,
        )
        started.append(launcher)
        assert launcher.stdout is not None
        return launcher.pid, int(launcher.stdout.readline())

    yield start
    for launcher in started:
        assert launcher.stdin is not None
        launcher.stdin.close()
        launcher.wait(timeout=30)


def process_of(pid: int, owners: dict | None = None) -> dict:
    fake = FakeNvml([FakeGpu(compute=[(pid, 2048 * MiB)])])
    sample = Sampler(NvmlBackend(nvml=fake), node="n").sample(owners=owners or {})
    Sample.model_validate(sample)  # what the panel gets is the contract
    (process,) = sample["gpus"][0]["processes"]
    return process


def test_a_distributed_rank_is_attributed_to_its_run_and_rank(tree):
    _, rank = tree(
        {"MLFLOW_RUN_ID": "4f2c9e8a1b7d4e3f", "MLFLOW_EXPERIMENT_ID": "7"},
        {"inherit": True, "RANK": "1", "LOCAL_RANK": "1", "WORLD_SIZE": "2"},
    )
    assert process_of(rank)["run"] == {
        "run_id": "4f2c9e8a1b7d4e3f",
        "experiment_id": "7",
        "rank": 1,
        "local_rank": 1,
        "node_rank": None,
        "job_id": None,
    }


def test_a_workload_rank_gets_what_its_environment_lacks_from_its_ancestors(tree):
    node, rank = tree(
        {
            "MLFLOW_RUN_ID": "9a8b7c6d5e4f3a2b",
            "MLFLOW_EXPERIMENT_ID": "3",
            "NODE_RANK": "1",
            "JUPYTER_AIR_JOB_ID": "0123456789ab",
        },
        {"RANK": "3"},  # its own environment has only its rank
    )
    assert process_of(rank)["run"] == {
        "run_id": "9a8b7c6d5e4f3a2b",
        "experiment_id": "3",
        "rank": 3,
        "local_rank": None,
        "node_rank": 1,
        "job_id": "0123456789ab",
    }
    # the node process itself is attributed to the job run, without a rank
    assert process_of(node)["run"]["rank"] is None


def test_a_process_of_no_run_has_none_and_the_search_stops_at_a_kernel(tree):
    _, plain = tree({}, {})
    assert process_of(plain)["run"] is None
    # a kernel started under a process with a run: its own GPU work is not that run's
    kernel, child = tree({"MLFLOW_RUN_ID": "feedfacefeedface"}, {})
    owner = {"kernel_id": "k-1", "kernel_name": "python3", "path": "a.ipynb"}
    process = process_of(child, owners={kernel: owner})
    assert process["kernel"] == owner
    assert process["run"] is None


def test_simulated_gpus_show_the_processes_a_kernel_started_with_their_run(tree):
    kernel, rank = tree(
        {"MLFLOW_RUN_ID": "4f2c9e8a1b7d4e3f", "MLFLOW_EXPERIMENT_ID": "7"},
        {"inherit": True, "RANK": "0", "LOCAL_RANK": "0"},
    )
    owner = {"kernel_id": "k1", "kernel_name": "python3", "path": "train.ipynb"}
    sample = Sampler(SimulatedBackend(2, seed=1), node="n").sample(owners={kernel: owner})
    Sample.model_validate(sample)
    processes = {p["pid"]: p for gpu in sample["gpus"] for p in gpu["processes"]}
    assert set(processes) == {kernel, rank}
    assert processes[rank]["kernel"] == owner  # started by the notebook's kernel
    assert processes[rank]["run"]["run_id"] == "4f2c9e8a1b7d4e3f"
    assert processes[rank]["run"]["rank"] == 0
    assert processes[kernel]["run"] is None  # a kernel is its notebook's, not a run's


def test_the_ranks_of_a_distributed_call_are_attributed_to_their_run_and_ranks(
    tmp_path, monkeypatch
):
    """The ranks are forks of their launcher agent on Linux (their environment reads as the
    agent's did): each is still found with its own rank."""
    from jupyter_air import distributed

    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(tmp_path))
    run = {"MLFLOW_RUN_ID": "4f2c9e8a1b7d4e3f", "MLFLOW_EXPERIMENT_ID": "7"}
    go = tmp_path / "go"

    @distributed(gpus=2, mlflow=False, env=run, timeout=60)
    def wait_to_be_seen(folder, go):
        import os
        import pathlib
        import time

        rank = os.environ["RANK"]
        pathlib.Path(folder, f"rank-{rank}").write_text(str(os.getpid()))
        while not pathlib.Path(go).exists():
            time.sleep(0.05)

    seen: dict[int, dict] = {}

    def look() -> None:
        try:
            for rank in (0, 1):
                path = tmp_path / f"rank-{rank}"
                while not path.exists():
                    time.sleep(0.05)
                seen[rank] = process_of(int(path.read_text()))["run"]
        finally:
            go.touch()

    watcher = threading.Thread(target=look)
    watcher.start()
    wait_to_be_seen.distributed(str(tmp_path), str(go))
    watcher.join(30)
    for rank in (0, 1):
        assert seen[rank] == {
            "run_id": "4f2c9e8a1b7d4e3f",
            "experiment_id": "7",
            "rank": rank,
            "local_rank": rank,
            "node_rank": 0,  # its node, the only one
            "job_id": None,
        }
