"""A job run's checkpoint on its way home and back (workloads/checkpoints.py).

Writes a checkpoint of ``--mb`` MB into a node's folder the way a training script does
(``torch.save``-sized chunks, then the file stops changing) while the sync scans every 5 s as in
a job run, and prints how long after the write ended the file was whole at home; then how long
putting it back takes on a node that has nothing (the retry on another machine), and a rewrite
of a file already there. Median of ``--repeat`` runs. Home and nodes are folders of this
machine, so this is the copy's own cost; a node elsewhere adds the network.

With ``--ray`` the same runs again, the node folders reached as on a Ray cluster whose nodes share
no disk with the Jupyter host: through each node's actor (``NodeRunner``), in 64 MiB chunks
(``backends/node_folders.py``), on a local Ray instance; the ratio against the folders of this
machine is printed, measured in the same run.

    python bench/checkpoints.py [--mb 100] [--repeat 3] [--ray]
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jupyter_air.workloads.checkpoints import SCAN_S, CheckpointSync, Home, LocalFolder

Folders = Callable[[Path, int], Any]  # a run's folder, node → its NodeFolder


def local_folders(root: Path, node: int) -> LocalFolder:
    folder = root / f"node{node}"
    folder.mkdir(exist_ok=True)
    return LocalFolder(str(folder))


def ray_folders() -> Folders:
    """Node folders through two ``NodeRunner`` actors, as on a cluster that shares no disk."""
    import ray

    from jupyter_air.backends.node_folders import ActorFolder
    from jupyter_air.backends.ray_node import NodeRunner

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    runner = ray.remote(NodeRunner).options(num_cpus=0)
    actors = [runner.remote("bench", 1, node, False) for node in (0, 1)]

    def folders(root: Path, node: int) -> ActorFolder:
        job = f"bench-{root.name}"
        path = ray.get(actors[node].checkpoint_folder.remote(job))
        return ActorFolder(actors[node], path)

    return folders


def one(mb: int, root: Path, folders: Folders) -> tuple[float, float, float]:
    home = Home(str(root / "home"))
    sync = CheckpointSync(home, limit_bytes=10 * mb << 20)
    node = folders(root, 0)
    sync.restore(1, {0: node})
    sync.start()
    chunk = os.urandom(1 << 20)
    with open(Path(node.path) / "model.pt", "wb") as file:  # what a rank on node 0 writes
        for _ in range(mb):
            file.write(chunk)
    written = time.monotonic()
    target = root / "home" / "node_0" / "model.pt"
    while not (target.exists() and target.stat().st_size == mb << 20):
        time.sleep(0.05)
    home_s = time.monotonic() - written
    sync.finish()
    elsewhere = folders(root, 1)  # the retry's node: nothing there
    started = time.monotonic()
    CheckpointSync(home).restore(2, {0: elsewhere})
    restore_s = time.monotonic() - started
    started = time.monotonic()
    CheckpointSync(home).restore(3, {0: elsewhere})
    again_s = time.monotonic() - started
    return home_s, restore_s, again_s


def medians(mb: int, repeat: int, folders: Folders) -> list[float]:
    runs = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="air-ckpt-bench-") as name:
            runs.append(one(mb, Path(name), folders))
    return [statistics.median(r[i] for r in runs) for i in range(3)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ray", action="store_true", help="also through Ray nodes' actors")
    args = parser.parse_args()
    local = medians(args.mb, args.repeat, local_folders)
    through = medians(args.mb, args.repeat, ray_folders()) if args.ray else None
    print(f"checkpoint of {args.mb} MB, scans every {SCAN_S:g} s, median of {args.repeat}:")
    names = ("written -> whole at home", "put back on an empty node", "put back over the same file")
    for i, name in enumerate(names):
        line = f"  {name:<28} folders here {local[i]:6.2f} s"
        if through is not None:
            ratio = through[i] / local[i] if local[i] else float("nan")
            line += f"   through Ray {through[i]:6.2f} s ({ratio:.2f}x)"
        print(line)


if __name__ == "__main__":
    main()
