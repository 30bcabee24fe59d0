"""Workloads on a Ray cluster of two nodes on loopback, against the local backend in the same run.

1. From `air run` to the first line of node 1 in its log file on the Jupyter host, and how much
   of it `air run` itself took (the submission). jupyter-air's MLflow server runs throughout, as
   a Jupyter server keeps it: no figure includes its start. On Ray, twice: with the standby
   supervisor the job run before left (workloads/ray_standby.py), as a user's next job run finds
   it, and without one (ended first), as the first job run of a data folder starts.
2. Log throughput from a node: the command prints N lines as fast as it can; lines per second
   as they land in the host's log file (the Ray backend brings them from the node's file; the
   local one writes them there directly).
3. From `air cancel` to no process of the job left on any node (`air cancel` returns then).

Each measured alternately, local then Ray, `--repeat` times; medians and the Ray/local ratio.

    python bench/ray_workloads.py [--repeat 3] [--lines 200000] [--gpus 1]

``--gpus N``: the Ray job runs ask for N GPUs per node (the loopback cluster declares 2 per node,
so Ray hands out GPU ids and each attempt asks its bundles which); the local backend's stay CPU,
this machine having none.
"""

from __future__ import annotations

import argparse
import json
import os
import select
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))  # the loopback cluster the tests use
from ray_cluster import LOOPBACK_ENV  # noqa: E402

from jupyter_air.config import JOB_ID  # noqa: E402
from jupyter_air.pids import job_processes  # noqa: E402
from jupyter_air.workloads.store import JobStore  # noqa: E402

PRINTER = """
import os, sys, time
n = int(sys.argv[1])
out = sys.stdout
node = os.environ["NODE_RANK"]
for i in range(n):
    out.write(f"node {node} step {i} loss {1 / (i + 1):.6f} throughput {1000 + i % 977}/s\\n")
out.flush()
if len(sys.argv) > 2:
    time.sleep(600)
"""


def start_cluster(temp: str) -> tuple[subprocess.Popen[str], str]:
    env = {**os.environ, **LOOPBACK_ENV, "RAY_TMPDIR": temp}
    env.pop("RAY_ADDRESS", None)
    process = subprocess.Popen(
        [sys.executable, str(HERE.parent / "tests" / "ray_cluster.py"), "2"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,
    )
    ready, _, _ = select.select([process.stdout], [], [], 300)
    if not ready:
        stop_cluster(process)  # nothing of a cluster that did not start is left running
        raise RuntimeError(f"the Ray cluster did not start in 300 s (its logs: {temp})")
    assert process.stdout is not None
    return process, json.loads(process.stdout.readline())["address"]


def stop_cluster(process: subprocess.Popen[str]) -> None:
    try:
        assert process.stdin is not None
        process.stdin.write("quit\n")
        process.stdin.flush()
        process.wait(timeout=60)
    except Exception:
        pass
    for proc in psutil.process_iter():
        try:
            if os.getsid(proc.pid) == process.pid:
                proc.kill()
        except (psutil.Error, OSError):
            continue


def air(*args: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """``air ARGS`` in ``cwd`` (``env``: its environment, default this process's); stdout."""
    result = subprocess.run(
        [sys.executable, "-m", "jupyter_air.cli", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=300,
        env=env,
    )
    if result.returncode != 0:
        raise RuntimeError(f"air {' '.join(args)}: {result.stderr}")
    return result.stdout


GPUS = 0  # per node, Ray only (--gpus): the loopback cluster declares 2 per node


def submit(folder: Path, backend: str, command: str) -> str:
    spec = folder / f"{backend}-{time.monotonic_ns()}.yaml"
    shape = f"num_accelerators: {GPUS}" if GPUS and backend == "ray" else "accelerator_type: CPU"
    spec.write_text(
        f"experiment_name: bench-{backend}\n"
        f"compute: {{num_nodes: 2, {shape}, backend: {backend}}}\n"
        f"command: {command}\n"
    )
    return json.loads(air("run", str(spec), "-o", "json", cwd=folder))["id"]


def log_file(store: JobStore, job_id: str, node: int) -> Path:
    from jupyter_air.workloads.paths import log_path

    return log_path(store.data_dir, job_id, 1, node)


def wait_lines(path: Path, count: int, timeout: float = 300.0) -> float:
    """When the file has ``count`` lines (polled); the time."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(path, "rb") as file:
                if sum(block.count(b"\n") for block in iter(lambda: file.read(1 << 20), b"")) >= (
                    count
                ):
                    return time.monotonic()
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    raise RuntimeError(f"{path} did not get {count} lines in {timeout} s")


def first_line(store: JobStore, folder: Path, backend: str) -> tuple[float, float]:
    """(seconds to the first line, seconds `air run` took)"""
    started = time.monotonic()
    job_id = submit(folder, backend, f"{sys.executable} printer.py 1")
    submitted = time.monotonic() - started
    wait_lines(log_file(store, job_id, 1), 1)
    took = time.monotonic() - started
    wait_done(store, job_id)
    return took, submitted


def throughput(store: JobStore, folder: Path, backend: str, lines: int) -> float:
    job_id = submit(folder, backend, f"{sys.executable} printer.py {lines}")
    path = log_file(store, job_id, 1)
    first = wait_lines(path, 1)
    last = wait_lines(path, lines)
    wait_done(store, job_id)
    return lines / max(last - first, 1e-6)


def cancel(store: JobStore, folder: Path, backend: str) -> float:
    job_id = submit(folder, backend, f"{sys.executable} printer.py 1 sleep")
    for node in (0, 1):
        wait_lines(log_file(store, job_id, node), 1)
    started = time.monotonic()
    air("cancel", job_id, cwd=folder)
    while job_processes(job_id, JOB_ID.name):
        time.sleep(0.01)
    return time.monotonic() - started


def settled(data: Path) -> int:
    """Wait until the standby the last Ray job run left is ready (bounded), so that no figure
    shares the machine with its start; its pid."""
    from jupyter_air.pids import is_running
    from jupyter_air.workloads.ray_standby import standby_folder

    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for path in standby_folder(data).glob("*.json"):
            offer = json.loads(path.read_text())
            if is_running(offer["pid"], offer["started"]):
                return int(offer["pid"])
        time.sleep(0.05)
    raise RuntimeError("no standby supervisor was ready within 120 s")


def without_standby(data: Path) -> None:
    """Every standby of the data folder ended, and gone."""
    from jupyter_air.pids import is_running
    from jupyter_air.workloads.ray_standby import end_standbys

    pids = end_standbys(data)
    deadline = time.monotonic() + 60
    while any(is_running(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)


def wait_done(store: JobStore, job_id: str) -> None:
    deadline = time.monotonic() + 300
    while store.get_job(job_id).status not in ("SUCCEEDED", "FAILED", "CANCELLED"):
        if time.monotonic() > deadline:
            raise RuntimeError(f"job {job_id} did not end")
        time.sleep(0.1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--lines", type=int, default=200_000)
    parser.add_argument(
        "--gpus",
        type=int,
        default=0,
        help="GPUs per node of the Ray job runs (the local backend's stay CPU: none here)",
    )
    args = parser.parse_args()
    global GPUS
    GPUS = args.gpus
    with tempfile.TemporaryDirectory(prefix="air-bench-") as name:
        folder = Path(name)
        (folder / "printer.py").write_text(PRINTER)
        os.environ.update(LOOPBACK_ENV)
        os.environ["JUPYTER_AIR_DATA_DIR"] = str(folder / "data")
        os.environ["JUPYTER_RUNTIME_DIR"] = str(folder / "runtime")
        os.environ["JUPYTER_AIR_KILL_GRACE_S"] = "3"
        for variable in ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_TOKEN", "JUPYTER_AIR_CLUSTER"):
            os.environ.pop(variable, None)
        print("starting a 2-node Ray cluster on loopback…", flush=True)
        temp = tempfile.mkdtemp(prefix="air-ray-", dir="/tmp")
        cluster, address = start_cluster(temp)
        os.environ["RAY_ADDRESS"] = address
        store = JobStore.for_data_dir(folder / "data")
        from jupyter_air.mlflow_server.control import ensure_running, leave
        from jupyter_air.mlflow_server.records import mlflow_folder

        _, lease = ensure_running(mlflow_folder(folder / "data"), "the benchmark")
        try:
            data = folder / "data"
            for backend in ("local", "ray"):  # warms what the first job run pays
                wait_done(store, submit(folder, backend, "'true'"))
            figures: dict[str, dict[str, list[float]]] = {}
            cold: dict[str, list[float]] = {"first": [], "submit": []}
            for _ in range(args.repeat):
                for backend in ("local", "ray"):
                    row = figures.setdefault(
                        backend, {"first": [], "submit": [], "rate": [], "cancel": []}
                    )
                    settled(data)
                    first, submitted = first_line(store, folder, backend)
                    row["first"].append(first)
                    row["submit"].append(submitted)
                settled(data)
                without_standby(data)
                first, submitted = first_line(store, folder, "ray")
                cold["first"].append(first)
                cold["submit"].append(submitted)
                for backend in ("local", "ray"):
                    settled(data)
                    figures[backend]["rate"].append(throughput(store, folder, backend, args.lines))
                for backend in ("local", "ray"):
                    settled(data)
                    figures[backend]["cancel"].append(cancel(store, folder, backend))
            memory = psutil.Process(settled(data)).memory_full_info()
            without_standby(data)
        finally:
            leave(mlflow_folder(folder / "data"), lease)
            stop_cluster(cluster)
    med = {b: {k: statistics.median(v) for k, v in row.items()} for b, row in figures.items()}
    print(f"2 nodes, {args.repeat} runs each, medians (Ray / local)")
    print(
        f"  air run → first line of node 1 on the host: local {med['local']['first']:.2f} s, "
        f"ray {med['ray']['first']:.2f} s ({med['ray']['first'] / med['local']['first']:.2f}x)"
    )
    print(
        f"    of which air run itself: local {med['local']['submit']:.2f} s, "
        f"ray {med['ray']['submit']:.2f} s (it asks the standby for the cluster's nodes)"
    )
    print(
        f"    the standby waiting, on the Jupyter host: RSS {memory.rss / 2**20:.0f} MiB, "
        f"USS {memory.uss / 2**20:.0f} MiB (its runners: one Ray worker per node)"
    )
    first, submitted = statistics.median(cold["first"]), statistics.median(cold["submit"])
    print(
        f"  the same without a standby supervisor (a data folder's first Ray job run): "
        f"{first:.2f} s ({first / med['local']['first']:.2f}x), air run {submitted:.2f} s"
    )
    print(
        f"  log throughput from node 1 ({args.lines:,} lines): local "
        f"{med['local']['rate']:,.0f} lines/s, ray {med['ray']['rate']:,.0f} lines/s "
        f"({med['ray']['rate'] / med['local']['rate']:.2f}x)"
    )
    print(
        f"  air cancel → no process left on any node: local {med['local']['cancel']:.2f} s, "
        f"ray {med['ray']['cancel']:.2f} s ({med['ray']['cancel'] / med['local']['cancel']:.2f}x)"
    )


if __name__ == "__main__":
    main()
