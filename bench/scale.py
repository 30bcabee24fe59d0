"""Each cost as a curve over the cluster's size: its figure at 1, 8, 64 and 512 nodes and how it
grows.

1. Node telemetry on the Jupyter server: a real Jupyter server, every node an agent thread of this
   process with the agent's own sender over the ``channel`` websocket, 8 GPUs per node
   (``telemetry_ingest.curve``): the server's CPU (% of one core, ms a report) and RSS per node.
2. The GPU panel's cluster overview (``GpuService.overview``, what ``GET air/api/gpu/nodes``
   answers), in this process: every node's report decoded and stored as the server does
   (``gpu_ingest.decode``, ``GpuService.ingest``; reports built by the real sampler over the pynvml
   fake), then the overview in full (first build and again) and as a delta after every node
   reported once more: raw and gzip bytes, the time to build it and how much of that time is on
   the event loop's thread (a big build is made in the loop's executor).
3. The supervision core's watch loop (``GroupSupervisor._monitor_workers``) over a group of N
   running nodes whose ``poll()`` answers at once and hooks that do nothing: process CPU per poll
   tick and per node, over a fixed number of ticks.
4. A job run's logs: one attempt with N nodes recorded in a job store, each node's log file
   written by ``LogWriter`` (2,000 lines): ``store.get_job`` (what ``air get run`` and the
   workload API read), the first page of node 0 (``query_logs``, what ``air logs`` and
   ``GET air/api/workloads/{id}/logs`` answer) and a text search through every node's file.

The growth is the log-log slope between the smallest and the largest size (cost ~ nodes^k; the
smallest size whose figure is above zero where one is not, as the server's CPU above the idle
server at 1 node can be), printed with the two sizes. The server's CPU is printed as measured and
above the idle server (a panel open, no agent); the other costs have no baseline, so their fixed
part flattens the slope at small sizes: flat (k < 0.2), sublinear (k < 0.9), linear
(0.9 to 1.1), superlinear (k > 1.1).

    python bench/scale.py [--sizes 1,8,64,512] [--seconds 20] [--quick] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import math
import shutil
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import telemetry_ingest  # noqa: E402  (bench/telemetry_ingest.py)

from jupyter_air.backends.base import GroupLaunch, NodeInfo, NodeState  # noqa: E402
from jupyter_air.backends.supervision import GroupSupervisor, Outcome  # noqa: E402
from jupyter_air.logs.logfile import LogWriter  # noqa: E402
from jupyter_air.logs.query import query_logs  # noqa: E402
from jupyter_air.server.gpu_ingest import decode  # noqa: E402
from jupyter_air.server.gpu_service import GpuService  # noqa: E402
from jupyter_air.workloads.paths import log_path, new_job_id  # noqa: E402
from jupyter_air.workloads.store import JobStore  # noqa: E402

GPUS = 8
LOG_LINES = 2_000


def growth(sizes: list[int], values: list[float]) -> tuple[float, str, str]:
    """The log-log slope between the smallest and the largest size with a figure above zero,
    its word, and the two sizes."""
    pairs = sorted((s, v) for s, v in zip(sizes, values, strict=True) if v > 0)
    if len(pairs) < 2 or pairs[0][0] == pairs[-1][0]:
        return math.nan, "n/a", ""
    (s0, v0), (s1, v1) = pairs[0], pairs[-1]
    k = math.log(v1 / v0) / math.log(s1 / s0)
    if k < 0.2:
        word = "flat"
    elif k < 0.9:
        word = "sublinear"
    elif k <= 1.1:
        word = "linear"
    else:
        word = "superlinear"
    return k, word, f"{s0}-{s1}"


def median_ms(fn: Callable[[], object], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


# 1. telemetry on the Jupyter server ------------------------------------------------------------
def telemetry(sizes: list[int], seconds: float) -> dict[str, Any]:
    result = telemetry_ingest.curve(sizes, ["channel"], GPUS, seconds)
    idle = result["idle_server_cpu_pct"]
    rows = {r["nodes"]: r for r in result["rows"]}
    return {
        "idle_server_cpu_pct": idle,
        "server_cpu_pct": {n: rows[n]["server_cpu_pct"] for n in sizes},
        "server_cpu_pct_above_idle": {n: rows[n]["server_cpu_pct"] - idle for n in sizes},
        "ms_cpu_per_report": {n: rows[n]["server_cpu_ms_per_report"] for n in sizes},
        "ms_cpu_per_report_above_idle": {
            n: rows[n]["server_cpu_ms_per_report_above_idle"] for n in sizes
        },
        "rss_kb_per_node": {n: rows[n]["rss_kb_per_node"] for n in sizes},
        "failed_reports": {n: rows[n]["failed"] for n in sizes},
    }


# 2. the cluster overview -----------------------------------------------------------------------
def overview(sizes: list[int], repeat: int) -> dict[str, Any]:
    out: dict[str, dict[int, float]] = {
        k: {}
        for k in (
            "full_raw_kb",
            "full_gzip_kb",
            "delta_raw_kb",
            "delta_gzip_kb",
            "full_first_ms",
            "full_first_loop_ms",
            "full_ms",
            "delta_ms",
            "delta_loop_ms",
            "ingest_ms_per_report",
        )
    }
    loop = asyncio.new_event_loop()

    def build(gpu: GpuService, since: float | None = None) -> tuple[str, float, float]:
        """The overview, the ms it took and the ms of it on the event loop's thread (the rest
        is off the loop: a big build is made in the loop's executor)."""
        start, cpu = time.perf_counter(), time.thread_time()
        text = loop.run_until_complete(gpu.overview(since))
        return text, (time.perf_counter() - start) * 1000, (time.thread_time() - cpu) * 1000

    try:
        for size in sizes:
            for key, value in overview_at(build, size, repeat).items():
                out[key][size] = value
    finally:
        loop.close()
    return out


def overview_at(
    build: Callable[..., tuple[str, float, float]], size: int, repeat: int
) -> dict[str, float]:
    out: dict[str, float] = {}
    gpu = GpuService(backend="simulated", simulated_gpus=GPUS)
    try:
        nodes = [telemetry_ingest.Node(f"gpu-node-{k:03d}", GPUS, "unused") for k in range(size)]
        now = time.time()
        for node in nodes:
            gpu.ingest(*decode(node.report([now - 10.0], info=True)))
        first, out["full_first_ms"], out["full_first_loop_ms"] = build(gpu)
        out["full_ms"] = median_ms(lambda: build(gpu), repeat)
        seen = json.loads(first)["now"]
        time.sleep(0.01)
        bodies = [node.report([time.time()]) for node in nodes]
        start = time.perf_counter()
        for body in bodies:  # every node reported once more (a panel's next poll)
            gpu.ingest(*decode(body))
        out["ingest_ms_per_report"] = (time.perf_counter() - start) * 1000 / size
        # the first delta encodes every changed node; the panel's poll sees that one
        delta, out["delta_ms"], out["delta_loop_ms"] = build(gpu, seen)
        full, _, _ = build(gpu)
        for name, text in (("full", full), ("delta", delta)):
            raw = text.encode()
            out[f"{name}_raw_kb"] = len(raw) / 1024
            out[f"{name}_gzip_kb"] = len(gzip.compress(raw, compresslevel=5)) / 1024
    finally:
        gpu.sampler.close()
    return out


# 3. the supervision core's watch loop ----------------------------------------------------------
class StillGroup:
    """N nodes that keep running until ``ticks`` polls were answered, then all exit 0."""

    backend = "bench"

    def __init__(self, size: int, ticks: int) -> None:
        self.nodes = [NodeInfo(node=k, host="127.0.0.1") for k in range(size)]
        self.running = [NodeState(node=k) for k in range(size)]
        self.done = [NodeState(node=k, exit_code=0) for k in range(size)]
        self.ticks = ticks
        self.polls = 0

    def poll(self) -> list[NodeState]:
        self.polls += 1
        return self.running if self.polls <= self.ticks else self.done

    def sync_logs(self, *, final: bool = False) -> None:
        pass

    def start_metrics(self, metrics: Any) -> Any:
        return metrics

    def finish_metrics(self) -> None:
        pass

    def stop(self, grace_s: float) -> None:
        pass

    def leftovers(self, grace_s: float) -> list[str]:
        return []

    def forget_checkpoints(self) -> None:
        pass

    def close(self) -> None:
        pass


class IdleHooks:
    def prepare(self, attempt: int) -> GroupLaunch:
        raise NotImplementedError  # the watch loop is driven directly

    def started(self, attempt: int, group: Any) -> None:
        pass

    def tick(self, attempt: int, group: Any) -> bool | None:
        return None

    def ended(self, attempt: int, group: Any, outcome: Outcome) -> None:
        pass


class NoBackend:
    name = "bench"

    def check(self, spec: Any) -> None:
        pass

    def start(self, launch: GroupLaunch) -> Any:
        raise NotImplementedError

    def close(self) -> None:
        pass


def supervision(sizes: list[int], ticks: int) -> dict[str, Any]:
    per_tick: dict[int, float] = {}
    per_node: dict[int, float] = {}
    wall: dict[int, float] = {}
    for size in sizes:
        supervisor = GroupSupervisor(
            NoBackend(),  # type: ignore[arg-type]
            IdleHooks(),
            max_restarts=0,
            grace_s=1.0,
            cancelled=threading.Event().is_set,
            cancel_reason=lambda: "cancelled",
            poll_s=0.001,
            tick_s=0.05,
        )
        group = StillGroup(size, ticks)
        cpu0, wall0 = time.process_time(), time.perf_counter()
        outcome = supervisor._monitor_workers(1, group)  # type: ignore[arg-type]
        cpu = time.process_time() - cpu0
        assert outcome.status == "SUCCEEDED", outcome.reason
        per_tick[size] = cpu / group.polls * 1e6
        per_node[size] = per_tick[size] / size
        wall[size] = time.perf_counter() - wall0
    return {"us_cpu_per_tick": per_tick, "us_cpu_per_tick_per_node": per_node, "wall_s": wall}


# 4. a job run's logs ---------------------------------------------------------------------------
def logs(sizes: list[int], repeat: int) -> dict[str, Any]:
    out: dict[str, dict[int, float]] = {
        k: {} for k in ("get_job_ms", "first_page_ms", "search_all_ms", "write_s")
    }
    for size in sizes:
        folder = Path(tempfile.mkdtemp(prefix="air-bench-"))
        try:
            for key, value in logs_at(folder, size, repeat).items():
                out[key][size] = value
        finally:
            shutil.rmtree(folder, ignore_errors=True)
    return out


def logs_at(folder: Path, size: int, repeat: int) -> dict[str, float]:
    """One attempt of ``size`` nodes in a store in ``folder``, each node's log file written."""
    out: dict[str, float] = {}
    store = JobStore.for_data_dir(folder)
    job_id = new_job_id()
    store.create_job(
        id=job_id,
        experiment_name="bench",
        run_name="bench",
        command="x",
        compute={"num_nodes": size},
        max_retries=0,
        spec={},
    )
    store.mark_running(job_id)
    store.start_attempt(job_id, 1)
    t0 = time.time() - LOG_LINES
    start = time.perf_counter()
    for node in range(size):
        store.set_node(
            job_id, 1, node, pid=10_000 + node, started=t0, gpus="0,1,2,3,4,5,6,7",
            host=f"gpu-node-{node:03d}",
        )  # fmt: skip
        with LogWriter(log_path(folder, job_id, 1, node)) as writer:
            for i in range(0, LOG_LINES, 100):
                lines = [
                    ("warning" if (i + j) % 500 == 7 else "info",
                     f"node {node} step {i + j} loss {1 / (i + j + 1):.6f} lr 0.0003 "
                     f"throughput {1000 + (i + j) % 977} samples/s"
                     + (" NaN detected" if (i + j) == 1234 else ""))
                    for j in range(100)
                ]  # fmt: skip
                writer.write("stdout", lines, t0 + i)
    out["write_s"] = time.perf_counter() - start
    out["get_job_ms"] = median_ms(lambda: store.get_job(job_id), repeat)
    out["first_page_ms"] = median_ms(lambda: query_logs(store, job_id), repeat)

    def search() -> None:
        job = store.get_job(job_id)
        found = sum(
            len(query_logs(store, job_id, node=n, q="nan detected", job=job).lines)
            for n in range(size)
        )
        assert found == size, found

    out["search_all_ms"] = median_ms(search, max(1, repeat // 4))
    return out


# output ----------------------------------------------------------------------------------------
COSTS: list[tuple[str, str, str, str]] = [
    # (part, key, label, format)
    ("telemetry", "server_cpu_pct", "server CPU, % of one core", "{:.2f}"),
    ("telemetry", "server_cpu_pct_above_idle", "  above the idle server", "{:.2f}"),
    ("telemetry", "ms_cpu_per_report", "server CPU a report, ms", "{:.2f}"),
    ("telemetry", "rss_kb_per_node", "server RSS per node, KB", "{:.1f}"),
    ("overview", "full_raw_kb", "overview, full: raw KB", "{:.1f}"),
    ("overview", "full_gzip_kb", "overview, full: gzip KB", "{:.1f}"),
    ("overview", "delta_raw_kb", "overview, delta: raw KB", "{:.1f}"),
    ("overview", "delta_gzip_kb", "overview, delta: gzip KB", "{:.1f}"),
    ("overview", "full_first_ms", "overview, full, first build: ms", "{:.2f}"),
    ("overview", "full_first_loop_ms", "  of which on the event loop: ms", "{:.2f}"),
    ("overview", "full_ms", "overview, full, again: ms", "{:.2f}"),
    ("overview", "delta_ms", "overview, delta: ms", "{:.2f}"),
    ("overview", "delta_loop_ms", "  of which on the event loop: ms", "{:.2f}"),
    ("overview", "ingest_ms_per_report", "ingest a report (decode + store): ms", "{:.3f}"),
    ("supervision", "us_cpu_per_tick", "watch loop: µs CPU a tick", "{:.1f}"),
    ("supervision", "us_cpu_per_tick_per_node", "watch loop: µs CPU a tick a node", "{:.3f}"),
    ("logs", "get_job_ms", "store.get_job: ms", "{:.2f}"),
    ("logs", "first_page_ms", "logs, first page of node 0: ms", "{:.2f}"),
    ("logs", "search_all_ms", "logs, text search of every node: ms", "{:.1f}"),
]
TITLES = {
    "telemetry": "Node telemetry on the Jupyter server (channel, 8 GPUs a node, a report / 10 s)",
    "overview": "The GPU panel's cluster overview (GpuService.overview, N nodes x 8 GPUs)",
    "supervision": "The supervision core's watch loop (GroupSupervisor._monitor_workers)",
    "logs": f"A job run's logs (one attempt, N nodes x {LOG_LINES:,} lines, query_logs)",
}


def report(results: dict[str, Any], sizes: list[int]) -> list[dict[str, Any]]:
    summary = []
    for part, title in TITLES.items():
        if part not in results:
            continue
        print(f"\n{title}")
        if part == "telemetry":
            print(f"  the idle server (a panel open, no agent): "
                  f"{results[part]['idle_server_cpu_pct']:.3f} % of one core")  # fmt: skip
        print("  " + f"{'nodes':<38}" + "".join(f"{n:>11}" for n in sizes) + "   growth (k)")
        for p, key, label, fmt in COSTS:
            if p != part:
                continue
            values = results[part][key]
            row = [values[n] for n in sizes]
            k, word, span = growth(sizes, row)
            cells = "".join(f"{fmt.format(v):>11}" for v in row)
            print(f"  {label:<38}{cells}   {k:5.2f} {word} ({span})")
            values_at = {str(n): v for n, v in zip(sizes, row, strict=True)}
            summary.append(
                {"cost": label.strip(), "part": part, "key": key, "k": k, "word": word,
                 "between": span, "values": values_at}
            )  # fmt: skip
    first, last = sizes[0], sizes[-1]
    print(
        f"\nSummary: each cost at {first} and {last} nodes; growth: the log-log slope between "
        "the sizes named"
    )
    for row in summary:
        a, b = row["values"][str(first)], row["values"][str(last)]
        k, word, span = row["k"], row["word"], row["between"]
        print(f"  {row['cost']:<40}{a:>11.3g}{b:>11.3g}   nodes^{k:.2f}  {word} ({span})")
    return summary


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default=None, help="default 1,8,64,512 (--quick: 1,8,64)")
    parser.add_argument("--seconds", type=float, default=None, help="telemetry window (20 s)")
    parser.add_argument("--quick", action="store_true", help="sizes 1,8,64, short windows")
    parser.add_argument(
        "--parts", default="telemetry,overview,supervision,logs", help="which costs to measure"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    sizes = sorted(
        {int(n) for n in (args.sizes or ("1,8,64" if args.quick else "1,8,64,512")).split(",")}
    )
    parts = [p for p in args.parts.split(",") if p]
    if not sizes or sizes[0] < 1 or sizes[-1] > 1024 or set(parts) - set(TITLES):
        parser.error(f"--sizes: 1 to 1024 nodes; --parts: {', '.join(TITLES)}")
    seconds = args.seconds if args.seconds is not None else (10.0 if args.quick else 20.0)
    ticks = 500 if args.quick else 2_000
    repeat = 5 if args.quick else 20

    started = time.perf_counter()
    results: dict[str, Any] = {}
    print(f"Each cost at {', '.join(map(str, sizes))} nodes")
    if "overview" in parts:
        results["overview"] = overview(sizes, repeat)
    if "supervision" in parts:
        results["supervision"] = supervision(sizes, ticks)
    if "logs" in parts:
        results["logs"] = logs(sizes, repeat)
    if "telemetry" in parts:
        print(f"Telemetry: a fresh Jupyter server per size, {seconds:g} s measured each")
        results["telemetry"] = telemetry(sizes, seconds)
    summary = report(results, sizes)
    elapsed = time.perf_counter() - started
    print(f"\n{elapsed:.0f} s in all")
    if args.json:
        print(json.dumps({"sizes": sizes, "seconds": elapsed, "results": results,
                          "growth": summary}, indent=2, default=str))  # fmt: skip


if __name__ == "__main__":
    main()
