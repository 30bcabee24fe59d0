"""``@distributed(nodes=2)`` on the real 3-node Ray cluster on loopback (tests/ray_cluster.py):
from a notebook, 2 nodes x 2 ranks all-reduce across nodes, 4 values in global rank order, every
rank's lines prefixed with its node, one MLflow run with system metrics sampled on each node;
rank 3 raising is what the cell raises, naming node 1 rank 3; an interrupt or the kernel dying
leaves no process of the call on any node."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest
from jupyter_client.manager import KernelManager
from launch_support import run_dirs, start_driver
from nbclient import NotebookClient
from tracking_support import streams, use_server

from jupyter_air.tracking.display import MIME_TYPE

pytestmark = pytest.mark.timeout(600)  # the first test also starts the cluster

ANSI = re.compile(r"\x1b\[[0-9;]*m")

CELLS = [
    "from jupyter_air import distributed\nimport os",
    """@distributed(gpus=2, nodes=2)
def allreduce():
    import torch, torch.distributed as dist

    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    total = torch.tensor([float(rank)])
    dist.all_reduce(total)
    print(f"rank {rank} of {world} sum {total.item():g} gpus {os.environ['CUDA_VISIBLE_DEVICES']}")
    if rank == 0:
        import mlflow, time
        mlflow.log_metric("world", world)
        time.sleep(2)  # a system-metrics sample on each node
    dist.destroy_process_group()
    return rank, total.item()

results = allreduce.distributed()
print("results", results)""",
    """@distributed(gpus=2, nodes=2, mlflow=False, grace_period=2)
def broken():
    import time
    if os.environ["RANK"] == "3":
        raise ValueError("rank 3 is broken")
    time.sleep(60)

broken.distributed()""",
]


@pytest.fixture
def cluster_env(ray_cluster, mlflow_server, monkeypatch, tmp_path):
    use_server(monkeypatch, mlflow_server.url)
    ray_cluster.use(monkeypatch)
    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("JUPYTER_AIR_SYSTEM_METRICS_INTERVAL_S", "1")
    monkeypatch.setenv("PATH", os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    yield ray_cluster
    from workloads_support import end_standbys_of

    from jupyter_air.workloads.store import JobStore

    end_standbys_of(JobStore.for_data_dir(tmp_path / "data"))  # a remote call's job run left one


def calls_processes() -> list[int]:
    """Pids of the processes a `.distributed()` call started on the cluster's nodes."""
    import psutil

    found = []
    for process in psutil.process_iter(["pid"]):
        try:
            env = process.environ()
            # a call's node process (PET_NNODES: the node contract), not a one-machine call's
            # rank that another test runs at the same time
            if env.get("JUPYTER_AIR_GROUP", "").startswith("call-") and "PET_NNODES" in env:
                found.append(process.pid)
        except (psutil.Error, OSError):
            continue
    return found


def test_two_nodes_from_a_notebook(cluster_env, tmp_path):
    import mlflow

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    nb.cells[2].metadata["tags"] = ["raises-exception"]
    km = KernelManager(
        kernel_name="python3", connection_file=str(tmp_path / f"kernel-{uuid.uuid4()}.json")
    )
    client = NotebookClient(nb, km=km, timeout=240, resources={"metadata": {"path": str(tmp_path)}})
    try:
        client.execute()
    finally:  # a kernel manager given to nbclient is not shut down by it
        if km.has_kernel:
            km.shutdown_kernel(now=True)

    call = nb.cells[1]
    errors = [o for o in call.outputs if o.output_type == "error"]
    assert not errors, ANSI.sub("", "\n".join(errors[0].traceback)) if errors else ""
    out = streams(call, "stdout")
    for rank in range(4):  # every rank's line, with its node: node k runs ranks 2k and 2k+1
        assert f"[node {rank // 2} rank {rank}] rank {rank} of 4 sum 6" in out, out
    assert "results [(0, 6.0), (1, 6.0), (2, 6.0), (3, 6.0)]" in out  # global rank order
    assert re.search(r"\[node 0 rank 0\] rank 0 of 4 sum 6 gpus \d,\d", out)  # Ray's GPUs

    (shown,) = [o for o in call.outputs if o.output_type == "display_data"]
    payload = shown["data"][MIME_TYPE]
    assert payload["status"] == "FINISHED"
    run = mlflow.MlflowClient().get_run(payload["run_id"])
    assert run.data.metrics["world"] == 4
    assert run.data.tags["jupyter_air.ranks"] == "2 nodes x 2 GPUs"
    for node in (0, 1):  # sampled on each node, by its actor
        assert any(k.startswith(f"system/node_{node}/") for k in run.data.metrics), sorted(
            run.data.metrics
        )

    (error,) = [o for o in nb.cells[2].outputs if o.output_type == "error"]
    assert error.ename == "ValueError" and error.evalue == "rank 3 is broken"
    text = ANSI.sub("", "\n".join(error.traceback))
    assert "node 1 rank 3 of 4 (host 127.0.0.1) raised" in text  # the rank, its node, its host
    assert 'raise ValueError("rank 3 is broken")' in text
    assert wait_gone(30) == []  # nothing of either call left on any node


# the interrupted call: one rank on each of two nodes
TWO_NODES = "gpus=1, nodes=2, grace_period=3, mlflow=False"


def wait_running(count: int, timeout_s: float = 120.0) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        found = calls_processes()
        if len(found) >= count:
            return found
        time.sleep(0.2)
    raise AssertionError(f"the call's processes did not start: {calls_processes()}")


def wait_gone(timeout_s: float) -> list[int]:
    deadline = time.monotonic() + timeout_s
    while calls_processes() and time.monotonic() < deadline:
        time.sleep(0.1)
    return calls_processes()


def wait_printed(data_dir: Path, timeout_s: float = 120.0) -> None:
    """Until each rank's log in the call's run folder has its "running"."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        run = next(iter(run_dirs(data_dir)), data_dir)
        logs = {rank: run / "logs" / f"rank-{rank}" / "stdout.log" for rank in (0, 1)}
        if all(p.exists() and f"rank {r} running" in p.read_text() for r, p in logs.items()):
            return
        time.sleep(0.1)
    raise AssertionError(f"the ranks' lines did not come home: {run_dirs(data_dir)}")


def test_an_interrupt_leaves_nothing_on_either_node(cluster_env, tmp_path):
    driver = start_driver(tmp_path, TWO_NODES)
    try:
        wait_running(6)  # per node: the keeper, the agent, its rank
        wait_printed(tmp_path / "data")  # the ranks printed
        os.killpg(driver.pid, signal.SIGINT)  # what Jupyter's interrupt does
        left = wait_gone(30)
        output, _ = driver.communicate(timeout=60)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    assert left == []
    assert driver.returncode == 130, output[-3000:]
    assert "KeyboardInterrupt reached the caller" in output
    assert "[node 1 rank 1] rank 1 running" in output


def test_a_dying_kernel_takes_its_ranks_on_every_node_with_it(cluster_env, tmp_path):
    driver = start_driver(tmp_path, TWO_NODES)
    try:
        wait_running(6)
        driver.kill()  # the kernel (the Ray driver) dies without a word
        driver.wait(10)
        assert wait_gone(60) == []  # Ray stops its actors; their keepers stop the commands
    finally:
        if driver.poll() is None:
            driver.kill()


PLANS = """
import json
from jupyter_air.backends.ray_backend import RayBackend
from jupyter_air.launch.cluster_plan import plan_cluster

backend = RayBackend()
answers = []
for gpus, nodes in ((None, 2), (1, 3), (4, 3), (1, 5)):
    try:
        plan = plan_cluster(gpus, nodes, backend)
        answers.append([plan.nodes, plan.nproc, plan.kind])
    except Exception as error:
        answers.append(str(error))
backend.close()
print(json.dumps(answers))
"""


def test_the_cluster_decides_the_gpus_per_node(cluster_env, tmp_path):
    cluster_env.ensure(3)  # the plans below ask for 3 nodes
    # in a process of its own, as a kernel is: Ray is not connected from the test process
    done = subprocess.run(
        [sys.executable, "-c", PLANS], capture_output=True, text=True, cwd=tmp_path, timeout=180
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    assert answers[0] == [2, 2, "gpu"]  # 2 fake GPUs on each node
    assert answers[1] == [3, 1, "gpu"]
    assert "3 Ray nodes with 4 GPUs each are needed" in answers[2]
    assert "it needs one Ray node per node of the call" in answers[3]


REMOTE = """
import os
from jupyter_air import distributed, job

@distributed(gpus=1, nodes=2, remote=True)
def where():
    import os, socket
    import torch, torch.distributed as dist

    dist.init_process_group("gloo")
    total = torch.tensor([1.0])
    dist.all_reduce(total)
    print("rank", os.environ["RANK"], "of", total.item(), flush=True)
    return int(os.environ["RANK"]), os.environ["NODE_RANK"], os.environ["JUPYTER_AIR_NODE_IP"]

results = where.distributed()
print("results", [r[:2] for r in results])
"""


def test_a_remote_call_runs_on_two_ray_nodes_and_brings_its_results_home(cluster_env, tmp_path):
    """The job run's nodes are Ray nodes; their folders (results included) come back."""
    from jupyter_air.workloads.store import JobStore

    script = tmp_path / "remote.py"
    script.write_text(REMOTE)
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, cwd=tmp_path, timeout=400
    )
    output = ANSI.sub("", done.stdout + done.stderr)
    assert done.returncode == 0, output[-4000:]
    assert "results [(0, '0'), (1, '1')]" in output
    assert "[node 1] [rank 1] rank 1 of 2.0" in output  # node 1's log, followed in the "cell"
    (job,) = JobStore.for_data_dir(tmp_path / "data").list_jobs()
    assert job.backend == "ray" and job.status == "SUCCEEDED"


KEPT = """
import json, os, time
import psutil
import ray
from jupyter_air import distributed

ray.init(address=os.environ["RAY_ADDRESS"], log_to_driver=False)
os.environ["JUPYTER_AIR_KEEP_RUNNERS_S"] = "3600"  # read when the kernel's calls end


def actor():
    # the node's runner: the owner its keeper watches, up the rank's parents; and its GPUs
    import psutil

    process = psutil.Process()
    while process is not None:
        argv = process.cmdline()
        if "jupyter_air.backends.keeper" in argv:
            return int(argv[argv.index("--owner") + 1]), os.environ["CUDA_VISIBLE_DEVICES"]
        process = process.parent()
    return None


def call(**options):
    results = distributed(gpus=1, nodes=2, mlflow=False, **options)(actor).distributed()
    return [pid for pid, _gpus in results], [gpus for _pid, gpus in results]


def runners():
    # this driver's node runners alive now: pid → Ray node (the GCS's actor table)
    from ray._private.state import actors

    job = ray.get_runtime_context().get_job_id()
    return {
        str(a["Pid"]): a["Address"]["NodeID"]
        for a in actors(actor_state_name="ALIVE").values()
        if a["ActorClassName"] == "NodeRunner" and a["JobID"] == job
    }


def held_workers(expected):
    # the Ray workers of this cluster (the session its runners are in) kept busy for the next
    # bundle task (their title is the task's), once ``expected`` of them run (bounded: a hold
    # starts after its call's bundle tasks)
    cluster = os.getsid(int(next(iter(runners()))))

    def found():
        pids = []
        for process in psutil.process_iter():
            try:
                title = " ".join(process.cmdline())
                if title.startswith("ray::stand_by") and os.getsid(process.pid) == cluster:
                    pids.append(process.pid)
            except (psutil.Error, OSError):
                pass
        return sorted(pids)

    deadline = time.monotonic() + 60
    while len(found()) != expected and time.monotonic() < deadline:
        time.sleep(0.1)
    return found()


def held():
    return sorted(
        p["name"] for p in ray.util.placement_group_table().values()
        if p["name"].startswith("jupyter-air-call-") and p["state"] != "REMOVED"
    )


from ray.util.placement_group import placement_group, remove_placement_group

answers = {}
answers["first"], answers["first_gpus"] = call()
answers["held_after_first"] = held()
answers["second"], _ = call(keep_nodes=0)
answers["held_after_zero"] = held()
answers["standing"] = runners()
# a worker of this driver held on each GPU node for the next bundle task; other work that takes
# every CPU of every node meanwhile (actors, as Ray Train's are) neither takes nor ends it
answers["held_workers"] = held_workers(2)
nodes = [n for n in ray.nodes() if n["Alive"]]
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy


@ray.remote(num_cpus=2)
class Busy:
    def pid(self):
        return os.getpid()


on = [NodeAffinitySchedulingStrategy(n["NodeID"], soft=False) for n in nodes]
busy = [Busy.options(scheduling_strategy=strategy).remote() for strategy in on]
answers["busy_pids"] = ray.get([b.pid.remote() for b in busy], timeout=120)
for b in busy:
    ray.kill(b)
answers["held_after_busy"] = held_workers(2)
answers["standing_again"] = runners()
answers["second_again"], _ = call(keep_nodes=0)  # its bundle tasks on the held workers
answers["runners_again"] = runners()
# another job holds the first GPU of every node: a call placed anew gets the other one
gpu_user = placement_group([{"CPU": 1, "GPU": 1}] * len(nodes), strategy="STRICT_SPREAD")
ray.get(gpu_user.ready(), timeout=60)
answers["third"], answers["third_gpus"] = call()
answers["held_kept"] = held()
answers["runners_third"] = runners()
remove_placement_group(gpu_user)
# another job needs every CPU of every node: what is kept makes way for it
other = placement_group([{"CPU": 2}] * len(nodes), strategy="STRICT_SPREAD")
started = time.monotonic()
ray.get(other.ready(), timeout=60)
answers["other_placed_s"] = time.monotonic() - started
answers["held_after_other"] = held()
remove_placement_group(other)
os.environ["JUPYTER_AIR_KEEP_RUNNERS_S"] = "1"
answers["standing_fourth"] = runners()
answers["fourth"], _ = call(keep_nodes=20)
answers["runners_fourth"] = runners()
answers["held_for_20_s"] = held()
deadline = time.monotonic() + 120
while held() and time.monotonic() < deadline:
    time.sleep(0.2)
answers["held_after_expiry"] = held()
# no call for KEEP_RUNNERS_S (1 s now): the runners end
deadline = time.monotonic() + 120
while any(psutil.pid_exists(pid) for pid in answers["fourth"]) and time.monotonic() < deadline:
    time.sleep(0.2)
answers["runners_after_idle"] = [psutil.pid_exists(pid) for pid in answers["fourth"]]
print(json.dumps(answers))
"""


def took_what_stood(pids: list[int], standing: dict, after: dict, said: str) -> None:
    """A call's runners (``pids``) are those that stood by (pid → Ray node) on its bundles'
    Ray nodes; a node with none got a new one; one runner per Ray node after."""
    for pid in map(str, pids):
        assert pid in standing or after[pid] not in standing.values(), said
    assert len(set(after.values())) == len(after), said


def test_a_call_s_nodes_are_kept_for_the_next_call_and_released_after(cluster_env, tmp_path):
    """The second call of a shape runs on the first's runners and placement; keep_nodes=0
    releases the placement at its end, and a call placed anew gets its own bundles (GPUs
    another job holds are not its) but the same runners, with no new Ray worker; what is kept
    makes way at once for another job that waits for the nodes, and goes when its time is up;
    the runners end once the kernel made no call for KEEP_RUNNERS_S."""
    script = tmp_path / "kept.py"
    script.write_text(KEPT)
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    answers = json.loads(done.stdout.strip().splitlines()[-1])
    said = done.stderr[-3000:]  # why a call's nodes were not kept, when they were not
    first, second, third = answers["first"], answers["second"], answers["third"]
    assert all(isinstance(pid, int) for pid in first) and len(set(first)) == 2  # 2 runners
    assert answers["first_gpus"] == ["0", "0"]  # the first GPU of each node's bundle
    assert second == first, said  # the kept placement and runners served the second call
    assert len(answers["held_after_first"]) == 1, said  # its placement group, kept
    assert answers["held_after_zero"] == []  # keep_nodes=0: released at the call's end
    # the placement released, its runners stand by; a call placed anew takes the one on each
    # Ray node its bundles land on (a node with none gets a new one)
    assert sorted(answers["standing"]) == sorted(map(str, first)), said
    held = answers["held_workers"]
    assert len(held) == 2 and not set(held) & set(answers["busy_pids"]), said
    assert answers["held_after_busy"] == held, said  # neither taken nor ended
    again = answers["second_again"]
    took_what_stood(again, answers["standing_again"], answers["runners_again"], said)
    took_what_stood(third, answers["standing"], answers["runners_third"], said)
    assert answers["third_gpus"] == ["1", "1"]  # GPU 0 of each node is the other job's
    assert len(answers["held_kept"]) == 1, said
    assert answers["other_placed_s"] < 20 and answers["held_after_other"] == []  # made way
    took_what_stood(answers["fourth"], answers["standing_fourth"], answers["runners_fourth"], said)
    # kept for its time (20 s: the call's return takes far less), then released by itself
    assert len(answers["held_for_20_s"]) == 1, said
    assert answers["held_after_expiry"] == []
    assert answers["runners_after_idle"] == [False, False]
    assert "kept up to 60 s for the next call" in done.stdout  # said once, in the output
    assert calls_processes() == []
