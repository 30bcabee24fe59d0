"""The Ray backend: each node of an attempt on a different Ray node.

An attempt with ``num_nodes: N`` reserves N bundles — ``{GPU: num_accelerators, CPU: 1}``, or
``{CPU: 1}`` without GPUs — in a STRICT_SPREAD placement group, so every node of the workload is
a different Ray node; one ``NodeRunner`` actor is pinned to each bundle and runs that node's
command (ray_node.py). Node 0's IP and a port free there are the rendezvous (``MASTER_ADDR``,
``PET_MASTER_ADDR``…); ``CUDA_VISIBLE_DEVICES`` is what Ray assigned to the bundle.

The supervisor is the Ray driver (``ray.init(address=…)``, ``log_to_driver=False``: the nodes'
output never goes through Ray's log monitor, so its de-duplication hides nothing). Each tick it
asks every actor for its command's exit code and the new lines of its log, appended byte for
byte to the node's log file on the Jupyter host. An actor that does not answer because its Ray
node is gone ends the attempt: "node 1 (host 10.0.0.7) was lost". A cluster that stops
answering altogether ends it after ``RAY_LOST_S`` (config.py, 60 s). A command killed by a
signal may be the first sign of its Ray node going down (its raylet killed, the node shutting
down): such an end is told only once Ray still counts the node alive ``SIGNAL_CONFIRM_S`` later,
and as the node lost when Ray no longer does. Actors belong to the supervisor: if it dies, Ray
stops them, and each node's keeper stops the command with them.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import CLUSTER, RAY_CONNECT_TIMEOUT_S, RAY_LOST_S, RAY_PLACEMENT_TIMEOUT_S
from .base import GroupLaunch, Metrics, NodeInfo, NodeState, PlacementError

if TYPE_CHECKING:
    from .base import Shaped as WorkloadSpec

log = logging.getLogger(__name__)

NAMESPACE = "jupyter-air"
CALL_TIMEOUT_S = 10.0
SIGNAL_CONFIRM_S = 5.0


def probe(address: str, timeout_s: float) -> None:
    """Refuse at once an address where nothing answers: ``ray.init`` to it waits for minutes
    (its own retries) and then may still not raise. A ``host:port`` address (``ray://`` too) must
    accept a TCP connection within ``timeout_s``; ``auto`` and the like are Ray's own lookup."""
    from .base import ClusterUnreachableError

    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not host or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s).close()
    except OSError as error:
        raise ClusterUnreachableError(
            f"the Ray cluster at {address} does not answer ({error or type(error).__name__}, "
            f"within {timeout_s:g} s): check RAY_ADDRESS (or c.JupyterAir.cluster / "
            f"{CLUSTER}) and that the cluster is up — see docs/clusters.md"
        ) from None


@dataclass(frozen=True)
class RayNode:
    node_id: str
    ip: str
    cpus: float
    gpus: float

    def describe(self) -> str:
        gpus = f", {self.gpus:g} GPU" if self.gpus else ""
        return f"{self.ip} ({self.cpus:g} CPU{gpus})"


def bundle(accelerators: int, uses_gpus: bool) -> dict[str, float]:
    return {"GPU": float(accelerators), "CPU": 1.0} if uses_gpus else {"CPU": 1.0}


def launch_shape(launch: GroupLaunch) -> tuple[int, int, bool]:
    """What a placement fits: the node count and each node's bundle."""
    return launch.num_nodes, launch.accelerators, launch.uses_gpus


@dataclass
class Placed:
    """An attempt's placement group and its nodes' actors, one per bundle."""

    placement: Any
    actors: list[Any]
    shape: tuple[int, int, bool]

    def release(self) -> None:
        """Kill the actors and remove the placement group (what they held is free again)."""
        import ray
        from ray.util.placement_group import remove_placement_group

        for actor in self.actors:
            with contextlib.suppress(Exception):
                ray.kill(actor)
        try:
            remove_placement_group(self.placement)
        except Exception as error:
            log.warning("could not remove the placement group: %s", error)


class RayBackend:
    name = "ray"

    def __init__(self, address: str | None = None) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS") or "auto"
        self._connected = False
        self._owns = False  # connected by us (a kernel may have its own ray.init)
        self._nodes: list[RayNode] | None = None

    # the cluster -------------------------------------------------------------------------------
    def connect(self) -> None:
        import ray

        if self._connected and ray.is_initialized():
            return  # (a kernel's own ray.shutdown between two calls: connected again)
        if not ray.is_initialized():
            probe(self.address, RAY_CONNECT_TIMEOUT_S.get())
            # Ray puts its own SIGTERM handler on the driver (it exits at once); the
            # supervisor's is the one that stops the nodes properly
            handlers = _signal_handlers()
            try:
                ray.init(
                    address=self.address,
                    namespace=NAMESPACE,
                    log_to_driver=False,
                    logging_level=logging.WARNING,
                )
            finally:
                _restore(handlers)
            self._owns = True
        self._connected = True

    def nodes(self) -> list[RayNode]:
        import ray

        self.connect()
        found = []
        for info in ray.nodes():
            if not info.get("Alive"):
                continue
            resources = info.get("Resources") or {}
            found.append(
                RayNode(
                    node_id=info["NodeID"],
                    ip=info.get("NodeManagerAddress", "?"),
                    cpus=float(resources.get("CPU", 0)),
                    gpus=float(resources.get("GPU", 0)),
                )
            )
        self._nodes = found
        return found

    def describe(self, nodes: list[RayNode] | None = None) -> str:
        nodes = self.nodes() if nodes is None else nodes
        shown = ", ".join(n.describe() for n in nodes)
        return f"{len(nodes)} node{'s' if len(nodes) != 1 else ''}: {shown or 'none'}"

    def check(self, spec: WorkloadSpec) -> None:
        """Refuse at once a shape the cluster cannot hold, saying what it has."""
        from .base import CapacityError

        compute = spec.compute
        need = bundle(compute.num_accelerators, compute.uses_gpus)
        nodes = self.nodes()
        fitting = [n for n in nodes if n.cpus >= need["CPU"] and n.gpus >= need.get("GPU", 0)]
        if len(fitting) >= compute.num_nodes:
            return
        each = f"{compute.num_accelerators} GPU and 1 CPU" if compute.uses_gpus else "1 CPU"
        raise CapacityError(
            f"Not enough Ray nodes: this workload needs {compute.num_nodes} nodes with "
            f"{each} each, on different machines; the Ray cluster at {self.address} has "
            f"{self.describe(nodes)}, {len(fitting)} of them with enough. Lower "
            "compute.num_nodes or compute.num_accelerators, or add nodes to the cluster."
        )

    # an attempt --------------------------------------------------------------------------------
    def start(self, launch: GroupLaunch, kept: Placed | None = None) -> RayGroup:
        """Place the attempt's nodes (or take ``kept``: the placement group and actors of a
        previous call of the same shape, still held) and start its commands."""
        placed = self._reuse(launch, kept) if kept is not None else None
        placed = placed or self._place(launch)
        running = RayGroup(launch, placed.placement, placed.actors)
        try:
            running.start()
        except BaseException:
            running.stop(launch.grace_s)
            running.close()
            raise
        return running

    def _reuse(self, launch: GroupLaunch, kept: Placed) -> Placed | None:
        """``kept``'s actors made ready for this attempt, or None (released) when one of them
        does not answer: a node gone while they were kept."""
        import ray

        self.connect()
        try:
            ray.get(
                [
                    actor.begin.remote(launch.job_id, launch.attempt, node.node, launch.uses_gpus)
                    for actor, node in zip(kept.actors, launch.nodes, strict=True)
                ],
                timeout=CALL_TIMEOUT_S,
            )
        except BaseException as error:
            kept.release()
            if not isinstance(error, Exception):
                raise  # an interrupt: nothing kept is left held
            log.info("the kept nodes cannot serve this call (%s): placing new ones", _first(error))
            return None
        return kept

    def _place(self, launch: GroupLaunch) -> Placed:
        import ray
        from ray.util.placement_group import placement_group, remove_placement_group
        from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

        from .ray_node import NodeRunner

        self.connect()
        shape = bundle(launch.accelerators, launch.uses_gpus)
        group = placement_group(
            [dict(shape) for _ in launch.nodes],
            strategy="STRICT_SPREAD",
            name=f"jupyter-air-{launch.job_id}-{launch.attempt}",
        )
        timeout = RAY_PLACEMENT_TIMEOUT_S.get()
        try:
            ray.get(group.ready(), timeout=timeout)
        except Exception as error:
            remove_placement_group(group)
            raise PlacementError(
                f"could not place {launch.num_nodes} nodes of {_shape(shape)} on different Ray "
                f"nodes within {timeout:.0f} s ({type(error).__name__}); the cluster has "
                f"{self.describe()}"
            ) from None
        runner_class = ray.remote(NodeRunner)
        actors = []
        for index, node in enumerate(launch.nodes):
            options: dict[str, Any] = {
                "num_cpus": shape["CPU"],
                "num_gpus": shape.get("GPU", 0),
                "max_concurrency": 4,  # tick while a stop waits for its grace period
                "scheduling_strategy": PlacementGroupSchedulingStrategy(
                    group, placement_group_bundle_index=index
                ),
            }
            actors.append(
                runner_class.options(**options).remote(
                    launch.job_id, launch.attempt, node.node, launch.uses_gpus
                )
            )
        return Placed(group, actors, launch_shape(launch))

    def check_reachable(self, tracking_uri: str, *, embedded: bool = False) -> None:
        """Refuse a tracking server on this machine's loopback when nodes are elsewhere: their
        runs could record nothing. The embedded server is offered to them on this host's
        address toward the cluster while an attempt runs (``RayGroup``), behind its token."""
        from ..tracking.links import is_loopback_http
        from .base import CapacityError

        nodes = self._nodes if self._nodes is not None else self.nodes()
        remote = sorted({n.ip for n in nodes if not n.ip.startswith("127.")})
        if is_loopback_http(tracking_uri) and remote and not embedded:
            raise CapacityError(
                f"The MLflow tracking server at {tracking_uri} listens on this machine's "
                f"loopback only; the Ray nodes ({', '.join(remote)}) cannot reach it. Point "
                "MLFLOW_TRACKING_URI at a server the nodes reach (docs/clusters.md)."
            )

    def close(self) -> None:
        if self._connected and self._owns:
            import ray

            ray.shutdown()
        self._connected = self._owns = False


def _signal_handlers() -> dict[int, Any]:
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.getsignal(sig) for sig in (signal.SIGTERM, signal.SIGINT)}


def _restore(handlers: dict[int, Any]) -> None:
    for sig, handler in handlers.items():
        if handler is not None:
            signal.signal(sig, handler)


def _shape(shape: dict[str, float]) -> str:
    return "{" + ", ".join(f"{k}: {v:g}" for k, v in shape.items()) + "}"


class RayGroup:
    backend = "ray"

    def __init__(self, launch: GroupLaunch, placement: Any, actors: list[Any]) -> None:
        self.launch = launch
        self.placement = placement
        self.actors = actors
        self.nodes: list[NodeInfo] = []
        self.offsets = [0 for _ in actors]
        self.lost: dict[int, str] = {}  # node → why
        self.codes: dict[int, int] = {}  # node → exit code (negative: signal)
        self.signalled: dict[int, float] = {}  # node → when its end by a signal was first seen
        self.lost_s = RAY_LOST_S.get()
        self._answered = time.monotonic()
        self._metrics = False
        self.shipped: dict[int, int] = {}  # node → bytes of code sent to it for this attempt
        self.relay: Any = None  # the embedded MLflow server offered to remote nodes

    # start -------------------------------------------------------------------------------------
    def start(self) -> None:
        import ray

        where = ray.get([a.where.remote() for a in self.actors], timeout=120)
        code = self._ship_code(where)
        tracking = self._tracking_for([place["ip"] for place in where])
        master_addr = where[0]["ip"]
        master_port = ray.get(self.actors[0].free_port.remote(), timeout=CALL_TIMEOUT_S)
        starts = []
        for actor, node, place in zip(self.actors, self.launch.nodes, where, strict=True):
            starts.append(
                actor.start.remote(
                    node.argv,
                    {**node.env, **tracking},
                    node.cwd,
                    num_nodes=self.launch.num_nodes,
                    master_addr=master_addr,
                    master_port=master_port,
                    gpus=place["gpus"],
                    files=dict(node.files),
                    code=code,
                )
            )
        started = ray.get(starts, timeout=120)
        for node, place, proc in zip(self.launch.nodes, where, started, strict=True):
            self.nodes.append(
                NodeInfo(
                    node.node,
                    host=place["ip"],
                    pid=proc["pid"],
                    started=proc["started"],
                    gpus=place["gpus"],
                    machine=place["node_id"],
                )
            )
        self._answered = time.monotonic()

    def _tracking_for(self, ips: list[str]) -> dict[str, str]:
        """The tracking URI the nodes use instead of the launch's (none: the same): the embedded
        server on this machine's loopback is relayed on this host's address toward the cluster
        (the IP its Ray node has) when a node is on another host. Its token is already in the
        nodes' environment; the relay ends with the attempt (``close``)."""
        uri = next((n.env.get("MLFLOW_TRACKING_URI") for n in self.launch.nodes), None)
        if self.relay is not None:
            return {"MLFLOW_TRACKING_URI": self.relay.url}
        if not self.launch.relay_tracking or not uri:
            return {}
        import urllib.parse

        import ray

        from ..mlflow_server.relay import Relay
        from ..tracking.links import is_loopback_http

        here = ray.util.get_node_ip_address()
        port = urllib.parse.urlparse(uri).port
        if not is_loopback_http(uri) or port is None or all(ip == here for ip in ips):
            return {}
        self.relay = Relay(here, port).start()
        log.info("MLflow server offered to the nodes at %s", self.relay.url)
        return {"MLFLOW_TRACKING_URI": self.relay.url}

    def _ship_code(self, where: list[dict[str, Any]]) -> str | None:
        """The attempt's code snapshot onto every node that does not have it yet (through Ray's
        object store: no shared folder); its digest. Each node keeps what it was sent, so the
        same code crosses once per node."""
        code = self.launch.code
        if code is None:
            return None
        import ray

        from ..rendering import size_text
        from .code_shipping import pack_snapshot, snapshot_digest

        digest = snapshot_digest(code)
        have = ray.get([a.has_code.remote(digest) for a in self.actors], timeout=CALL_TIMEOUT_S)
        missing = [i for i, there in enumerate(have) if not there]
        self.shipped = dict.fromkeys(range(len(self.actors)), 0)
        if missing:
            packed = ray.put(pack_snapshot(code))
            sent = ray.get(
                [self.actors[i].receive_code.remote(digest, packed) for i in missing], timeout=600
            )
            self.shipped.update(zip(missing, sent, strict=True))
        log.info(
            "code snapshot %s: %s",
            digest[:12],
            "; ".join(
                f"node {i} (host {place['ip']}): "
                + (f"{size_text(self.shipped[i])} sent" if i in missing else "already there")
                for i, place in enumerate(where)
            ),
        )
        return digest

    # watching ----------------------------------------------------------------------------------
    def _node_lost(self, index: int) -> str | None:
        """Why node ``index`` is lost ("node 1 (host …, Ray node …) was lost") when Ray counts its
        Ray node dead; None while it counts it alive, or cannot tell (the connection check
        decides then)."""
        import ray

        info = self.nodes[index] if index < len(self.nodes) else None
        if info is None or not info.machine:
            return None
        try:
            alive = any(n["NodeID"] == info.machine and n.get("Alive") for n in ray.nodes())
        except Exception:
            return None
        if alive:
            return None
        return f"node {index} (host {info.host}, Ray node {info.machine[:8]}) was lost"

    def _lost_reason(self, index: int, error: BaseException) -> str | None:
        """Why node ``index`` is gone, or None when its Ray node still lives (a passing error)."""
        import ray

        lost = self._node_lost(index)
        if lost is not None:
            return lost
        info = self.nodes[index] if index < len(self.nodes) else None
        host = info.host if info else "?"
        if isinstance(error, ray.exceptions.ActorDiedError):
            return f"node {index} (host {host}): its jupyter-air actor died ({_first(error)})"
        return None

    def _ask(self, final: bool) -> None:
        """One round: every live node's exit code and new log lines."""
        import ray

        pending = {}
        for index, actor in enumerate(self.actors):
            if index in self.lost or (index in self.codes and not final):
                continue
            pending[index] = actor.tick.remote(self.offsets[index])
        if not pending:
            return
        refs = list(pending.values())
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=CALL_TIMEOUT_S)
        answered = False
        for index, ref in pending.items():
            if ref not in ready:
                continue
            try:
                code, data = ray.get(ref)
            except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError) as error:
                reason = self._lost_reason(index, error)
                if reason is not None:
                    self.lost[index] = reason
                    log.warning("%s", reason)
                continue
            answered = True
            if data:
                self.launch.nodes[index].writer.append_raw(data)
                self.offsets[index] += len(data)
            if code is not None and index not in self.codes:
                self.codes[index] = code
        if answered:
            self._answered = time.monotonic()

    def poll(self) -> list[NodeState]:
        self._ask(final=False)
        states = []
        for index in range(len(self.actors)):
            if index in self.lost:
                states.append(NodeState(index, lost=self.lost[index]))
            elif index in self.codes and self.codes[index] >= 0:
                states.append(NodeState(index, exit_code=self.codes[index]))
            elif index in self.codes:
                states.append(self._signalled_state(index, -self.codes[index]))
            else:
                states.append(NodeState(index))
        if time.monotonic() - self._answered > self.lost_s:
            for state in states:
                if state.running:
                    state.lost = (
                        f"no answer from the Ray cluster at {os.environ.get('RAY_ADDRESS', '?')} "
                        f"for {self.lost_s:.0f} s (node {state.node})"
                    )
        return states

    def _signalled_state(self, index: int, signum: int) -> NodeState:
        """Node ``index``'s command was killed by ``signum``: lost if its Ray node is gone,
        still running while that is undecided, else killed by the signal."""
        seen = self.signalled.setdefault(index, time.monotonic())
        lost = self._node_lost(index)
        if lost is not None:
            self.lost[index] = lost
            log.warning("%s", lost)
            return NodeState(index, lost=lost)
        if time.monotonic() - seen < SIGNAL_CONFIRM_S:
            return NodeState(index)
        return NodeState(index, signal=signum)

    def sync_logs(self, *, final: bool = False) -> None:
        """Bring the new lines home; ``final``: everything, once the commands ended."""
        if not final:
            return  # poll() brings them at every tick
        import ray

        live = [i for i in range(len(self.actors)) if i not in self.lost]
        if live:
            refs = [self.actors[i].finish_capture.remote() for i in live]
            ray.wait(refs, num_returns=len(refs), timeout=15)
        for _ in range(1000):  # until every live node has nothing more
            before = list(self.offsets)
            self._ask(final=True)
            if self.offsets == before:
                break
        for index in live:
            folder = self.launch.nodes[index].folder
            if folder is not None:
                self._bring_back(index, Path(folder))

    def _bring_back(self, index: int, folder: Path) -> None:
        """Node ``index``'s folder, as its command left it, into ``folder`` on this machine (a
        file the node cannot give is left out; the results read from it say what is missing)."""
        import ray

        seen: dict[str, int] = {}
        for _ in range(10_000):  # READ_LIMIT bytes a round; bounded
            try:
                changed = ray.get(self.actors[index].read_files.remote(seen), timeout=60)
            except Exception as error:
                log.warning("node %d: its folder could not be brought back: %s", index, error)
                return
            if not changed:
                return
            for name, (data, _size) in changed.items():
                target = folder / name
                target.parent.mkdir(parents=True, exist_ok=True)
                with open(target, "ab" if seen.get(name) else "wb") as file:
                    file.write(data)
                seen[name] = seen.get(name, 0) + len(data)

    # metrics -----------------------------------------------------------------------------------
    def start_metrics(self, metrics: Metrics) -> Metrics:
        import ray

        tracking = {**metrics.tracking_env, **self._tracking_for([n.host for n in self.nodes])}
        refs = {
            info.node: actor.start_metrics.remote(
                metrics.run_id, tracking, metrics.interval_s, info.gpus
            )
            for actor, info in zip(self.actors, self.nodes, strict=True)
        }
        for node, ref in refs.items():
            try:
                metrics.summaries[node] = ray.get(ref, timeout=60)
            except Exception as error:
                log.warning("system metrics of node %d are off: %s", node, error)
        self._metrics = True
        return metrics

    def finish_metrics(self) -> None:
        if not self._metrics:
            return
        self._metrics = False
        _wait_all([a.finish_metrics.remote() for a in self._live()], 60)

    # stopping ----------------------------------------------------------------------------------
    def _live(self) -> list[Any]:
        return [a for i, a in enumerate(self.actors) if i not in self.lost]

    def stop(self, grace_s: float) -> None:

        _wait_all([a.stop.remote(grace_s) for a in self._live()], grace_s + 30)

    def leftovers(self, grace_s: float) -> list[str]:
        import ray

        found = []
        for index, actor in enumerate(self.actors):
            if index in self.lost:
                continue
            try:
                pids = ray.get(actor.leftovers.remote(grace_s), timeout=grace_s + 30)
            except Exception as error:
                found.append(f"node {index}: could not check ({_first(error)})")
                continue
            host = self.nodes[index].host if index < len(self.nodes) else "?"
            found.extend(f"pid {pid} on node {index} (host {host})" for pid in pids)
        return found

    @property
    def placed(self) -> Placed:
        return Placed(self.placement, self.actors, launch_shape(self.launch))

    @property
    def reusable(self) -> bool:
        """Whether the nodes can serve another attempt: every command ended on its own, no node
        lost."""
        return not self.lost and len(self.codes) == len(self.actors)

    def close(self, *, keep: bool = False) -> None:
        """Tidy every node (its folder, its log); then release the actors and the placement
        group, or with ``keep`` leave them to the caller (``placed``)."""
        _wait_all([a.close.remote() for a in self._live()], 30)
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        if not keep:
            self.placed.release()


def _wait_all(refs: list[Any], timeout_s: float) -> None:
    """Wait for every call (errors included: an actor that died) up to ``timeout_s``."""
    if not refs:
        return
    import ray

    ray.wait(refs, num_returns=len(refs), timeout=timeout_s)


def _first(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return text[0][:200] if text else type(error).__name__
