"""Checks jupyter-air's NVML readings against nvidia-smi on a machine with NVIDIA GPUs.

Prints, per GPU and metric, our value, nvidia-smi's and the difference, and exits non-zero when a
difference is beyond what sampling a second apart explains. Also checks that GPU processes
nvidia-smi lists appear in our sample with their memory.

    python bench/gpu_check.py
"""

from __future__ import annotations

import csv
import io
import shutil
import subprocess
import sys

from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.nvml import NvmlBackend

FIELDS = [
    ("uuid", "uuid", None),
    ("utilization.gpu", "util_pct", 25.0),  # utilisation moves between two reads
    ("utilization.memory", "mem_util_pct", 25.0),
    ("memory.used", "mem_used_mb", 64.0),
    ("memory.total", "mem_total_mb", 1.0),
    ("temperature.gpu", "temp_c", 3.0),
    ("power.draw", "power_w", 0.2),  # relative
    ("power.limit", "power_limit_w", 1.0),
]


def smi(query: str, kind: str = "gpu") -> list[list[str]]:
    out = subprocess.run(
        ["nvidia-smi", f"--query-{kind}={query}", "--format=csv,noheader,nounits"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [[c.strip() for c in row] for row in csv.reader(io.StringIO(out)) if row]


def number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # "[N/A]", "[Not Supported]"
        return None


def main() -> int:
    if shutil.which("nvidia-smi") is None:
        print("nvidia-smi not found: run this on a machine with NVIDIA GPUs.")
        return 2
    sampler = Sampler(NvmlBackend(), node="check")
    sample = sampler.sample()
    info = sampler.info()
    if info["backend"] != "nvml":
        print(f"NVML backend unavailable: {info['reason']}")
        return 2
    devices = {d["index"]: d for d in info["devices"]}
    rows = smi("index," + ",".join(f for f, _, _ in FIELDS))
    failures = 0
    print(f"driver {info['driver_version']}, {len(rows)} GPU(s)")
    print(f"{'gpu':>3} {'metric':<14} {'jupyter-air':>12} {'nvidia-smi':>12} {'diff':>8}")
    for row in rows:
        index = int(row[0])
        ours = next(g for g in sample["gpus"] if g["index"] == index)
        for (_smi_field, key, tolerance), text in zip(FIELDS, row[1:], strict=True):
            if key == "uuid":
                ok = devices[index]["uuid"] == text
                failures += not ok
                print(f"{index:>3} {'uuid':<14} {'match' if ok else 'MISMATCH':>12}")
                continue
            theirs, mine = number(text), ours.get(key)
            if theirs is None or mine is None:
                ok = theirs is None and mine is None
                diff = "-"
            else:
                delta = abs(mine - theirs)
                limit = tolerance * abs(theirs) if key == "power_w" else tolerance
                ok = delta <= max(limit, 0.5)
                diff = f"{delta:.1f}"
            failures += not ok
            flag = "" if ok else "  <-- differs"
            print(f"{index:>3} {key:<14} {mine!s:>12} {text:>12} {diff:>8}{flag}")
    uuid_to_index = {d["uuid"]: i for i, d in devices.items()}
    for pid, used, uuid in smi("pid,used_memory,gpu_uuid", kind="compute-apps"):
        index = uuid_to_index.get(uuid)
        procs = {p["pid"]: p for g in sample["gpus"] if g["index"] == index for p in g["processes"]}
        found = int(pid) in procs
        failures += not found
        mem = procs[int(pid)]["gpu_mem_mb"] if found else None
        print(
            f"process {pid} on GPU {index}: nvidia-smi {used} MiB, jupyter-air {mem} MiB"
            + ("" if found else "  <-- missing")
        )
    sampler.close()
    print("OK" if not failures else f"{failures} difference(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
