"""The rig of hosts that share nothing (tests/netns_rig.py): a real Ray cluster whose workers
have their own addresses and host names and do not see the Jupyter host's folders."""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from netns_rig import SUBNET, Rig

# the rig starts within the first test: its timeout covers that too
pytestmark = [pytest.mark.ray, pytest.mark.timeout(900)]

ON_EACH_WORKER = """
import json, os, socket, sys, ray
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy
ray.init(address="auto", log_to_driver=False, logging_level="ERROR")
secret = sys.argv[1]

@ray.remote(num_cpus=1)
def look(path):
    return {"host": socket.gethostname(), "ip": ray.util.get_node_ip_address(),
            "sees": os.path.exists(path)}

workers = [n for n in ray.nodes() if n["Alive"] and n["Resources"].get("CPU")]
refs = [look.options(scheduling_strategy=NodeAffinitySchedulingStrategy(n["NodeID"], soft=False))
        .remote(secret) for n in workers]
for answer in ray.get(refs, timeout=120):
    print(json.dumps(answer))
"""


def test_hosts_share_nothing_but_the_network(netns_rig: Rig, tmp_path: Path) -> None:
    nodes = netns_rig.nodes()
    assert sorted(n["ip"] for n in nodes) == [f"{SUBNET}.{k}" for k in (1, 2, 3)]
    secret = tmp_path / "only-on-the-jupyter-host.txt"
    secret.write_text("the Jupyter host's work folder\n")

    done = netns_rig.python(netns_rig.head, ON_EACH_WORKER, str(secret))
    answers = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    assert sorted(a["host"] for a in answers) == ["air-w1", "air-w2"], done.stdout + done.stderr
    assert sorted(a["ip"] for a in answers) == [f"{SUBNET}.2", f"{SUBNET}.3"]
    assert not any(a["sees"] for a in answers), answers  # the Jupyter host's folder is its own


TRAIN = """
import os, socket, sys
print(f"node {os.environ['NODE_RANK']} on {socket.gethostname()} in its own copy "
      f"{os.getcwd() != os.environ['JUPYTER_AIR_WORKING_DIR']}, sees the submitted folder "
      f"{os.path.exists(os.environ['JUPYTER_AIR_WORKING_DIR'])}, python {sys.executable}",
      flush=True)
if os.environ["NODE_RANK"] == "0":
    import mlflow
    mlflow.log_metric("answer", 42)
"""

RUN_METRICS = """
import json, os, sys
import mlflow
from jupyter_air.mlflow_server.control import ensure_running, wait_ready
from jupyter_air.mlflow_server.records import mlflow_folder
endpoint, lease = ensure_running(mlflow_folder(sys.argv[1]), "the test")  # up again, if need be
assert wait_ready(endpoint), "the embedded MLflow server did not start again"
os.environ["MLFLOW_TRACKING_TOKEN"] = endpoint.token
for run_id in sys.argv[2:]:
    run = mlflow.MlflowClient(endpoint.url).get_run(run_id)
    print(json.dumps({"status": run.info.status, "metrics": run.data.metrics}))
lease.release()
"""


@dataclass
class HeadWorkloads:
    """Workloads submitted with ``air run`` on the head (the Jupyter host, its data folder and
    the embedded MLflow server there), from a folder only the head sees."""

    rig: Rig
    data: Path
    work: Path

    @property
    def store(self) -> Any:
        from jupyter_air.workloads.store import JobStore

        return JobStore.for_data_dir(self.data)

    def run(self, spec: Path, timeout: float = 300.0) -> tuple[Any, str, list[list[str]]]:
        """Submit ``spec``; the job run once it SUCCEEDED, its supervisor's log, each node's
        lines (all shown when it did not succeed)."""
        from workloads_support import wait_for

        from jupyter_air.logs.query import query_logs
        from jupyter_air.workloads.paths import job_dir

        command = [sys.executable, "-m", "jupyter_air.cli", "run", str(spec), "-o", "json"]
        done = self.rig.run(self.rig.head, command, cwd=str(self.work))
        job_id = json.loads(done.stdout)["id"]
        job = wait_for(self.store, job_id, timeout=timeout)
        log = (job_dir(self.data, job_id) / "supervisor.log").read_text()
        nodes = [[li.text for li in query_logs(self.store, job_id, node=n).lines] for n in (0, 1)]
        assert job.status == "SUCCEEDED", "\n".join([str(job.reason), log, *nodes[0], *nodes[1]])
        return job, log, nodes

    def metrics(self, *run_ids: str) -> list[dict[str, Any]]:
        """Each run's status and metrics, asked of the embedded MLflow server on the head."""
        done = self.rig.python(self.rig.head, RUN_METRICS, str(self.data), *run_ids)
        return [json.loads(line) for line in done.stdout.splitlines()]


@pytest.fixture
def head_workloads(
    netns_rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> HeadWorkloads:
    from workloads_support import air_environment

    data = air_environment(monkeypatch, tmp_path, None)  # the embedded server, on the head
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    return HeadWorkloads(netns_rig, data, tmp_path / "work")


def shipped(supervisor_log: str) -> list[int]:
    """The bytes of code sent to each node, as the supervisor's log says (0: already there)."""
    from jupyter_air.rendering import size_text

    line = next(t for t in supervisor_log.splitlines() if "code snapshot" in t)
    sizes = []
    for part in line.split(": ", 2)[-1].split("; "):
        text = part.split("): ", 1)[1]
        sizes.append(0 if text == "already there" else _bytes(text.removesuffix(" sent")))
    assert all(size_text(s) in line for s in sizes if s)
    return sizes


def _bytes(text: str) -> int:
    number, unit = text.split()
    return int(float(number) * {"B": 1, "KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30}[unit])


def test_a_workload_whose_folder_is_only_on_the_head_runs_on_both_workers(
    head_workloads: HeadWorkloads,
) -> None:
    """Its code travels through Ray (once per node: the second run sends nothing), each node
    runs in its own copy, the logs come home, and rank 0 reaches the embedded MLflow server."""
    from workloads_support import write

    work = head_workloads.work
    write(work, "train.py", TRAIN)
    spec = write(
        work,
        "job.yaml",
        "experiment_name: rig\ncompute: {num_nodes: 2, accelerator_type: CPU, backend: ray}\n"
        "command: python train.py\n",
    )
    results = []
    for _ in range(2):  # the same code twice
        began = time.monotonic()
        job, log, nodes = head_workloads.run(spec)
        results.append((job, log, nodes, time.monotonic() - began))

    for job, log, nodes, took in results:
        attempt = job.attempts[0]
        assert sorted(n.host for n in attempt.nodes) == [f"{SUBNET}.2", f"{SUBNET}.3"]
        for node in (0, 1):
            said = next(t for t in nodes[node] if t.startswith(f"node {node} on "))
            assert said.startswith(f"node {node} on air-w"), nodes[node]
            assert "in its own copy True, sees the submitted folder False" in said
            assert f"python {sys.executable}" in said  # the Ray environment's interpreter
        print(f"\n{job.id}: {took:.1f} s, code sent to the nodes: {shipped(log)} bytes")
    runs = head_workloads.metrics(*(job.attempts[0].mlflow_run_id for job, *_ in results))
    for run in runs:  # rank 0's metric, logged from a worker host
        assert run["metrics"]["answer"] == 42 and run["status"] == "FINISHED", run
    first, second = (shipped(log) for _, log, _, _ in results)
    assert all(size > 0 for size in first) and second == [0, 0]


DDP = """
import os, socket
import torch, torch.distributed as dist
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
value = torch.tensor([float(rank + 1)])
dist.all_reduce(value)
print(f"node {os.environ['NODE_RANK']} rank {rank} world {world} sum {value.item():g} "
      f"on {socket.gethostname()} master {os.environ['MASTER_ADDR']}", flush=True)
if rank == 0:
    import mlflow
    mlflow.log_metric("world_size", world)
dist.destroy_process_group()
"""


def test_a_two_node_torchrun_workload_meets_on_the_cluster_addresses(
    head_workloads: HeadWorkloads,
) -> None:
    """The ranks meet on the addresses Ray knows for the nodes (the hosts' names resolve to
    nothing here), though the workload's folder is only on the head."""
    from workloads_support import write

    work = head_workloads.work
    write(work, "train.py", DDP)
    spec = write(
        work,
        "ddp.yaml",
        "experiment_name: rig-ddp\ncompute: {num_nodes: 2, accelerator_type: CPU, backend: ray}\n"
        "command: python -m torch.distributed.run --nproc_per_node=1 train.py\n",
    )
    job, _, nodes = head_workloads.run(spec)
    master = job.attempts[0].nodes[0].host
    assert master in (f"{SUBNET}.2", f"{SUBNET}.3")
    for node in (0, 1):
        said = [t for t in nodes[node] if t.startswith(f"node {node} rank ")]
        assert len(said) == 1 and "world 2 sum 3 on air-w" in said[0], nodes[node]
        assert said[0].endswith(f"master {master}")  # node 0's cluster address
    (run,) = head_workloads.metrics(job.attempts[0].mlflow_run_id)
    assert run["metrics"]["world_size"] == 2 and run["status"] == "FINISHED", run
