"""Checks `@distributed` and workloads on a machine with NVIDIA GPUs (what CPU tests cannot).

1. `.distributed()` with every visible GPU and NCCL: one rank per GPU, each on its own device
   (`LOCAL_RANK`), an all-reduce gives the right sum, every value comes back in rank order, and
   the call's MLflow run has per-node GPU system metrics (`system/node_0/gpu_0_…`); on Linux the
   ranks are forks of the launcher agent and CUDA works in them (the agent never initialised it).
2. Asking for one GPU more than exist fails before anything starts, saying what exists.
3. A workload with `num_accelerators: 1` sees exactly one GPU (`CUDA_VISIBLE_DEVICES`, torch);
   one asking for more GPUs than exist is refused at submission.

Without a GPU it runs the same checks on 2 CPU ranks (gloo) and skips what needs a GPU, so the
script itself is checked anywhere. Starts its own MLflow tracking server in a temporary folder.

    python bench/gpu_launch_check.py

Exits non-zero when a check fails; prints what it saw.
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

PROBLEMS: list[str] = []


def check(ok: bool, what: str) -> None:
    print(f"  {'ok  ' if ok else 'FAIL'} {what}", flush=True)
    if not ok:
        PROBLEMS.append(what)


def gpu_count() -> int:
    try:
        import torch

        return torch.cuda.device_count()
    except Exception:
        return 0


def check_distributed(gpus: int, tracking_uri: str) -> None:
    from jupyter_air import distributed
    from mlflow import MlflowClient

    cuda = gpus > 0
    ranks = gpus if cuda else 2

    @distributed(gpus=None if cuda else 2)
    def all_reduce(hold_s: float):
        import os
        import time

        import psutil
        import torch
        import torch.distributed as dist

        local = int(os.environ["LOCAL_RANK"])
        if cuda:
            torch.cuda.set_device(local)
            device = torch.device("cuda", local)
        else:
            device = torch.device("cpu")
        dist.init_process_group("nccl" if cuda else "gloo")
        value = torch.tensor([float(dist.get_rank() + 1)], device=device)
        dist.all_reduce(value)
        time.sleep(hold_s)  # long enough for a system metrics sample
        dist.destroy_process_group()
        return {
            "rank": int(os.environ["RANK"]),
            "sum": value.item(),
            "device": str(device),
            "uuid": str(torch.cuda.get_device_properties(local).uuid) if cuda else None,
            "run_id": os.environ.get("MLFLOW_RUN_ID"),
            "command": " ".join(psutil.Process().cmdline()),
        }

    print(f"1. .distributed() on {ranks} {'GPU' if cuda else 'CPU'} ranks", flush=True)
    started = time.perf_counter()
    results = all_reduce.distributed(15.0)
    print(f"  took {time.perf_counter() - started:.1f} s", flush=True)
    check(len(results) == ranks, f"{ranks} results (got {len(results)})")
    check([r["rank"] for r in results] == list(range(ranks)), "results in rank order")
    expected = ranks * (ranks + 1) / 2
    check(all(r["sum"] == expected for r in results), f"all-reduce sums to {expected:g}")
    if cuda:
        devices = {r["uuid"] for r in results}
        check(len(devices) == ranks, f"each rank on its own GPU ({sorted(devices)})")
    if sys.platform == "linux":
        forked = all("jupyter_air.launch.agent" in r["command"] for r in results)
        check(forked, "ranks forked from the launcher agent (torch imported once)")
    run_ids = {r["run_id"] for r in results}
    check(len(run_ids) == 1 and None not in run_ids, "every rank shares one MLflow run")
    run = MlflowClient(tracking_uri).get_run(run_ids.pop())
    check(run.info.status == "FINISHED", f"the run is FINISHED (got {run.info.status})")
    metrics = sorted(run.data.metrics)
    system = [m for m in metrics if m.startswith("system/node_0/")]
    check(bool(system), f"per-node system metrics ({len(system)} names)")
    if cuda:
        gpu = [m for m in system if "/gpu_" in m]
        check(bool(gpu), f"GPU system metrics: {', '.join(gpu[:4]) or 'none'}")


def check_too_many(gpus: int) -> None:
    from jupyter_air import distributed

    print("2. asking for one GPU more than exist", flush=True)
    if not gpus:
        print("  skipped: no GPU here (the CPU path takes any number of ranks)", flush=True)
        return

    @distributed(gpus=gpus + 1)
    def nothing():
        return 0

    try:
        nothing.distributed()
    except Exception as error:
        check(str(gpus) in str(error), f"refused: {type(error).__name__}: {error}")
    else:
        check(False, "refused")


def check_workloads(gpus: int, folder: Path) -> None:
    from jupyter_air.backends.base import CapacityError
    from jupyter_air.workloads import load_spec, query_logs, submit
    from jupyter_air.workloads.jobs import open_store, refresh
    from jupyter_air.workloads.store import TERMINAL

    print("3. workloads", flush=True)
    store = open_store(folder / "data")
    accelerator = "GPU" if gpus else "CPU"
    probe = (
        f"{sys.executable} -c \"import os, torch; print('visible', "
        "os.environ.get('CUDA_VISIBLE_DEVICES'), torch.cuda.device_count(), flush=True)\""
    )
    text = (
        "experiment_name: gpu-launch-check\n"
        f"compute: {{num_accelerators: 1, accelerator_type: {accelerator}}}\n"
        f"command: {probe}\n"
    )
    job = submit(load_spec(text, base_dir=folder), store=store, spec_yaml=text)
    deadline = time.monotonic() + 120
    while job.status not in TERMINAL and time.monotonic() < deadline:
        time.sleep(0.5)
        job = refresh(store, store.get_job(job.id))
    check(job.status == "SUCCEEDED", f"a 1-GPU workload succeeded (got {job.status})")
    lines = [line.text for line in query_logs(store, job.id, q="visible").lines]
    print(f"  it saw: {lines}", flush=True)
    if gpus:
        check(
            bool(lines) and lines[0].split()[-1] == "1",
            "it sees exactly one GPU (torch.cuda.device_count() == 1)",
        )
        too_many = text.replace("num_accelerators: 1", f"num_accelerators: {gpus + 1}")
        try:
            submit(load_spec(too_many, base_dir=folder), store=store, spec_yaml=too_many)
        except CapacityError as error:
            check(True, f"{gpus + 1} GPUs refused: {error}")
        else:
            check(False, f"{gpus + 1} GPUs refused")


def main() -> int:
    gpus = gpu_count()
    print(f"GPUs visible to torch: {gpus}" + ("" if gpus else " (checking the CPU path only)"))
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        from launch import serve_mlflow  # bench/launch.py, next to this script

        server = serve_mlflow(folder)
        try:
            check_distributed(gpus, server.url)
            check_too_many(gpus)
            check_workloads(gpus, folder)
        finally:
            server.stop()
    if PROBLEMS:
        print(f"{len(PROBLEMS)} check(s) failed: {'; '.join(PROBLEMS)}")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
