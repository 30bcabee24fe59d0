"""Job store at scale: `air list runs` and `GET air/api/workloads` with many job runs.

Fills a data folder with N job runs of 10 attempts each (default 10,000 and 100,000: a team's
year of work), every attempt with one node and one log file, through the store's own schema,
then measures, each over several repeats (p50 and p95):

1. the store's query behind both (`JobStore.list_jobs(limit=50)` with attempts, and the count),
   in process;
2. `air list runs --all-status --all-users` as a user runs it (a new process each time); peer:
   the same interpreter starting and importing the CLI package and exiting (`python -c 'import
   jupyter_air.cli'`), so the ratio says what listing adds to starting the command;
3. `GET air/api/workloads?limit=50` on a real Jupyter server of that data folder (HTTP, token).

With ``--curve``, the same figures at 100 and 1,000 job runs first.

    python bench/store_scale.py [--jobs 10000] [--attempts 10] [--repeat 20] [--curve]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from server_process import free_port, stop_process, wait_ready  # bench/server_process.py

from jupyter_air.workloads.store import JobStore

PACKAGE = Path(__file__).resolve().parent.parent / "jupyter_air"
ATTEMPT_STATUSES = ("FAILED",) * 9 + ("SUCCEEDED",)


def fill(data: Path, jobs: int, attempts: int) -> JobStore:
    """``jobs`` ended job runs of ``attempts`` attempts each, written in one transaction."""
    store = JobStore.for_data_dir(data)
    now = time.time()
    user = os.environ.get("USER") or "root"
    job_rows = []
    attempt_rows = []
    node_rows = []
    log_rows = []
    for i in range(jobs):
        job_id = f"{i:012x}"
        submitted = now - (jobs - i) * 60.0
        job_rows.append(
            (
                job_id,
                "SUCCEEDED" if i % 7 else "FAILED",
                f"experiment-{i % 40}",
                f"run-{i}",
                "python train.py",
                json.dumps({"num_accelerators": 8, "accelerator_type": "H100", "num_nodes": 1}),
                attempts - 1,
                "{}",
                user,
                submitted,
                submitted + 1,
                submitted + 50,
            )
        )
        for k in range(1, attempts + 1):
            start = submitted + k
            attempt_rows.append(
                (job_id, k, ATTEMPT_STATUSES[(k - 1) % 10], secrets.token_hex(16), start, start + 1)
            )
            node_rows.append((job_id, k, 0, 1000 + k, start, "0,1,2,3,4,5,6,7", 0, start + 1))
            log_rows.append((job_id, k, 0, f"/nowhere/{job_id}/{k}/node-0.log", 100, 10, 1))
    with store._write() as conn:
        conn.executemany(
            "INSERT INTO jobs (id, status, experiment_name, run_name, command, compute, "
            "max_retries, spec, user, submitted_at, started_at, ended_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            job_rows,
        )
        conn.executemany(
            "INSERT INTO attempts (job_id, attempt, status, mlflow_run_id, started_at, ended_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            attempt_rows,
        )
        conn.executemany(
            "INSERT INTO nodes (job_id, attempt, node, pid, started, gpus, exit_code, ended_at) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            node_rows,
        )
        conn.executemany(
            "INSERT INTO log_files (job_id, attempt, node, path, bytes, lines, complete) "
            "VALUES (?, ?, ?, ?, ?, ?, ?)",
            log_rows,
        )
    return store


def percentiles(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return statistics.median(ordered) * 1000, p95 * 1000


def timed(fn, repeat: int) -> tuple[float, float]:
    fn()  # warm-up
    seconds = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        seconds.append(time.perf_counter() - start)
    return percentiles(seconds)


class Server:
    """A real Jupyter server with jupyter-air on the data folder (no GPU sampling, no MLflow)."""

    def __init__(self, data: Path, workdir: Path) -> None:
        self.port = free_port()
        self.token = secrets.token_hex(16)
        env = {**os.environ, "JUPYTER_AIR_DATA_DIR": str(data)}
        self.log = open(workdir / "server.log", "w")  # noqa: SIM115 - closed in stop()
        # fmt: off
        command = [
            sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
            f"--port={self.port}", "--ip=127.0.0.1", f"--ServerApp.root_dir={workdir}",
            f"--IdentityProvider.token={self.token}",
            "--ServerApp.jpserver_extensions={'jupyter_air': True}",
            f"--JupyterAir.data_dir={data}", "--JupyterAir.gpu_backend=none",
            "--JupyterAir.mlflow_embedded=False", "--JupyterAir.schedules=False",
        ]
        # fmt: on
        self.process = subprocess.Popen(
            command,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        if not wait_ready(self.process, lambda: self.get("api/status"), timeout_s=120):
            self.stop()
            raise SystemExit(f"the Jupyter server did not start: see {workdir / 'server.log'}")

    def get(self, path: str) -> bytes:
        request = urllib.request.Request(
            f"http://127.0.0.1:{self.port}/{path}",
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.read()

    def stop(self) -> None:
        stop_process(self.process, timeout_s=20)
        self.log.close()


def measure(jobs: int, attempts: int, repeat: int) -> dict[str, tuple[float, float]]:
    with tempfile.TemporaryDirectory(prefix="air-store-scale-") as tmp:
        data = Path(tmp, "air")
        started = time.perf_counter()
        store = fill(data, jobs, attempts)
        print(
            f"  filled {jobs:,} job runs, {jobs * attempts:,} attempts in "
            f"{time.perf_counter() - started:.1f} s ({store.path.stat().st_size / 2**20:.0f} MiB)"
        )
        figures = {
            "store list_jobs(50) + count": timed(
                lambda: (store.list_jobs(limit=50), store.count_jobs()), repeat
            )
        }
        # as a user's installation runs: with its bytecode cache (a machine that sets
        # PYTHONDONTWRITEBYTECODE would compile every module at every start)
        env = {**os.environ, "JUPYTER_AIR_DATA_DIR": str(data)}
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        compile_all = [sys.executable, "-m", "compileall", "-q", str(PACKAGE)]
        subprocess.run(compile_all, env=env, check=True)
        air = [sys.executable, "-m", "jupyter_air.cli", "list", "runs", "--all-status"]
        air += ["--all-users"]
        figures["air list runs (process)"] = timed(
            lambda: subprocess.run(air, env=env, check=True, capture_output=True), repeat
        )
        peer = [sys.executable, "-c", "import jupyter_air.cli"]
        figures["peer: start + import the CLI"] = timed(
            lambda: subprocess.run(peer, env=env, check=True, capture_output=True), repeat
        )
        server = Server(data, Path(tmp))
        try:
            figures["GET air/api/workloads?limit=50"] = timed(
                lambda: server.get("air/api/workloads?limit=50"), repeat
            )
        finally:
            server.stop()
        return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=10_000)
    parser.add_argument("--attempts", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--curve", action="store_true", help="also at 100 and 1,000 job runs")
    args = parser.parse_args()
    sizes = [100, 1_000, args.jobs] if args.curve else [args.jobs]
    results = {}
    for jobs in sizes:
        print(f"==> {jobs:,} job runs x {args.attempts} attempts")
        results[jobs] = measure(jobs, args.attempts, args.repeat)
        for name, (p50, p95) in results[jobs].items():
            print(f"  {name:<34} p50 {p50:7.1f} ms   p95 {p95:7.1f} ms")
    final = results[args.jobs]
    cli, peer = final["air list runs (process)"], final["peer: start + import the CLI"]
    print(
        f"air list runs: p95 {cli[1]:.0f} ms (target < 200 ms); listing adds "
        f"{cli[0] - peer[0]:.0f} ms to the command's start (p50 ratio {cli[0] / peer[0]:.2f}x)"
    )
    api = final["GET air/api/workloads?limit=50"]
    print(f"GET air/api/workloads: p95 {api[1]:.0f} ms (target < 200 ms)")


if __name__ == "__main__":
    main()
