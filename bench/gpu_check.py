"""Checks jupyter-air's NVML readings against nvidia-smi on a machine with NVIDIA GPUs.

Prints, per GPU and metric, our value, nvidia-smi's and the difference, and exits non-zero when a
difference is beyond what sampling a second apart explains. The health fields (clocks and their
maximums, throttle reasons, fan, ECC counts, retired pages, remapped rows) are compared too, each
against the nvidia-smi field of that name (one this nvidia-smi does not know is skipped, said so),
and the MIG instances against ``nvidia-smi -L``. Also checks that GPU processes nvidia-smi lists
appear in our sample with their memory.

    python bench/gpu_check.py
"""

from __future__ import annotations

import csv
import io
import re
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


# (nvidia-smi names, oldest last; our health field; tolerance)
HEALTH = [
    (("clocks.sm",), "sm_clock_mhz", 400.0),  # moves with load between two reads
    (("clocks.max.sm",), "sm_clock_max_mhz", 0.0),
    (("clocks.mem",), "mem_clock_mhz", 1.0),
    (("clocks.max.mem",), "mem_clock_max_mhz", 0.0),
    (("fan.speed",), "fan_pct", 5.0),
    (("ecc.errors.corrected.volatile.total",), "ecc_corrected", 0.0),
    (("ecc.errors.uncorrected.volatile.total",), "ecc_uncorrected", 0.0),
    (("retired_pages.sbe", "retired_pages.single_bit_ecc.count"), "retired_pages_sbe", 0.0),
    (("retired_pages.dbe", "retired_pages.double_bit.count"), "retired_pages_dbe", 0.0),
    (("remapped_rows.correctable",), "remapped_rows_correctable", 0.0),
    (("remapped_rows.uncorrectable",), "remapped_rows_uncorrectable", 0.0),
]
THROTTLE = ("clocks_event_reasons.active", "clocks_throttle_reasons.active")
MOVING_REASONS = {"gpu_idle", "sw_power_cap"}  # may change between two reads


def smi_field(names: tuple[str, ...]) -> tuple[str, dict[int, str]] | None:
    """The first of ``names`` this nvidia-smi knows, and its value per GPU index."""
    for name in names:
        try:
            rows = smi(f"index,{name}")
        except subprocess.CalledProcessError:
            continue  # "not a valid field to query" on this driver
        return name, {int(r[0]): r[1] for r in rows}
    return None


def check_health(sample: dict) -> int:
    failures = 0
    print(f"{'gpu':>3} {'health':<28} {'jupyter-air':>12} {'nvidia-smi':>12}")
    for names, key, tolerance in HEALTH:
        found = smi_field(names)
        if found is None:
            print(f"    {key:<28} skipped: nvidia-smi knows none of {', '.join(names)}")
            continue
        for index, text in found[1].items():
            health = next(g for g in sample["gpus"] if g["index"] == index).get("health") or {}
            theirs, mine = number(text), health.get(key)
            ok = (theirs is None and mine is None) or (
                theirs is not None and mine is not None and abs(mine - theirs) <= tolerance
            )
            failures += not ok
            flag = "" if ok else "  <-- differs"
            print(f"{index:>3} {key:<28} {mine!s:>12} {text:>12}{flag}")
    found = smi_field(THROTTLE)
    if found is not None:
        from jupyter_air.telemetry.health import decode_throttle_reasons

        for index, text in found[1].items():
            health = next(g for g in sample["gpus"] if g["index"] == index).get("health") or {}
            mask = int(text, 16) if text.startswith("0x") else None
            theirs = set(decode_throttle_reasons(mask)) if mask is not None else None
            mine = set(health.get("throttle_reasons") or ()) if health else None
            ok = (theirs is None) == (mine is None) and (
                theirs is None or not (theirs ^ mine) - MOVING_REASONS
            )
            failures += not ok
            flag = "" if ok else "  <-- differs"
            print(f"{index:>3} {'throttle_reasons':<28} {sorted(mine or [])} {text}{flag}")
    return failures


def check_mig(info: dict) -> int:
    listed = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True).stdout
    theirs = set(re.findall(r"UUID: (MIG-[^)\s]+)", listed))
    mine = {m["uuid"] for d in info["devices"] for m in d.get("mig", [])}
    ok = theirs == mine
    print(
        f"MIG instances: nvidia-smi {len(theirs)}, jupyter-air {len(mine)}"
        + ("" if ok else "  <-- differ")
    )
    return 0 if ok else 1


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
    failures += check_health(sample)
    failures += check_mig(info)
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
