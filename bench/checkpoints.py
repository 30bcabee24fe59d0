"""A job run's checkpoint on its way home and back (workloads/checkpoints.py).

Writes a checkpoint of ``--mb`` MB into a node's folder the way a training script does
(``torch.save``-sized chunks, then the file stops changing) while the sync scans every 5 s as in
a job run, and prints how long after the write ended the file was whole at home; then how long
putting it back takes on a node that has nothing (the retry on another machine), and a rewrite
of a file already there. Median of ``--repeat`` runs. Home and nodes are folders of this
machine, so this is the copy's own cost; a node elsewhere adds the network.

    python bench/checkpoints.py [--mb 100] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from jupyter_air.workloads.checkpoints import SCAN_S, CheckpointSync, Home, LocalFolder


def one(mb: int, root: Path) -> tuple[float, float, float]:
    home = Home(str(root / "home"))
    sync = CheckpointSync(home, limit_bytes=10 * mb << 20)
    node = root / "node0"
    node.mkdir()
    sync.restore(1, {0: LocalFolder(str(node))})
    sync.start()
    chunk = os.urandom(1 << 20)
    with open(node / "model.pt", "wb") as file:
        for _ in range(mb):
            file.write(chunk)
    written = time.monotonic()
    target = root / "home" / "node_0" / "model.pt"
    while not (target.exists() and target.stat().st_size == mb << 20):
        time.sleep(0.05)
    home_s = time.monotonic() - written
    sync.finish()
    elsewhere = root / "other"
    elsewhere.mkdir()
    started = time.monotonic()
    CheckpointSync(home).restore(2, {0: LocalFolder(str(elsewhere))})
    restore_s = time.monotonic() - started
    started = time.monotonic()
    CheckpointSync(home).restore(3, {0: LocalFolder(str(elsewhere))})
    again_s = time.monotonic() - started
    return home_s, restore_s, again_s


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    runs = []
    for _ in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="air-ckpt-bench-") as name:
            runs.append(one(args.mb, Path(name)))
    home_s, restore_s, again_s = (statistics.median(r[i] for r in runs) for i in range(3))
    print(f"checkpoint of {args.mb} MB, scans every {SCAN_S:g} s, median of {args.repeat}:")
    print(f"  written -> whole at home     {home_s:6.2f} s (at most two scans and the copy)")
    print(f"  put back on an empty node    {restore_s:6.2f} s")
    print(f"  put back over the same file  {again_s:6.2f} s")


if __name__ == "__main__":
    main()
