"""GPU telemetry benchmarks: sample cost, poll-loop CPU overhead, API body time and size.

Prints figures (no pass/fail); targets from the design: a full 2 h history for 8 GPUs served in
< 20 ms and < 150 KB gzipped, a delta poll < 2 KB. The CPU overhead is compared, in the same run
and with the same sampler, against per-chart polling every 100 ms (the cadence nvdashboard uses,
with one loop per open chart).

    python bench/gpu_telemetry.py [--gpus 8] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_nvml import FakeGpu, FakeNvml

from jupyter_air.server.gpu_service import GpuService
from jupyter_air.telemetry import History, PollLoop, Sampler
from jupyter_air.telemetry.nvml import NvmlBackend
from jupyter_air.telemetry.simulated import SimulatedBackend


def per_call_us(fn, repeat: int) -> float:
    fn()  # warm up (starts the backend)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def sample_cost(gpus: int) -> dict:
    fake = FakeNvml([FakeGpu(uuid=f"GPU-{i}") for i in range(gpus)])
    fake_sampler = Sampler(NvmlBackend(nvml=fake), node="bench")
    sim_sampler = Sampler(SimulatedBackend(gpus, seed=0), node="bench")
    real = Sampler(NvmlBackend(), node="bench")
    real.sample()
    result = {
        "fake_nvml_us_per_gpu": per_call_us(fake_sampler.sample, 300) / gpus,
        "simulated_us_per_gpu": per_call_us(sim_sampler.sample, 300) / gpus,
        "host_only_us": per_call_us(Sampler(SimulatedBackend(0), node="b").sample, 300),
    }
    if real.info()["backend"] == "nvml":
        n = len(real.info()["devices"])
        result["real_nvml_us_per_gpu"] = per_call_us(real.sample, 50) / n
        result["real_gpus"] = n
    else:
        result["real_nvml"] = real.info()["reason"]
    return result


async def poll_cpu(gpus: int, interval_s: float, pollers: int, seconds: float) -> float:
    """CPU seconds per wall second (fraction of one core) of ``pollers`` loops."""
    loops = []
    for _ in range(pollers):
        sampler = Sampler(SimulatedBackend(gpus, seed=0), node="bench")
        loop = PollLoop(
            sampler.sample, History(7200, interval_s), interval_s=interval_s, idle_timeout_s=0
        )
        loop.start()
        loop.touch()
        loops.append(loop)
    await asyncio.sleep(0.3)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    await asyncio.sleep(seconds)
    cpu = time.process_time() - cpu0
    wall = time.perf_counter() - wall0
    for loop in loops:
        await loop.stop()
    return cpu / wall


async def api_bodies(gpus: int) -> dict:
    service = GpuService(backend="simulated", simulated_gpus=gpus, interval_s=10, history_s=7200)
    service.sampler.backend = SimulatedBackend(gpus, seed=0)
    start_t = time.time() - 7200 + 5
    clock_values = iter(start_t + 10 * i for i in range(720))
    service.sampler._clock = lambda: next(clock_values)  # 2 h at 10 s, ending now
    samples = [service.sampler.sample() for _ in range(720)]
    for sample in samples:
        service.history.append(sample)
    assert len(service.history) == 720, len(service.history)
    full_ms = []
    for _ in range(30):
        start = time.perf_counter()
        raw, _ = await service.body(service.payload(None), accept_gzip=False)
        full_ms.append((time.perf_counter() - start) * 1000)
    gz_ms = []
    for _ in range(30):
        start = time.perf_counter()
        gz, _ = await service.body(service.payload(None), accept_gzip=True)
        gz_ms.append((time.perf_counter() - start) * 1000)
    latest = service.history.latest()
    delta_raw = service.payload(since=latest.t - 1).encode()
    naive_ms = []
    for _ in range(10):  # what encoding the history at request time would cost
        start = time.perf_counter()
        json.dumps(samples)
        naive_ms.append((time.perf_counter() - start) * 1000)
    return {
        "history_samples": len(service.history),
        "full_raw_kb": len(raw) / 1024,
        "full_gzip_kb": len(gz) / 1024,
        "full_ms": statistics.median(full_ms),
        "full_gzip_ms": statistics.median(gz_ms),
        "reencode_each_request_ms": statistics.median(naive_ms),
        "delta_raw_kb": len(delta_raw) / 1024,
        "delta_gzip_kb": len(gzip.compress(delta_raw, 5)) / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()

    costs = sample_cost(args.gpus)
    # Our loop at 0.25 s, so that the window holds enough samples to measure; the cost at the
    # real 10 s interval is that per-sample cost times 0.1 samples per second (plus an idle
    # event loop, which costs nothing measurable).
    fast = asyncio.run(poll_cpu(args.gpus, 0.25, 1, args.seconds))
    ours = fast * 0.25 / 10.0
    # The same sampler at 100 ms, one loop per chart (3 charts: utilisation, memory, temp)
    peer = asyncio.run(poll_cpu(args.gpus, 0.1, 3, args.seconds))
    bodies = asyncio.run(api_bodies(args.gpus))
    figures = {
        "gpus": args.gpus,
        **costs,
        "poll_cpu_pct_10s_projected": ours * 100,
        "poll_cpu_pct_250ms": fast * 100,
        "per_chart_100ms_cpu_pct": peer * 100,
        "cpu_ratio_vs_per_chart_100ms": (peer / ours) if ours > 0 else float("inf"),
        **bodies,
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(f"GPU telemetry benchmark ({args.gpus} GPUs)")
    print(f"  sample cost, fake NVML (our code)  {costs['fake_nvml_us_per_gpu']:8.1f} us/GPU")
    print(f"  sample cost, simulated backend     {costs['simulated_us_per_gpu']:8.1f} us/GPU")
    print(f"  host metrics alone                 {costs['host_only_us']:8.1f} us/sample")
    if "real_nvml_us_per_gpu" in costs:
        print(f"  sample cost, real NVML             {costs['real_nvml_us_per_gpu']:8.1f} us/GPU")
    else:
        print(f"  sample cost, real NVML             n/a ({costs['real_nvml']})")
    print(f"  poll loop CPU, 0.25 s interval     {fast * 100:8.3f} % of one core (measured)")
    print(f"  poll loop CPU, 10 s interval       {ours * 100:8.4f} % of one core (projected)")
    print(f"  3 charts polling every 100 ms      {peer * 100:8.3f} % of one core")
    print(f"  -> ratio (100 ms per chart / ours) {figures['cpu_ratio_vs_per_chart_100ms']:8.0f} x")
    print(f"  full 2 h history: {bodies['history_samples']} samples")
    print(
        f"    body  {bodies['full_raw_kb']:7.1f} KB raw, {bodies['full_gzip_kb']:6.1f} KB gzip "
        f"(target < 150 KB)"
    )
    print(
        f"    server time {bodies['full_ms']:6.2f} ms raw, {bodies['full_gzip_ms']:6.2f} ms with "
        f"gzip (target < 20 ms); re-encoding per request would be "
        f"{bodies['reencode_each_request_ms']:.2f} ms"
    )
    print(
        f"  delta poll: {bodies['delta_raw_kb'] * 1024:.0f} B raw, "
        f"{bodies['delta_gzip_kb'] * 1024:.0f} B gzip (target < 2 KB)"
    )


if __name__ == "__main__":
    main()
