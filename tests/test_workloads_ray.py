"""Workloads on a real Ray cluster of three nodes on loopback (tests/ray_cluster.py): a 2-node
torchrun workload whose all-reduce spans both nodes, each node's lines in its own log, system
metrics sampled per node; a shape the cluster cannot hold refused at once; cancel with nothing
left on any node; a node lost mid-attempt, the retry succeeding on the nodes left; the logs of a
Ray job through `air logs` and the REST API."""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from pathlib import Path

import pytest
from workloads_support import (
    PY,
    air,
    server_config,
    wait_for,
    wait_until,
    write,
)

from jupyter_air.logs.query import query_logs

TRAIN = """
import os, time
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
value = torch.tensor([float(rank)])
dist.all_reduce(value)
node = os.environ["NODE_RANK"]
print(f"node {node} rank {rank} world {world} sum {value.item():g} "
      f"gpus {os.environ.get('CUDA_VISIBLE_DEVICES')!r}", flush=True)
if rank == 0:
    import mlflow
    mlflow.log_metric("world_size", world)
    time.sleep(2)  # a sample of system metrics on each node
dist.destroy_process_group()
"""


@pytest.fixture
def env(ray_env):
    return ray_env


def submit(env, name: str, fields: str, command: str, *extra: str) -> str:
    spec = write(
        env.tmp,
        f"{name}.yaml",
        f"experiment_name: ray-{name}-{env.tmp.name}\n{fields}command: {command}\n",
    )
    result = air("run", str(spec), "-o", "json", *extra, cwd=env.tmp)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["id"]


def job_processes(job_id: str) -> list[int]:
    from jupyter_air.config import JOB_ID
    from jupyter_air.pids import job_processes as found

    return found(job_id, JOB_ID.name)


def test_a_two_node_torchrun_workload_runs_on_two_ray_nodes(env):
    write(env.tmp, "train.py", TRAIN)
    job_id = submit(
        env,
        "ddp",
        "compute: {num_nodes: 2, num_accelerators: 1, backend: ray}\n",
        f"{PY} -m torch.distributed.run --nproc_per_node=2 train.py",
    )
    job = wait_for(env.store, job_id, timeout=180)
    assert job.status == "SUCCEEDED", (job.reason, _logs(env, job_id))
    attempt = job.attempts[0]
    assert attempt.backend == "ray"
    machines = [n.machine for n in attempt.nodes]
    assert len(set(machines)) == 2 and all(machines)  # two different Ray nodes
    assert attempt.hosts == "127.0.0.1,127.0.0.1"
    for node in (0, 1):
        lines = [line.text for line in query_logs(env.store, job_id, node=node).lines]
        ranks = sorted(int(t.split()[3]) for t in lines if t.startswith(f"node {node} rank "))
        assert ranks == [2 * node, 2 * node + 1], lines  # each node's ranks, in its own log
        for text in (t for t in lines if t.startswith("node ")):
            assert "world 4 sum 6" in text  # the all-reduce spans both nodes
            assert text.endswith(f"gpus '{attempt.nodes[node].gpus}'")  # what Ray assigned
        assert attempt.nodes[node].gpus.isdigit()
    run = env.client.get_run(attempt.mlflow_run_id)
    assert run.info.status == "FINISHED"
    assert run.data.metrics["world_size"] == 4
    for node in (0, 1):  # sampled on each node
        assert any(k.startswith(f"system/node_{node}/") for k in run.data.metrics), sorted(
            run.data.metrics
        )
    assert run.data.tags["jupyter_air.workload.backend"] == "ray"

    # the logs of a Ray job, as of any other
    shown = air("logs", job_id, "--node", "1")
    assert shown.returncode == 0, shown.stderr
    assert "node 1 rank 2 world 4 sum 6" in shown.stdout
    assert "node 0 rank" not in shown.stdout
    details = air("get", "run", job_id)
    assert "ray" in details.stdout and "127.0.0.1" in details.stdout


def test_a_shape_the_cluster_cannot_hold_is_refused_at_once(env):
    spec = write(
        env.tmp,
        "big.yaml",
        "experiment_name: too-big\ncompute: {num_nodes: 4, accelerator_type: CPU, "
        "backend: ray}\ncommand: 'true'\n",
    )
    result = air("run", str(spec), cwd=env.tmp)
    assert result.returncode == 4, result.stderr
    assert "Not enough Ray nodes: this workload needs 4 nodes with 1 CPU each" in result.stderr
    assert f"has {env.cluster.size} nodes: 127.0.0.1 (2 CPU, 2 GPU)" in result.stderr
    assert not env.store.path.exists() or env.store.count_jobs() == 0


SLEEPER = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(f"node {os.environ['NODE_RANK']} attempt {os.environ['JUPYTER_AIR_ATTEMPT']} ready",
      flush=True)
if os.environ["JUPYTER_AIR_ATTEMPT"] != "1":
    sys.exit(0)
time.sleep(600)
"""


def test_cancel_stops_every_process_on_every_node(env):
    write(env.tmp, "sleeper.py", SLEEPER)
    job_id = submit(
        env, "cancel", "compute: {num_nodes: 2, accelerator_type: CPU, backend: ray}\n",
        f"{PY} sleeper.py",
    )  # fmt: skip
    wait_until(lambda: len(_ready(env, job_id)) == 2, 120, "both nodes to run")
    assert len(job_processes(job_id)) >= 4  # each node's command and its child
    started = time.monotonic()
    result = air("cancel", job_id)
    took = time.monotonic() - started
    assert result.returncode == 0, result.stderr
    job = env.store.get_job(job_id)
    assert job.status == "CANCELLED"
    assert job_processes(job_id) == []  # nothing left on any node when cancel returns
    assert took < 60, took


def test_a_lost_node_fails_the_attempt_and_the_retry_runs_on_the_nodes_left(env):
    env.cluster.ensure(3)  # two nodes for the retry once one is lost
    write(env.tmp, "sleeper.py", SLEEPER)
    job_id = submit(
        env, "lost", "compute: {num_nodes: 2, accelerator_type: CPU, backend: ray}\n"
        "max_retries: 1\n", f"{PY} sleeper.py",
    )  # fmt: skip
    wait_until(lambda: len(_ready(env, job_id)) == 2, 120, "both nodes to run")
    nodes = env.store.get_job(job_id).attempts[0].nodes
    victim = next(n for n in nodes if n.machine in env.cluster.workers)  # not the head
    env.cluster.kill(victim.machine)  # the tests after this one need two nodes, not three
    job = wait_for(env.store, job_id, timeout=180)
    assert job.status == "SUCCEEDED", (job.reason, [a.reason for a in job.attempts])
    first, second = job.attempts
    assert first.status == "FAILED"
    host = socket.gethostname()  # the node's host name, then the address Ray knows for it
    assert first.reason.startswith(f"node {victim.node} (host {host} at 127.0.0.1, Ray node ")
    assert first.reason.endswith(") was lost"), first.reason
    assert victim.machine not in [n.machine for n in second.nodes]
    assert second.status == "SUCCEEDED"
    # the second attempt's command exits at once; the child it leaves is stopped at its end,
    # not after the log capture gave up waiting for the pipe the child holds open
    assert second.ended_at - max(n.started for n in second.nodes) < 10, second
    assert env.client.get_run(first.mlflow_run_id).info.status == "FAILED"
    wait_until(lambda: job_processes(job_id) == [], 30, "every process of the job to end")


def _ready(env, job_id: str) -> list[str]:
    found = []
    for node in (0, 1):
        try:
            page = query_logs(env.store, job_id, node=node)
        except Exception:
            continue
        found.extend(line.text for line in page.lines if line.text.endswith(" ready"))
    return found


def _logs(env, job_id: str) -> str:
    folder = Path(env.data) / "workloads" / "jobs" / job_id
    parts = []
    for path in sorted(folder.rglob("*.log")):
        parts.append(f"--- {path.name}\n{path.read_text()[-2000:]}")
    return "\n".join(parts)


@pytest.fixture
def air_config(tmp_path: Path) -> dict:
    return server_config(tmp_path / "data")


async def test_the_rest_api_serves_a_ray_jobs_logs(env, jp_fetch):
    # `python` is the Ray environment's on every node, whatever PATH the workload sets (a
    # raylet started as `.venv/bin/ray start`, the venv not active, would find the system one)
    job_id = submit(
        env, "rest", "compute: {num_nodes: 2, accelerator_type: CPU, backend: ray}\n"
        "max_retries: 0\nenv_variables: {PATH: /usr/bin:/bin}\n",
        "python -c \"import os, sys; print('from node', os.environ['NODE_RANK'], sys.executable)\"",
    )  # fmt: skip
    job = wait_for(env.store, job_id, timeout=120)
    assert job.status == "SUCCEEDED", (job.reason, _logs(env, job_id))
    for node in (0, 1):
        page = json.loads(
            (await jp_fetch("air", "api", "workloads", job_id, "logs", params={"node": node})).body
        )
        assert [line["text"] for line in page["lines"]] == [f"from node {node} {sys.executable}"]
    assert os.environ["RAY_ADDRESS"] == env.cluster.address
