"""What a supervisor's MLflow calls cost in CPU, with jupyter-air's REST client against MLflow's
own: a fresh process (as a supervisor or ``air run`` is) finds or creates an experiment, creates a
run with tags, tags it, uploads a log file and ends the run, against a real MLflow server (the
embedded one, with its token). Prints CPU seconds (user + system, the process and its children)
and wall seconds per process, median of ``--repeat`` rounds, the two clients interleaved, and
the ratio.

    python bench/tracking_client.py --repeat 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

CALLS = """
import json, os, resource, sys, time
started = time.monotonic()
kind, uri, log = sys.argv[1:4]
if kind == "rest":
    from jupyter_air.tracking.rest import RestClient
    client = RestClient(uri)
else:
    from mlflow.tracking import MlflowClient
    client = MlflowClient(tracking_uri=uri)
from jupyter_air.tracking.experiments import get_or_create_experiment
experiment = get_or_create_experiment("bench-tracking-client", client=client)
run = client.create_run(experiment.experiment_id, tags={"jupyter_air.job": "bench", "k": "v"})
client.set_tag(run.info.run_id, "jupyter_air.reason", "exit code 0")
client.log_artifact(run.info.run_id, log, "logs/attempt_1")
client.set_terminated(run.info.run_id, "FINISHED")
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"cpu": usage.ru_utime + usage.ru_stime, "wall": time.monotonic() - started,
                  "mlflow": "mlflow" in sys.modules}))
"""


def one(kind: str, uri: str, token: str, log: Path) -> dict:
    env = {**os.environ, "MLFLOW_TRACKING_TOKEN": token}
    done = subprocess.run(
        [sys.executable, "-c", CALLS, kind, uri, str(log)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    from launch import start_mlflow  # bench/launch.py, next to this script

    with tempfile.TemporaryDirectory(prefix="air-bench-") as tmp:
        server = start_mlflow(Path(tmp), timeout_s=180)
        try:
            log = Path(tmp) / "node_0.log"
            log.write_text("a line of a training log\n" * 2000)
            results: dict[str, list[dict]] = {"rest": [], "mlflow": []}
            one("rest", server.url, server.token or "", log)  # warm the bytecode caches
            one("mlflow", server.url, server.token or "", log)
            for _ in range(args.repeat):
                for kind in results:
                    results[kind].append(one(kind, server.url, server.token or "", log))
        finally:
            server.stop()
    cpu = {k: statistics.median(r["cpu"] for r in v) for k, v in results.items()}
    wall = {k: statistics.median(r["wall"] for r in v) for k, v in results.items()}
    print(f"{'client':<28}{'CPU s':>8}{'wall s':>8}  imports mlflow")
    for kind, label in (("rest", "jupyter-air RestClient"), ("mlflow", "MLflow MlflowClient")):
        imported = any(r["mlflow"] for r in results[kind])
        print(f"{label:<28}{cpu[kind]:>8.2f}{wall[kind]:>8.2f}  {imported}")
    print(
        f"RestClient / MlflowClient: CPU {cpu['rest'] / cpu['mlflow']:.2f}x, "
        f"wall {wall['rest'] / wall['mlflow']:.2f}x (median of {args.repeat})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
