"""The rig of hosts that share nothing (tests/netns_rig.py): a real Ray cluster whose workers
have their own addresses and host names and do not see the Jupyter host's folders."""

from __future__ import annotations

import hashlib
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
import os, socket, sys, time
print(f"stamp {time.time()}", flush=True)  # when the line is written, on this host's clock
time.sleep(1)
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
    client = mlflow.MlflowClient(endpoint.url)
    run = client.get_run(run_id)
    files = {f.path: f.file_size for f in client.list_artifacts(run_id, "checkpoints")}
    print(json.dumps({"status": run.info.status, "metrics": run.data.metrics,
                      "params": run.data.params, "checkpoints": files}))
lease.release()
"""


@dataclass
class HeadWorkloads:
    """Workloads submitted with ``air run`` on the head (the Jupyter host, its data folder and
    the embedded MLflow server there), from a folder only the head sees."""

    rig: Rig
    data: Path
    work: Path
    first_line_s: float | None = None  # the last run's node 1 first line → the Jupyter host

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
        self.first_line_s = self._first_line(job_id, timeout)
        job = wait_for(self.store, job_id, timeout=timeout)
        log = (job_dir(self.data, job_id) / "supervisor.log").read_text()
        nodes = [[li.text for li in query_logs(self.store, job_id, node=n).lines] for n in (0, 1)]
        assert job.status == "SUCCEEDED", "\n".join([str(job.reason), log, *nodes[0], *nodes[1]])
        return job, log, nodes

    def _first_line(self, job_id: str, timeout: float) -> float | None:
        """How long node 1's first line (``stamp <time it was written>``, the hosts share one
        clock) took to reach its log file on the Jupyter host; None for a command without it."""
        from jupyter_air.workloads.paths import log_path

        path = log_path(self.data, job_id, 1, 1)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            text = path.read_text(errors="replace") if path.exists() else ""
            if "stamp " in text:
                arrived = time.time()
                stamp = float(text.split("stamp ", 1)[1].split()[0])
                return arrived - stamp
            if self.store.get_job(job_id).status in ("SUCCEEDED", "FAILED", "CANCELLED"):
                return None
            time.sleep(0.02)
        return None

    def assert_no_ray_token(self) -> None:
        """The Ray cluster's token (token authentication is on, on the rig) is in no file of
        the data folder: not in a job's records, logs or spec, nor in the MLflow server's."""
        token = self.rig.token.encode()
        found = [
            str(path)
            for path in self.data.rglob("*")
            if path.is_file() and not path.is_symlink() and token in path.read_bytes()
        ]
        assert not found, f"the Ray token is in {found}"

    def submit(self, name: str, script: str, fields: str) -> str:
        """``air run`` on the head of a 1-node job running ``script`` (as ``name.py``) on a
        worker, with the YAML ``fields``; its id, at once."""
        from workloads_support import write

        write(self.work, f"{name}.py", script)
        spec = write(
            self.work,
            f"{name}.yaml",
            f"{fields}compute: {{num_nodes: 1, accelerator_type: CPU, backend: ray}}\n"
            f"command: python {name}.py\n",
        )
        command = [sys.executable, "-m", "jupyter_air.cli", "run", str(spec), "-o", "json"]
        return str(
            json.loads(self.rig.run(self.rig.head, command, cwd=str(self.work)).stdout)["id"]
        )

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
        latency = head_workloads.first_line_s  # a figure (a test never asks how fast)
        assert latency is not None, "node 1's first line never reached the Jupyter host"
        print(f"\nnode 1's first line reached the Jupyter host in {latency:.2f} s")

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
if rank == 0:  # a metric, a param and a checkpoint of 30 MB, through the relay
    import mlflow
    mlflow.log_metric("world_size", world)
    mlflow.log_param("nodes", os.environ["NNODES"])
    with open("model.pt", "wb") as file:
        file.write(os.urandom(30 << 20))
    mlflow.log_artifact("model.pt", "checkpoints")
    import hashlib
    digest = hashlib.sha256(os.environ["MLFLOW_TRACKING_TOKEN"].encode()).hexdigest()
    print(f"token {digest}", flush=True)
    try:  # the token opens this run only
        mlflow.search_runs(search_all_experiments=True)
        print("search allowed", flush=True)
    except Exception as error:
        print(f"search refused: {str(error)[:200]}", flush=True)
dist.destroy_process_group()
"""


def test_a_two_node_torchrun_workload_meets_on_the_cluster_addresses(
    head_workloads: HeadWorkloads,
) -> None:
    """The ranks meet on the addresses Ray knows for the nodes (the hosts' names resolve to
    nothing here), though the workload's folder is only on the head; rank 0's metric, param and
    a 30 MB checkpoint artifact reach the run through the relay of the embedded server."""
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
    assert run["params"] == {"nodes": "2"}
    from jupyter_air.mlflow_server.records import ServerFiles, mlflow_folder

    server = ServerFiles(mlflow_folder(head_workloads.data)).endpoint()
    assert server is not None
    given = next(t.split()[1] for t in nodes[0] if t.startswith("token "))
    assert given != hashlib.sha256(server.token.encode()).hexdigest()  # not the server's own
    assert any(t.startswith("search refused") and "opens run" in t for t in nodes[0]), nodes[0]
    assert run["checkpoints"] == {"checkpoints/model.pt": 30 << 20}  # whole, through the relay
    for node in (0, 1):  # each worker host's system metrics, through the relay
        assert any(m.startswith(f"system/node_{node}/") for m in run["metrics"]), run
    head_workloads.assert_no_ray_token()


NOTEBOOK = """
import json, os, sys
import nbformat
from nbclient import NotebookClient
from jupyter_air.mlflow_server.control import ensure_running, wait_ready
from jupyter_air.mlflow_server.records import mlflow_folder
# the kernel's MLflow as a Jupyter server gives it: the embedded server, with its token
endpoint, lease = ensure_running(mlflow_folder(sys.argv[2]), "the test")
assert wait_ready(endpoint), "the embedded MLflow server did not start"
os.environ.update(MLFLOW_TRACKING_URI=endpoint.url, MLFLOW_TRACKING_TOKEN=endpoint.token)
cells = [
    "import json, os\\nfrom jupyter_air import distributed\\nfrom helper import scale",
    '''@distributed(gpus=1, nodes=2)
def train(epochs):
    import os, pathlib, socket, time, torch, torch.distributed as dist
    run = os.environ.get("MLFLOW_RUN_ID")  # MLflow takes it away once the run is resumed
    saved = pathlib.Path(os.environ["JUPYTER_AIR_CHECKPOINT_DIR"]) / "epoch.txt"
    start = int(saved.read_text()) if saved.exists() else 0
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    total = torch.tensor([float(rank + 1)])
    dist.all_reduce(total)
    if rank == 0:
        import mlflow
        mlflow.log_metric("total", total.item())
        time.sleep(2)  # a system-metrics sample on each node
        saved.with_suffix(".tmp").write_text(str(start + epochs))
        saved.with_suffix(".tmp").replace(saved)
    dist.destroy_process_group()
    return {"rank": rank, "host": socket.gethostname(), "total": total.item(),
            "scaled": scale(rank), "run": run, "start": start}

print("RESULTS", json.dumps(train.distributed(3)))''',
    # the checkpoint came home from node 0's host; both nodes find it
    'print("RESUMED", json.dumps(train.distributed(2, resume=True)))',
]
nb = nbformat.v4.new_notebook()
nb.cells = [nbformat.v4.new_code_cell(source) for source in cells]
client = NotebookClient(nb, timeout=400, kernel_name="python3",
                        resources={"metadata": {"path": sys.argv[1]}})
try:
    client.execute()
finally:
    lease.release()
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            print(output.get("text") or output.get("evalue") or "", flush=True)
"""

HELPER = "def scale(rank):\n    return 10 * (rank + 1)\n"


def test_a_notebook_call_on_two_nodes_that_do_not_see_its_folder(
    head_workloads: HeadWorkloads,
) -> None:
    """``@distributed(nodes=2)`` from a notebook on the head: the call and the module beside
    the notebook reach both workers through Ray, both ranks' results come back, and rank 0's
    metric and each node's system metrics reach the call's run on the embedded server. What
    rank 0 saved in its node's $JUPYTER_AIR_CHECKPOINT_DIR comes home, and a call with
    ``resume=True`` finds it on both nodes."""
    from workloads_support import write

    work = head_workloads.work
    write(work, "helper.py", HELPER)
    rig = head_workloads.rig
    notebook = [sys.executable, "-c", NOTEBOOK, str(work), str(head_workloads.data)]
    done = rig.run(rig.head, notebook, timeout=480)
    line = next((t for t in done.stdout.splitlines() if t.startswith("RESULTS ")), None)
    assert line is not None, done.stdout + done.stderr
    results = json.loads(line.removeprefix("RESULTS "))
    assert [r["rank"] for r in results] == [0, 1]
    assert sorted(r["host"] for r in results) == ["air-w1", "air-w2"]
    assert [r["scaled"] for r in results] == [10, 20] and {r["total"] for r in results} == {3}
    (run,) = head_workloads.metrics(results[0]["run"])
    assert run["metrics"]["total"] == 3 and run["status"] == "FINISHED", run
    for node in (0, 1):
        assert any(m.startswith(f"system/node_{node}/") for m in run["metrics"]), run
    assert [r["start"] for r in results] == [0, 0]
    line = next((t for t in done.stdout.splitlines() if t.startswith("RESUMED ")), None)
    assert line is not None, done.stdout + done.stderr
    resumed = json.loads(line.removeprefix("RESUMED "))
    assert [(r["start"], r["run"]) for r in resumed] == [(3, results[0]["run"])] * 2
    home = head_workloads.data / "checkpoints" / results[0]["run"] / "node_0" / "epoch.txt"
    assert home.read_text() == "5"  # the resumed call's save, home too
    for worker in rig.workers:  # what the nodes' folders held is home: they are gone
        left = rig.run(worker, ["find", "/tmp/ray", "-path", "*jupyter-air-checkpoints/*",
                                "-type", "f"], check=False)  # fmt: skip
        assert left.stdout.strip() == "", (worker.name, left.stdout)
    head_workloads.assert_no_ray_token()


STEADY = """
import os, pathlib, socket, time
saved = pathlib.Path(os.environ["JUPYTER_AIR_CHECKPOINT_DIR"]) / "epoch.txt"
start = int(saved.read_text()) + 1 if saved.exists() else 0
attempt = os.environ["JUPYTER_AIR_ATTEMPT"]
print(f"attempt {attempt} on {socket.gethostname()} starts at epoch {start}", flush=True)
for epoch in range(start, start + (10_000 if attempt == "1" else 3)):  # until its host is cut
    if epoch % 20 == 0:  # a checkpoint every 10 s: it stays unchanged for two scans, and goes home
        partial = saved.with_name(".epoch.txt.tmp")  # saved whole: a temporary name, renamed
        partial.write_text(str(epoch))
        partial.rename(saved)
        print(f"saved epoch {epoch}", flush=True)
    time.sleep(0.5)
"""


def test_a_host_cut_mid_attempt_fails_it_naming_the_host_and_the_retry_resumes_on_another(
    head_workloads: HeadWorkloads,
) -> None:
    """A worker's network cut while its attempt runs: the attempt fails within a bounded time,
    naming that host; the retry is placed on the worker that remains and resumes there from the
    checkpoint its node had saved in $JUPYTER_AIR_CHECKPOINT_DIR (brought home through Ray while
    the attempt ran), and succeeds."""
    from workloads_support import wait_for

    from jupyter_air.workloads.paths import checkpoint_home

    rig, store = head_workloads.rig, head_workloads.store
    job_id = head_workloads.submit("steady", STEADY, "experiment_name: rig-cut\nmax_retries: 1\n")
    home = checkpoint_home(head_workloads.data, job_id) / "node_0" / "epoch.txt"
    deadline = time.monotonic() + 240
    while not (home.exists() and int(home.read_text()) >= 20):  # home while it runs: twice
        assert time.monotonic() < deadline, f"no checkpoint came home: {_lines(store, job_id)}"
        time.sleep(0.5)
    before = int(home.read_text())  # home when the host is cut
    address = store.get_job(job_id).attempts[0].nodes[0].host
    (cut,) = [h for h in rig.workers if h.address == address]
    began = time.monotonic()
    rig.cut(cut)
    try:
        while (first := store.get_job(job_id).attempts[0]).status == "RUNNING":
            assert time.monotonic() - began < 180, "the attempt on the cut host did not end"
            time.sleep(0.5)
        failed_in = time.monotonic() - began
        job = wait_for(store, job_id, timeout=300)
    finally:
        rig.mend(cut)
    print(f"\nattempt on the cut host {cut.name} failed {failed_in:.1f} s after the cut")
    assert first.status == "FAILED" and cut.name in (first.reason or ""), first.reason
    assert job.status == "SUCCEEDED" and len(job.attempts) == 2, (job.status, job.reason)
    (other,) = [h for h in rig.workers if h is not cut]
    retry = job.attempts[1]
    assert retry.nodes[0].host == other.address
    first_lines, lines = _lines(store, job_id, 1), _lines(store, job_id, 2)
    (said,) = [t for t in lines if t.startswith(f"attempt 2 on {other.name} starts at epoch ")]
    resumed = int(said.rsplit(" ", 1)[1])  # after the last epoch of attempt 1 that came home
    assert resumed > before and f"saved epoch {resumed - 1}" in first_lines, first_lines
    assert (retry.checkpoint or {}).get("restored", {}).get("attempt") == 1, retry.checkpoint


COUNT = """
import time
for i in range(400):
    print(f"line {i}", flush=True)
    time.sleep(0.05)
"""


def test_a_short_network_cut_loses_no_line_of_a_node(head_workloads: HeadWorkloads) -> None:
    """A worker's link down for 8 s while its command prints: the lines written meanwhile wait
    on the node and reach the Jupyter host when the link is back, every one, in order, and
    the attempt goes on to succeed (a cut shorter than Ray's and jupyter-air's patience)."""
    from workloads_support import wait_for

    rig, store = head_workloads.rig, head_workloads.store
    job_id = head_workloads.submit("count", COUNT, "experiment_name: rig-blip\n")
    deadline = time.monotonic() + 180
    while len(_lines(store, job_id)) < 20:  # the command runs, its lines arrive
        assert time.monotonic() < deadline, "no line arrived"
        time.sleep(0.2)
    address = store.get_job(job_id).attempts[0].nodes[0].host
    (host,) = [h for h in rig.workers if h.address == address]
    rig.cut(host)
    try:
        cut_at = len(_lines(store, job_id))
        time.sleep(8)
        during = len(_lines(store, job_id))
    finally:
        rig.reconnect(host)
    job = wait_for(store, job_id, timeout=180)
    assert job.status == "SUCCEEDED", job.reason
    # the link was down: of the ~160 lines written meanwhile, not even half came (at most what
    # was already on its way when it went down)
    assert during - cut_at < 80, (cut_at, during)
    assert _lines(store, job_id) == [f"line {i}" for i in range(400)]


def _lines(store: Any, job_id: str, attempt: int | None = None) -> list[str]:
    """Node 0's lines of ``attempt`` (the latest by default)."""
    from jupyter_air.logs.query import query_logs

    return [line.text for line in query_logs(store, job_id, attempt=attempt).lines]


def test_the_gpu_panel_of_a_server_on_localhost_lists_every_worker_host(
    netns_rig: Rig, tmp_path: Path
) -> None:
    """JupyterLab's server on the head, listening on its loopback only (as ``jupyter lab`` does),
    names the rig's cluster: an agent on every Ray node, whose reports come over Ray (the
    workers cannot reach the server), and the GPU panel's overview lists both worker hosts."""
    from workloads_support import JupyterServer, wait_until

    def answers(server: JupyterServer) -> bool:
        try:
            return server.get("air/api/gpu")[0] == 200
        except OSError:
            return False

    server = JupyterServer(
        tmp_path,
        tmp_path / "air",
        extra=("--ServerApp.ip=127.0.0.1", "--JupyterAir.gpu_backend=simulated",
               f"--JupyterAir.cluster={netns_rig.address}", "--JupyterAir.mlflow_embedded=False",
               "--JupyterAir.gpu_poll_interval=1"),
        env=netns_rig.env(),
        ready=answers,
        on=netns_rig.head.argv,
    )  # fmt: skip
    server.start()
    try:
        seen: dict[str, Any] = {}

        def listed() -> bool:
            status, view = server.get("air/api/gpu/nodes")  # a panel asking: the agents sample
            assert status == 200, view
            seen.update({n["node"]: n for n in view["nodes"] if n["source"] == "agent"})
            if {"air-w1", "air-w2"} <= {n for n, v in seen.items() if v["gpus"]}:
                return True
            time.sleep(1)  # as a panel polls
            return False

        wait_until(listed, 180, "both worker hosts in the GPU panel's overview")
        for name in ("air-w1", "air-w2"):
            assert seen[name]["state"] == "live" and seen[name]["backend"] == "simulated"
        assert "air-head" not in seen  # the server's own node: the server samples it
    finally:
        server.stop()
        log = (tmp_path / "air" / "cluster-agents.log").read_text(errors="replace")
        print(f"\nthe cluster agents' log:\n{log[-1500:]}")
