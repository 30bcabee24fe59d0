"""Listing a working folder for its code snapshot, at growing file counts.

Prints how long ``list_snapshot`` takes on a folder of N empty files in one directory (no git):
12,500 are snapshotted, 25,000 and 50,000 (over the 20,000-file limit) are refused. The
listing should grow at most linearly: the fitted exponent is printed (1.0 linear, 2.0
quadratic).

    python bench/snapshot_listing.py [--counts 12500,25000,50000]
"""

from __future__ import annotations

import argparse
import math
import tempfile
import time
from pathlib import Path

from jupyter_air.workloads.snapshot import SnapshotTooLarge, list_snapshot


def time_listing(count: int) -> tuple[float, str]:
    with tempfile.TemporaryDirectory(prefix="air-snapshot-bench-") as name:
        folder = Path(name)
        for k in range(count):
            (folder / f"f{k}").touch()
        started = time.perf_counter()
        try:
            listing = list_snapshot(name)
            outcome = f"{len(listing.paths):,} files listed"
        except SnapshotTooLarge:
            outcome = "refused (over the limit)"
        return time.perf_counter() - started, outcome


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--counts", default="12500,25000,50000")
    args = parser.parse_args()
    counts = [int(c) for c in args.counts.split(",")]
    figures = []
    for count in counts:
        seconds, outcome = time_listing(count)
        figures.append(seconds)
        print(f"  {count:>7,} files  {seconds * 1000:8.1f} ms  {outcome}")
    if len(counts) > 1 and figures[0] > 0:
        exponent = math.log(figures[-1] / figures[0]) / math.log(counts[-1] / counts[0])
        print(f"growth: time ~ files^{exponent:.2f}")


if __name__ == "__main__":
    main()
