"""``.distributed(nodes=2)`` against Ray Train's ``TorchTrainer`` on a 2-node Ray cluster on
loopback: the same hello-world function (gloo process group, one all-reduce, each rank returns
its rank), 1 rank per node, alternated in one driver, ``--repeat`` times each: a call whose
nodes the call before kept (the default, ``keep_nodes``), a call that places its nodes anew
(``keep_nodes=0``, as every TorchTrainer run does) right after a TorchTrainer run, another one
right after it (a kernel's calls one after another: the runners and the driver's idle Ray
worker that the first left stand by), a ``TorchTrainer`` run.

Wall time per call, from the call to its results in the driver; medians and the ratio. A call
placed anew and a ``TorchTrainer`` run each start once the cluster has every CPU free again
(what the run before held is given back asynchronously). Both run
without an MLflow run (``mlflow=False``; a TorchTrainer run has none either), and both in a
driver already connected to the cluster, as a kernel is after its first call.

Then where the seconds of a call go, with kept nodes, placed anew after a call placed anew and
placed anew after a ``TorchTrainer`` run, from ``--repeat`` more such calls each: marks taken in
the kernel (the supervision core's steps), by each node's launcher agent (its outcome's start
and end) and by the ranks (entering the function, the gloo group formed, returning); the nodes
are this machine's, so one clock serves them all. Medians of each step.

    python bench/ray_distributed.py [--repeat 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))
from ray_cluster import LOOPBACK_ENV  # noqa: E402
from ray_workloads import start_cluster, stop_cluster  # noqa: E402

from jupyter_air.launch.kept_nodes import kept_nodes  # noqa: E402


def hello() -> int:
    import torch
    import torch.distributed as dist

    if not dist.is_initialized():  # TorchTrainer sets up the group itself
        dist.init_process_group("gloo")
    total = torch.tensor([1.0])
    dist.all_reduce(total)
    assert total.item() == dist.get_world_size()
    return dist.get_rank()


def timed_hello() -> dict[str, float]:
    """``hello``, telling when the rank entered it, had torch, had its process group and
    returned."""
    entered = time.time()
    import torch
    import torch.distributed as dist

    imported = time.time()
    dist.init_process_group("gloo")
    grouped = time.time()
    total = torch.tensor([1.0])
    dist.all_reduce(total)
    return {"entered": entered, "imported": imported, "grouped": grouped, "returned": time.time()}


def breakdown(
    repeat: int, keep_nodes: float | None = None, before: Callable[[], object] | None = None
) -> dict[str, float]:
    """Medians of the steps of ``repeat`` calls whose nodes the call before kept (or, with
    ``keep_nodes=0``, that place theirs anew), each after ``before()`` where given."""
    from jupyter_air import distributed
    from jupyter_air.backends.supervision import GroupSupervisor
    from jupyter_air.launch.cluster import ClusterLaunch

    marks: dict[str, Any] = {}

    def mark(cls: Any, name: str, key: str, after: bool = False) -> None:
        original = getattr(cls, name)

        def marked(self: Any, *args: Any, **kwargs: Any) -> Any:
            if not after:
                marks[key] = time.time()
            try:
                return original(self, *args, **kwargs)
            finally:
                if after:
                    marks[key] = time.time()
                if name == "ended":  # the agents' outcomes are home now
                    outcomes = [
                        self.run_dir.read_json(self.run_dir.path / f"outcome-node-{k}.json") or {}
                        for k in range(self.cluster.nodes)
                    ]
                    marks["agents"] = outcomes

        setattr(cls, name, marked)

    mark(ClusterLaunch, "prepare", "prepare")
    mark(ClusterLaunch, "started", "started")
    mark(GroupSupervisor, "_stop_workers", "noticed")
    mark(ClusterLaunch, "ended", "ended")
    mark(ClusterLaunch, "_release", "released", after=True)
    call = distributed(gpus=1, nodes=2, mlflow=False, keep_nodes=keep_nodes)(timed_hello)
    call.distributed()  # the nodes kept for the calls measured (or the imports, placed anew)
    steps: dict[str, list[float]] = {}
    for _ in range(repeat):
        if before is not None:
            before()
        if keep_nodes == 0:
            settle()
        marks.clear()
        began = time.time()
        ranks = call.distributed()
        back = time.time()
        agents = marks["agents"]
        agent_started = min(a["started"] for a in agents)
        agent_ended = max(a["ended"] for a in agents)
        entered = max(r["entered"] for r in ranks)
        imported = max(r["imported"] for r in ranks)
        grouped = max(r["grouped"] for r in ranks)
        returned = max(r["returned"] for r in ranks)
        for step, seconds in {
            "kernel: run folder and payload": marks["prepare"] - began,
            "nodes (anew: placement group, runners, bundles' GPUs) and their commands started": (
                marks["started"] - marks["prepare"]
            ),
            "launcher agent: interpreter and jupyter_air imports": agent_started - marks["started"],
            "agent → ranks in the function (elastic, rendezvous, interpreter, payload)": (
                entered - agent_started
            ),
            "import torch in the ranks": imported - entered,
            "gloo process group": grouped - imported,
            "all-reduce and return": returned - grouped,
            "ranks' results written and exit, agents end": agent_ended - returned,
            "kernel notices the end (poll)": marks["noticed"] - agent_ended,
            "stop check, last files home, nodes kept or released": (
                marks["released"] - marks["noticed"]
            ),
            "results to the caller": back - marks["released"],
            "whole call": back - began,
        }.items():
            steps.setdefault(step, []).append(seconds)
    return {step: statistics.median(times) for step, times in steps.items()}


def settle(timeout_s: float = 30.0) -> None:
    """Wait (bounded) until every CPU of the cluster is free again: what the call or run before
    held is given back asynchronously, and a call placed anew would otherwise wait for it."""
    import ray

    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if ray.available_resources().get("CPU", 0) >= ray.cluster_resources().get("CPU", 0):
            return
        time.sleep(0.05)


def run_ours(keep_nodes: float | None = None) -> list[int]:
    from jupyter_air import distributed

    call = distributed(gpus=1, nodes=2, mlflow=False, keep_nodes=keep_nodes)(hello)
    return call.distributed()


def run_ray_train(storage: str) -> list[int]:
    from ray.train import RunConfig, ScalingConfig
    from ray.train.torch import TorchTrainer

    def loop() -> None:
        import ray.train

        ray.train.report({"rank": hello()})

    trainer = TorchTrainer(
        loop,
        scaling_config=ScalingConfig(num_workers=2, use_gpu=False),
        run_config=RunConfig(storage_path=storage, name=f"hello-{time.monotonic_ns()}"),
    )
    result = trainer.fit()
    return [int(result.metrics["rank"])]  # rank 0's report, as Ray Train gives it


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    os.environ.update(LOOPBACK_ENV)
    os.environ.pop("RAY_ADDRESS", None)
    os.environ["RAY_TRAIN_V2_ENABLED"] = os.environ.get("RAY_TRAIN_V2_ENABLED", "0")
    temp = tempfile.mkdtemp(prefix="air-ray-", dir="/tmp")
    print("starting a 2-node Ray cluster on loopback…", flush=True)
    cluster, address = start_cluster(temp)
    os.environ["RAY_ADDRESS"] = address
    try:
        import ray

        ray.init(address=address, log_to_driver=False)
        with tempfile.TemporaryDirectory(prefix="air-bench-train-") as storage:
            assert run_ours() == [0, 1]  # warm both once: imports, worker processes
            kept_nodes().release()  # Ray Train gets the whole cluster, as ours does
            run_ray_train(storage)
            kept, cold, again, theirs = [], [], [], []
            for _ in range(args.repeat):
                kept_nodes().release()  # the cold call places its nodes anew
                settle()  # on a free cluster, as the TorchTrainer run starts
                started = time.perf_counter()
                assert run_ours(keep_nodes=0) == [0, 1]
                cold.append(time.perf_counter() - started)
                settle()
                started = time.perf_counter()  # anew again: the runners stood by
                assert run_ours(keep_nodes=0) == [0, 1]
                again.append(time.perf_counter() - started)
                assert run_ours() == [0, 1]  # a call before: its nodes are kept
                started = time.perf_counter()
                assert run_ours() == [0, 1]
                kept.append(time.perf_counter() - started)
                kept_nodes().release()
                settle()
                started = time.perf_counter()
                run_ray_train(storage)
                theirs.append(time.perf_counter() - started)
            kept_nodes().release()
            steps = breakdown(args.repeat)
            kept_nodes().release()
            anew = breakdown(args.repeat, keep_nodes=0)
            after_theirs = breakdown(
                args.repeat, keep_nodes=0, before=lambda: run_ray_train(storage)
            )
        ray.shutdown()
    finally:
        stop_cluster(cluster)
    a, c, b = statistics.median(kept), statistics.median(cold), statistics.median(theirs)
    d = statistics.median(again)

    def runs(times: list[float]) -> str:
        return ", ".join(f"{t:.2f}" for t in times)

    print(f"2 nodes x 1 rank, hello world with one all-reduce, {args.repeat} calls each, medians")
    print(f"  .distributed(nodes=2), the call before's nodes kept: {a:.2f} s  ({runs(kept)})")
    print(
        f"  .distributed(nodes=2, keep_nodes=0), placed anew after a TorchTrainer run: {c:.2f} s"
        f"  ({runs(cold)})"
    )
    print(
        f"  .distributed(nodes=2, keep_nodes=0), placed anew after a call placed anew: {d:.2f} s"
        f"  ({runs(again)})"
    )
    print(f"  TorchTrainer(num_workers=2): {b:.2f} s  (runs: {runs(theirs)})")
    print(f"  ratio .distributed / TorchTrainer: {a / b:.2f}x (target ≤ 0.2x)")
    print(
        f"  ratio .distributed(keep_nodes=0) / TorchTrainer: {c / b:.2f}x after a TorchTrainer "
        f"run, {d / b:.2f}x after a call placed anew (target ≤ 0.35x)"
    )
    print(
        f"where a call spends its time, medians of {args.repeat} calls: nodes kept / placed anew"
        " after a call placed anew / placed anew after a TorchTrainer run"
    )
    for step, seconds in steps.items():
        print(f"  {seconds:6.2f} s  {anew[step]:6.2f} s  {after_theirs[step]:6.2f} s  {step}")


if __name__ == "__main__":
    main()
