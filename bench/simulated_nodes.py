"""Many simulated nodes reporting to a Jupyter server from one process, for the GPU panel's
render benchmark of a 64-node cluster overview (ui-tests/bench/panel-render.spec.ts): 63
``air agent`` processes would load the machine more than the page measured on it.

Each node is bench/telemetry_ingest.py's ``Node`` (a real sampler over the pynvml fake: 8 GPUs
with health and a process each), with its own token minted in the server's data folder as
``air agent-token`` does; every ``--interval`` seconds each node sends one report, as an agent
does (``POST air/api/telemetry/ingest``, its node info with the first). Prints ``ready`` once
every node has reported; ends after ``--seconds``, or at SIGTERM.

    python bench/simulated_nodes.py --server URL --data-dir DIR [--nodes 63] [--gpus 8]
        [--interval 1] [--seconds 300]
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from telemetry_ingest import INGEST_PATH, Node

from jupyter_air.telemetry.agent import AUTH_SCHEME
from jupyter_air.telemetry.agent_tokens import mint_token

MAX_NODES = 512


def send(server: str, node: Node, first: bool) -> None:
    request = urllib.request.Request(
        server + INGEST_PATH,
        data=node.report([time.time()], info=first),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Authorization": f"{AUTH_SCHEME} {node.token}",
        },
    )
    with urllib.request.urlopen(request, timeout=30) as answer:
        answer.read()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--server", required=True, help="the Jupyter server's base URL")
    parser.add_argument("--data-dir", required=True, help="its jupyter-air data folder")
    parser.add_argument("--nodes", type=int, default=63)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument("--seconds", type=float, default=300.0)
    args = parser.parse_args()
    if not 1 <= args.nodes <= MAX_NODES:
        parser.error(f"--nodes: 1 to {MAX_NODES}")
    server = args.server if args.server.endswith("/") else args.server + "/"
    names = [f"sim-node-{k:03d}" for k in range(1, args.nodes + 1)]
    nodes = [Node(name, args.gpus, mint_token(args.data_dir, name)) for name in names]
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    deadline = time.monotonic() + args.seconds
    first = True
    with ThreadPoolExecutor(max_workers=4) as pool:
        while not stop.is_set() and time.monotonic() < deadline:
            began = time.monotonic()
            list(pool.map(send, [server] * len(nodes), nodes, [first] * len(nodes)))
            if first:
                print("ready", flush=True)
                first = False
            stop.wait(max(0.0, args.interval - (time.monotonic() - began)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
