"""The cluster's queue under load: N job runs from two data folders (two Jupyter servers) on a Ray
cluster of two nodes on loopback that holds two of them at a time.

Each job run needs one node with both of its (fake) GPUs and runs a command of ``--hold`` seconds,
so all but two wait QUEUED. Printed: how many ended SUCCEEDED with exactly one attempt (none lost,
none started twice), how many started out of submission order, the most that ran at once, and
the time from an attempt's recorded end to the next queued attempt's recorded start (resources
free → the queued job run starting).

    python bench/ray_queue.py [--jobs 20] [--hold 10]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ray_workloads import LOOPBACK_ENV, air, start_cluster, stop_cluster

from jupyter_air.workloads.store import JobStore

HOLD = "import sys, time; time.sleep(float(sys.argv[1]))\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=20)
    parser.add_argument("--hold", type=float, default=10.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="air-bench-") as name:
        folder = Path(name) / "work"
        folder.mkdir()
        (folder / "hold.py").write_text(HOLD)
        os.environ.update(LOOPBACK_ENV)
        os.environ["JUPYTER_RUNTIME_DIR"] = str(Path(name) / "runtime")
        for variable in ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_TOKEN", "JUPYTER_AIR_CLUSTER"):
            os.environ.pop(variable, None)
        datas = [Path(name) / "data-a", Path(name) / "data-b"]
        print("starting a 2-node Ray cluster on loopback…", flush=True)
        temp = tempfile.mkdtemp(prefix="air-ray-", dir="/tmp")
        cluster, address = start_cluster(temp)
        os.environ["RAY_ADDRESS"] = address
        from jupyter_air.mlflow_server.control import ensure_running
        from jupyter_air.mlflow_server.records import mlflow_folder

        leases = [ensure_running(mlflow_folder(data), "the benchmark")[1] for data in datas]
        spec = folder / "job.yaml"
        spec.write_text(
            "experiment_name: bench-queue\ncompute: {num_nodes: 1, num_accelerators: 2, "
            f"accelerator_type: GPU, backend: ray}}\ncommand: {sys.executable} hold.py "
            f"{args.hold}\n"
        )
        try:
            submitted: list[tuple[int, str]] = []
            started = time.monotonic()
            for n in range(args.jobs):  # alternately from each data folder
                data = datas[n % 2]
                env = {**os.environ, "JUPYTER_AIR_DATA_DIR": str(data)}
                job_id = json.loads(air("run", str(spec), "-o", "json", cwd=folder, env=env))["id"]
                submitted.append((n % 2, job_id))
            stores = [JobStore.for_data_dir(data) for data in datas]
            deadline = time.monotonic() + 60 + args.jobs * (args.hold + 30)
            while True:
                jobs = [stores[s].get_job(job_id) for s, job_id in submitted]
                if all(job.finished for job in jobs) or time.monotonic() > deadline:
                    break
                time.sleep(0.5)
            took = time.monotonic() - started
        finally:
            for lease in leases:
                lease.release()
            stop_cluster(cluster)
    report(jobs, took)


def report(jobs: list, took: float) -> None:
    whole = [j for j in jobs if j.status == "SUCCEEDED" and len(j.attempts) == 1]
    print(f"{len(jobs)} job runs from 2 data folders, {took:.1f} s from the first `air run`")
    print(f"SUCCEEDED with exactly one attempt: {len(whole)} of {len(jobs)}")
    others = [(j.id, j.status, len(j.attempts), j.reason) for j in jobs if j not in whole]
    if others:
        print(f"the others: {others}")
    runs = [(j.submitted_at, j.attempts[0].started_at, j.attempts[0].ended_at) for j in whole]
    starts = [start for _, start, _ in sorted(runs)]
    out_of_order = sum(1 for a, b in itertools.pairwise(starts) if b < a)
    print(f"started out of submission order: {out_of_order}")
    events = sorted([(s, 1) for _, s, _ in runs] + [(e, -1) for _, _, e in runs])
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    print(f"most running at once: {most} (the cluster holds 2)")
    ends = sorted(e for _, _, e in runs)
    gaps = []
    for _, start, _ in runs:
        before = [e for e in ends if e <= start]
        if len(before) >= 1 and start - before[-1] < 60:
            gaps.append(start - before[-1])
    if gaps:
        gaps.sort()
        print(
            f"an attempt's end → the next queued attempt's start: median "
            f"{statistics.median(gaps):.2f} s, max {gaps[-1]:.2f} s ({len(gaps)} starts)"
        )


if __name__ == "__main__":
    main()
