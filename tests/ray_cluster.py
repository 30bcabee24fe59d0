"""A real multi-node Ray cluster on loopback, for the tests: ``python tests/ray_cluster.py N``.

Run by the ``ray_cluster`` fixture in a session of its own. It starts a head node and N-1
worker nodes with Ray's own test helper (``ray.cluster_utils.Cluster``), each advertising 2 CPUs
and 2 fake GPUs (GPU placement is exercised; commands run on CPU), prints one JSON line (the
address and the nodes), then obeys lines on stdin: ``kill <node id>`` (SIGKILL of that node's
raylet and its processes, as a machine lost), ``add`` (one more node), ``nodes``, ``quit``.
Every process it starts keeps its session: the fixture stops them all by session id.

``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0`` keeps every Ray process on 127.0.0.1; the health-check
settings make Ray notice a lost node within about two seconds instead of thirty; the start
timeouts are lengthened for a loaded machine.
"""

from __future__ import annotations

import json
import os
import sys

LOOPBACK_ENV = {
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0",
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_DEDUP_LOGS": "0",
    "RAY_health_check_period_ms": "500",
    "RAY_health_check_failure_threshold": "4",
    "RAY_health_check_initial_delay_ms": "0",
    # a raylet waits this long for its node's agents (Python processes) to start and say their
    # ports, else it stops: seconds by default, which a loaded 2-core machine misses
    "RAY_agent_register_timeout_ms": "180000",
    "RAY_raylet_start_wait_time_s": "180",
    # Ray runs its workers at nice 15 (below the node's own processes): here the three nodes
    # share two cores with Galata and the other tests, where nice 15 gets a 30th of a core
    "RAY_worker_niceness": "0",
}
NODE = {"num_cpus": 2, "num_gpus": 2}


def patient_registration(wait_s: float = 180.0) -> None:
    """Ray gives a starting raylet 30 s to register with the GCS (a constant in ray/_private/
    node.py), which a loaded 2-core machine can miss: its check waits up to ``wait_s``."""
    import time

    import ray._private.services as services

    original = services.get_node

    def get_node(*args: object, **kwargs: object) -> object:
        deadline = time.monotonic() + wait_s
        while True:
            try:
                return original(*args, **kwargs)
            except RuntimeError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)

    services.get_node = get_node


def start(cluster_class: type, count: int, tries: int = 3) -> tuple:
    """Start the cluster; a start that failed anyway is stopped and tried again."""
    for attempt in range(1, tries + 1):
        cluster = None
        try:
            cluster = cluster_class(
                initialize_head=True, head_node_args={**NODE, "include_dashboard": False}
            )
            workers = {}
            for _ in range(count - 1):
                node = cluster.add_node(**NODE, wait=False)
                workers[node.node_id] = node
            cluster.wait_for_nodes()
            return cluster, workers
        except Exception as error:
            print(f"the cluster did not start (try {attempt}): {error}", file=sys.stderr)
            if cluster is not None:
                cluster.shutdown()
            if attempt == tries:
                raise
    raise AssertionError("unreachable")


def main() -> int:
    os.environ.update(LOOPBACK_ENV)
    from ray.cluster_utils import Cluster

    patient_registration()
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 2
    cluster, workers = start(Cluster, count)

    def describe() -> dict:
        return {
            "address": cluster.address,
            "head": cluster.head_node.node_id,
            "workers": sorted(workers),
        }

    print(json.dumps(describe()), flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "kill":
            node = workers.pop(words[1], None)
            if node is not None:
                cluster.remove_node(node, allow_graceful=False)
            print(json.dumps({"killed": words[1] if node else None}), flush=True)
        elif words[0] == "add":
            node = cluster.add_node(**NODE)
            cluster.wait_for_nodes()
            workers[node.node_id] = node
            print(json.dumps(describe()), flush=True)
        elif words[0] == "nodes":
            print(json.dumps(describe()), flush=True)
        elif words[0] == "quit":
            break
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
