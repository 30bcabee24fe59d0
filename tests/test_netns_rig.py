"""The rig of hosts that share nothing (tests/netns_rig.py): a real Ray cluster whose workers
have their own addresses and host names and do not see the Jupyter host's folders."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

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


def shipped(supervisor_log: str) -> list[int]:
    """The bytes of code sent to each node, as the supervisor's log says (0: already there)."""
    from jupyter_air.workloads.snapshot import size_text

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
    netns_rig: Rig, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its code travels through Ray (once per node: the second run sends nothing), each node
    runs in its own copy, the logs come home, and rank 0 reaches the embedded MLflow server."""
    from workloads_support import air_environment, wait_for, write

    from jupyter_air.workloads.logquery import query_logs
    from jupyter_air.workloads.paths import job_dir
    from jupyter_air.workloads.store import JobStore

    data = air_environment(monkeypatch, tmp_path, None)  # the embedded server, on the head
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    store = JobStore.for_data_dir(data)
    work = tmp_path / "work"
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
        done = netns_rig.run(netns_rig.head, [sys.executable, "-m", "jupyter_air.cli", "run",
                                              str(spec), "-o", "json"], cwd=str(work))  # fmt: skip
        job_id = json.loads(done.stdout)["id"]
        job = wait_for(store, job_id, timeout=240)
        took = time.monotonic() - began
        log = (job_dir(data, job_id) / "supervisor.log").read_text()
        nodes = [[li.text for li in query_logs(store, job_id, node=n).lines] for n in (0, 1)]
        assert job.status == "SUCCEEDED", "\n".join([str(job.reason), log, *nodes[0], *nodes[1]])
        results.append((job, log, took))

    for job, log, took in results:
        attempt = job.attempts[0]
        assert sorted(n.host for n in attempt.nodes) == [f"{SUBNET}.2", f"{SUBNET}.3"]
        for node in (0, 1):
            lines = [line.text for line in query_logs(store, job.id, node=node).lines]
            said = next(t for t in lines if t.startswith(f"node {node} on "))
            assert said.startswith(f"node {node} on air-w"), lines
            assert "in its own copy True, sees the submitted folder False" in said
            assert f"python {sys.executable}" in said  # the Ray environment's interpreter
        print(f"\n{job.id}: {took:.1f} s, code sent to the nodes: {shipped(log)} bytes")
    runs = [job.attempts[0].mlflow_run_id for job, _, _ in results]
    done = netns_rig.python(netns_rig.head, RUN_METRICS, str(data), *runs)
    for line in done.stdout.splitlines():  # rank 0's metric, logged from a worker host
        run = json.loads(line)
        assert run["metrics"]["answer"] == 42 and run["status"] == "FINISHED", run
    first, second = (shipped(log) for _, log, _ in results)
    assert all(size > 0 for size in first) and second == [0, 0]
