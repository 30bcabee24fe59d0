"""A node agent on every node of a Ray cluster: ``python -m jupyter_air.telemetry.ray_agents``.

Started by the jupyter-air server when ``c.JupyterAir.cluster`` names a Ray cluster
(server/cluster_agents.py), this process is a small Ray driver on the Jupyter host. On every
alive Ray node it places one ``RayNodeAgent`` actor (node affinity, no CPU reserved) which runs the
same ``NodeAgent`` as ``air agent``; its reports come back over Ray, not over HTTP from the node:
this process takes each from the node's mailbox and forwards it to the server's ingest endpoint
with the node's agent token (minted here in the server's data folder, as ``air agent-token``
does, and never sent to the node), then gives the answer back (telemetry/mailbox.py). So nodes
need no route to the Jupyter server, which may listen on localhost. Nodes that join later get
theirs at the next look (every ``--every`` seconds); a node that leaves takes its actor with it
and shows stale, then lost, in the panel. The actors belong to this driver: it ends with the
server (it watches its parent), and Ray ends them with it.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import sys
import time
from typing import Any

NAMESPACE = "jupyter-air"
log = logging.getLogger("jupyter_air.ray_agents")


TAKE_S = 5.0  # how long one ask for a node's next report waits on the node


class RayNodeAgent:
    """One node's agent, as a Ray actor: samples its node; its reports wait in its mailbox for
    the Jupyter host to take them (``take``) and give the server's answer back (``give``)."""

    def __init__(self, node: str, interval_s: float, backend: str) -> None:
        from .. import __version__
        from .agent import NodeAgent
        from .backends import create_backend
        from .mailbox import Mailbox
        from .sampler import Sampler

        self.mailbox = Mailbox()
        self.agent = NodeAgent(
            Sampler(create_backend(backend), node=node),
            self.mailbox,
            interval_s=interval_s,
            version=__version__,
        )
        self.agent.start()

    def take(self, wait_s: float = TAKE_S) -> tuple[int, bytes] | None:
        return self.mailbox.take(wait_s)

    def give(self, serial: int, answer: tuple[str, str]) -> None:
        self.mailbox.give(serial, answer)

    def state(self) -> dict[str, Any]:
        agent = self.agent
        return {
            "reports": agent.reports,
            "samples": agent.samples_taken,
            "rejected": agent.rejected,
            "error": agent.last_send_error,
        }

    def stop(self) -> None:
        self.agent.stop()


def node_names(nodes: list[dict[str, Any]]) -> dict[str, str]:
    """Ray node id → the agent's node name: the host name, or — where several Ray nodes share
    one host (containers, a cluster on one machine) — the host name and the id's first digits."""
    hosts = [
        str(n.get("NodeManagerHostname") or n.get("NodeManagerAddress") or "ray") for n in nodes
    ]
    names = {}
    for node, host in zip(nodes, hosts, strict=True):
        name = host if hosts.count(host) == 1 else f"{host}-{str(node['NodeID'])[:6]}"
        names[str(node["NodeID"])] = _safe(name)
    return names


def _host(node: dict[str, Any]) -> str:
    return str(node.get("NodeManagerHostname") or node.get("NodeManagerAddress") or "ray")


def _safe(name: str) -> str:
    """A name ``check_node_name`` accepts (letters, digits, ``.-_``, at most 64)."""
    cleaned = "".join(c if c.isalnum() or c in ".-_" else "-" for c in name).strip("-.") or "ray"
    return cleaned[:64]


class Placer:
    """Keeps one agent actor on every alive Ray node, and forwards their reports (``pump``)."""

    def __init__(
        self, server_url: str, data_dir: str, interval_s: float, backend: str, own_node: str = ""
    ) -> None:
        self.server_url = server_url
        self.own_node = own_node  # the server's own node: this host, sampled by the server
        self.data_dir = data_dir
        self.interval_s = interval_s
        self.backend = backend
        self.actors: dict[str, Any] = {}  # Ray node id → actor
        self.senders: dict[str, Any] = {}  # Ray node id → its HttpSender to the server
        self.asks: dict[Any, str] = {}  # a pending ``take`` → its Ray node id
        self._remote: Any = None

    def look(self) -> list[str]:
        """Place an agent on every alive node that has none; the names of those placed."""
        import ray
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        from .agent_tokens import mint_token
        from .sender import HttpSender

        alive = [n for n in ray.nodes() if n.get("Alive")]
        names = node_names(alive)
        for gone in set(self.actors) - set(names):
            self._forget(gone)
        placed = []
        if self._remote is None:  # threaded: a ``take`` waits while ``state`` or ``stop`` runs
            self._remote = ray.remote(num_cpus=0, max_restarts=0, max_concurrency=4)(RayNodeAgent)
        remote = self._remote
        for node_id, name in sorted(names.items()):
            if node_id in self.actors or name == self.own_node:
                continue
            # an answer to every report: one process forwards every node's, none may wait
            token = mint_token(self.data_dir, name)
            self.senders[node_id] = HttpSender(self.server_url, token, answer_every=1)
            self.actors[node_id] = remote.options(
                scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
                name=f"air-agent-{node_id[:16]}-{os.getpid()}",
            ).remote(name, self.interval_s, self.backend)
            placed.append(name)
        return placed

    def pump(self, wait_s: float) -> int:
        """Forward the reports the nodes have ready (waiting at most ``wait_s`` for the first);
        how many were forwarded."""
        import ray

        from .mailbox import forward

        asked = set(self.asks.values())
        for node_id, actor in self.actors.items():
            if node_id not in asked:
                self.asks[actor.take.remote()] = node_id
        if not self.asks:
            time.sleep(wait_s)
            return 0
        ready, _ = ray.wait(list(self.asks), num_returns=1, timeout=wait_s)
        forwarded = 0
        for ref in ready:
            node_id = self.asks.pop(ref)
            try:
                report = ray.get(ref)
            except Exception as error:  # its node gone: the next look forgets it
                log.info("no report from node %s: %s", node_id[:8], error)
                self._forget(node_id)
                continue
            if report is None or node_id not in self.actors:
                continue
            serial, body = report
            answer = forward(self.senders[node_id], body)
            self.actors[node_id].give.remote(serial, answer)
            forwarded += 1
        return forwarded

    def _forget(self, node_id: str) -> None:
        """Drop a node's agent (its node gone, or its actor not answering): the actor is killed,
        so that the next look can place a new one under the same name."""
        import ray

        actor = self.actors.pop(node_id, None)
        if actor is not None:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        sender = self.senders.pop(node_id, None)
        if sender is not None:
            sender.close()
        self.asks = {ref: n for ref, n in self.asks.items() if n != node_id}

    def stop(self) -> None:
        import ray

        refs = [actor.stop.remote() for actor in self.actors.values()]
        if refs:
            ray.wait(refs, num_returns=len(refs), timeout=10)
        for node_id in list(self.actors):
            self._forget(node_id)


def main(argv: list[str] | None = None) -> int:
    from ..backends.ray_import import without_slow_optional_imports

    without_slow_optional_imports()
    parser = argparse.ArgumentParser(prog="python -m jupyter_air.telemetry.ray_agents")
    parser.add_argument("--server", required=True, help="the Jupyter server's URL")
    parser.add_argument("--address", required=True, help="the Ray cluster's address")
    parser.add_argument("--data-dir", required=True, help="the server's data folder (tokens)")
    parser.add_argument("--interval", type=float, default=10.0)
    parser.add_argument("--backend", default="auto")
    parser.add_argument("--every", type=float, default=15.0, help="seconds between looks")
    parser.add_argument("--parent", type=int, default=os.getppid())
    parser.add_argument("--own-node", default="", help="the server's own node: no agent there")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    import ray

    from ..backends.ray_backend import RayBackend

    stopping = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stopping.update(now=True))
    RayBackend(args.address).connect()  # as the workloads' backend connects (signals kept)
    placer = Placer(args.server, args.data_dir, args.interval, args.backend, args.own_node)
    try:
        next_look = 0.0
        while not stopping["now"] and _alive(args.parent):
            if time.monotonic() >= next_look:
                try:
                    placed = placer.look()
                    if placed:
                        log.info("agents placed on %s", ", ".join(placed))
                except Exception as error:  # the cluster away for a moment: next look
                    log.warning("could not look at the cluster's nodes: %s", error)
                next_look = time.monotonic() + args.every
            try:
                placer.pump(0.5)
            except Exception as error:  # the cluster away for a moment: the next round
                log.warning("could not forward the nodes' reports: %s", error)
                time.sleep(0.5)
    finally:
        placer.stop()
        ray.shutdown()
    return 0


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return os.getppid() == pid


if __name__ == "__main__":
    sys.exit(main())
