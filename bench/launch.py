"""`.distributed()` against bare `torchrun` on the same 2-rank hello world, and the time from an
interrupt to every rank gone.

1. Wall time of `hello.distributed()` (2 CPU ranks, gloo) from a warm Python process, with the
   MLflow run it records (embedded tracking server) and with `mlflow=False`, against
   `torchrun --standalone --nproc_per_node=2 hello.py` running the same function from a script.
   The three are measured alternately in one run; medians and ratios are printed.
2. Interrupt: a driver process runs a `.distributed()` call that sleeps; once both ranks run, it
   gets SIGINT (as Jupyter's interrupt button sends it); the time until the agent and both ranks
   are gone (checked by pid) is printed.

    python bench/launch.py [--runs 5] [--interrupts 3]

Prints figures, judges nothing (targets: ratio ≤ 1.1, interrupt < 3 s).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HELLO = """
import os

import torch.distributed as dist


def hello():
    dist.init_process_group("gloo")
    print(f"hello from rank {dist.get_rank()} of {dist.get_world_size()}", flush=True)
    dist.barrier()
    dist.destroy_process_group()
    return int(os.environ["RANK"])


if __name__ == "__main__":
    hello()
"""

DRIVER = """
from jupyter_air import distributed

@distributed(gpus=2, mlflow=False)
def sleeps():
    import time
    print("running", flush=True)
    time.sleep(600)

try:
    sleeps.distributed()
except KeyboardInterrupt:
    pass
"""


def load_hello(folder: Path):
    sys.path.insert(0, str(folder))
    spec = importlib.util.spec_from_file_location("bench_hello", folder / "bench_hello.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["bench_hello"] = module
    spec.loader.exec_module(module)
    return module.hello


def time_torchrun(script: Path) -> float:
    start = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node=2",
            str(script),
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return time.perf_counter() - start


def time_distributed(fn) -> float:
    start = time.perf_counter()
    devnull = open(os.devnull, "w")  # noqa: SIM115
    saved = sys.stdout, sys.stderr
    sys.stdout = sys.stderr = devnull  # the ranks' lines, as the cell would get them
    try:
        results = fn.distributed()
    finally:
        sys.stdout, sys.stderr = saved
        devnull.close()
    took = time.perf_counter() - start
    assert results == [0, 1], results
    return took


def start_mlflow(folder: Path, timeout_s: float = 150):
    """The embedded MLflow server of ``folder`` (its data in ``folder/mlflow``), once ready."""
    from jupyter_air.server.mlflow_process import READY, EmbeddedMlflow

    server = EmbeddedMlflow(folder / "mlflow", start_timeout_s=timeout_s)
    server.start()
    deadline = time.monotonic() + timeout_s
    while server.state != READY:
        if time.monotonic() > deadline:
            raise RuntimeError(f"MLflow did not start: {server.status()}")
        time.sleep(0.2)
    return server


def serve_mlflow(folder: Path):
    """``start_mlflow``, the server then used by this process and what it starts (its URI and
    token in the environment), their data folder in ``folder``."""
    print("starting an MLflow tracking server…", flush=True)
    server = start_mlflow(folder)
    os.environ.update(server.env())  # its URI and token
    os.environ["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    os.environ["JUPYTER_AIR_DATA_DIR"] = str(folder / "data")
    return server


def interrupt_once(folder: Path) -> float:
    from jupyter_air.launch.processes import RankProcess

    data = folder / f"data-{time.monotonic_ns()}"
    script = folder / "driver.py"
    script.write_text(textwrap.dedent(DRIVER))
    env = {**os.environ, "JUPYTER_AIR_DATA_DIR": str(data)}
    driver = subprocess.Popen(
        [sys.executable, str(script)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while True:
            runs = sorted((data / "runs").glob("*")) if (data / "runs").exists() else []
            logs = [runs[0] / "logs" / f"rank-{r}" / "stdout.log" for r in (0, 1)] if runs else []
            if logs and all(p.exists() and "running" in p.read_text() for p in logs):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("the ranks did not start")
            time.sleep(0.05)
        run_dir = runs[0]
        processes = []
        for path in [*run_dir.glob("pid-*.json"), run_dir / "agent.json"]:
            info = json.loads(path.read_text())
            processes.append(RankProcess(0, info["pid"], info["started"]))
        start = time.perf_counter()
        os.killpg(driver.pid, signal.SIGINT)
        while any(p.alive() for p in processes):
            if time.perf_counter() - start > 60:
                raise RuntimeError("processes left after 60 s")
            time.sleep(0.01)
        return time.perf_counter() - start
    finally:
        if driver.poll() is None:
            driver.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--interrupts", type=int, default=3)
    args = parser.parse_args()
    from jupyter_air import distributed

    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        script = folder / "bench_hello.py"
        script.write_text(HELLO)
        hello = load_hello(folder)
        server = serve_mlflow(folder)
        try:
            tracked = distributed(gpus=2)(hello)
            untracked = distributed(gpus=2, mlflow=False)(hello)
            # warm-up: one of each (imports, the experiment's creation, the OS file cache)
            time_torchrun(script), time_distributed(tracked), time_distributed(untracked)
            series: dict[str, list[float]] = {"torchrun": [], "mlflow": [], "no-mlflow": []}
            for i in range(args.runs):
                series["torchrun"].append(time_torchrun(script))
                series["mlflow"].append(time_distributed(tracked))
                series["no-mlflow"].append(time_distributed(untracked))
                print(
                    f"  round {i + 1}: torchrun {series['torchrun'][-1]:.2f} s, .distributed() "
                    f"{series['mlflow'][-1]:.2f} s (mlflow=False {series['no-mlflow'][-1]:.2f} s)",
                    flush=True,
                )
        finally:
            server.stop()
        peer = statistics.median(series["torchrun"])
        ours = statistics.median(series["mlflow"])
        bare = statistics.median(series["no-mlflow"])
        print(f"2-rank hello world, median of {args.runs} (alternated):")
        print(f"  torchrun --standalone --nproc_per_node=2   {peer:.2f} s")
        print(f"  .distributed() with its MLflow run        {ours:.2f} s  ratio {ours / peer:.2f}")
        print(f"  .distributed(), mlflow=False              {bare:.2f} s  ratio {bare / peer:.2f}")

        stops = [interrupt_once(folder) for _ in range(args.interrupts)]
        print(
            f"interrupt (SIGINT to the driver) → agent and 2 ranks gone: median "
            f"{statistics.median(stops):.2f} s, max {max(stops):.2f} s over {len(stops)}"
        )


if __name__ == "__main__":
    main()
