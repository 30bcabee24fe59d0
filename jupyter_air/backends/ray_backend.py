"""The Ray backend: each node of an attempt on a different Ray node.

An attempt with ``num_nodes: N`` reserves N bundles — ``{GPU: num_accelerators, CPU: 1}``, or
``{CPU: 1}`` without GPUs — in a STRICT_SPREAD placement group, so every node of the workload is
a different Ray node; a ``NodeRunner`` actor on each bundle's Ray node runs that node's command
(ray_node.py), one kept from an earlier attempt when there is one (ray_runners.py). Node 0's IP
and a port free there are the rendezvous (``MASTER_ADDR``, ``PET_MASTER_ADDR``…);
``CUDA_VISIBLE_DEVICES`` is what Ray gave the bundle.

The supervisor is the Ray driver (``ray.init(address=…)``, ``log_to_driver=False``: the nodes'
output never goes through Ray's log monitor, so its de-duplication hides nothing). Each tick it
asks every actor for its command's exit code and the new lines of its log, appended byte for
byte to the node's log file on the Jupyter host. An actor that does not answer because its Ray
node is gone (its host down, or cut off the network) ends the attempt once Ray counts that node
dead: "node 1 (host gpu-7 at 10.0.0.7, Ray node 3f2a…) was lost". A cluster that stops
answering altogether ends it after ``RAY_LOST_S`` (config.py, 60 s). A command killed by a
signal may be the first sign of its Ray node going down (its raylet killed, the node shutting
down): such an end is told only once Ray still counts the node alive ``SIGNAL_CONFIRM_S`` later,
and as the node lost when Ray no longer does. Actors belong to the supervisor: if it dies, Ray
stops them, and each node's keeper stops the command with them.

This module connects to the cluster, checks a shape against its nodes and places an attempt;
``ray_group.py`` starts, watches and stops a placed attempt (``RayGroup``).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..config import CLUSTER, RAY_CONNECT_TIMEOUT_S, RAY_PLACEMENT_TIMEOUT_S
from .base import ClusterUnreachableError, GroupLaunch, PlacementError, Waiter
from .ray_group import CALL_TIMEOUT_S, Placed, RayGroup, answered, first_line, launch_shape
from .ray_queue import RayQueue, bundle, holds
from .ray_runners import Runners, ask_bundle_gpus, bundle_machines, kill_runner, new_runner

if TYPE_CHECKING:
    from .base import Shaped as WorkloadSpec

log = logging.getLogger(__name__)

NAMESPACE = "jupyter-air"


def probe(address: str, timeout_s: float) -> None:
    """Refuse at once an address where nothing answers: ``ray.init`` to it waits for minutes
    (its own retries) and then may still not raise. A ``host:port`` address must accept a TCP
    connection within ``timeout_s``; ``auto`` and the like are Ray's own lookup."""
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


class RayClientRefused(ClusterUnreachableError):
    """A Ray Client address (``ray://``): jupyter-air needs the Jupyter host to be a Ray node."""


def refuse_ray_client(address: str) -> None:
    """Refuse a Ray Client address at once, with the one setup that works. The nodes reach the
    embedded MLflow server through a relay on the address of the Jupyter host's own Ray node,
    and every supervisor, kernel and GPU agent is a Ray driver that Ray Client would run as a
    proxy process on the head, one per connection (Ray's docs: Ray Client "may not work as
    expected" for ML workloads). A GCS address works only from a Ray node too: a driver
    attaches to its own node's raylet."""
    if address.strip().lower().startswith("ray://"):
        raise RayClientRefused(
            f"{address} is a Ray Client address, which jupyter-air does not use: make the "
            "Jupyter host a node of the cluster — `ray start --address=HEAD:6379 --num-cpus=0 "
            "--num-gpus=0` on it (no work is placed there) — and use the head's GCS address "
            f"(HEAD:6379) or `ray` in RAY_ADDRESS (or c.JupyterAir.cluster / {CLUSTER}); "
            "see docs/clusters.md"
        )


@dataclass(frozen=True)
class RayNode:
    node_id: str
    ip: str
    cpus: float
    gpus: float

    def describe(self) -> str:
        gpus = f", {self.gpus:g} GPU" if self.gpus else ""
        return f"{self.ip} ({self.cpus:g} CPU{gpus})"


class RayBackend:
    name = "ray"

    def __init__(
        self, address: str | None = None, *, ask: Callable[[], list[RayNode] | None] | None = None
    ) -> None:
        self.address = address or os.environ.get("RAY_ADDRESS") or "auto"
        self._ask = ask  # the nodes from someone connected already (None: no one answered)
        self._connected = False
        self._owns = False  # connected by us (a kernel may have its own ray.init)
        self._nodes: list[RayNode] | None = None
        self.namespace = NAMESPACE
        self._reserved: dict[tuple[str, int], Any] = {}  # (job, attempt) → its placement group
        self.runners = Runners()  # idle node runners, for the next attempts (ray_runners.py)

    # the cluster -------------------------------------------------------------------------------
    def connect(self) -> None:
        import ray

        if self._connected and ray.is_initialized():
            return  # (a kernel's own ray.shutdown between two calls: connected again)
        if not ray.is_initialized():
            refuse_ray_client(self.address)
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
        """The cluster's live nodes: from the cluster's own status (a question to its GCS,
        no driver) while this process is not connected, so that a shape check (``air run``)
        costs no ``ray.init``; else as the connected driver sees them. Not connected, those
        asked first (``ask``: a standby supervisor) save even the ``import ray``."""
        found = None
        if not (self._connected and _initialized()):
            found = self._ask() if self._ask else None
            if found is None:
                found = self._nodes_from_gcs()
        if found is None:
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

    def _nodes_from_gcs(self) -> list[RayNode] | None:
        """The live nodes in the cluster's status; None when it cannot be read that way (the
        address is then for ``connect`` to refuse, with its own words)."""
        refuse_ray_client(self.address)
        probe(self.address, RAY_CONNECT_TIMEOUT_S.get())
        try:
            from ray._private.services import canonicalize_bootstrap_address_or_die
            from ray.autoscaler.v2.sdk import get_cluster_status

            gcs = canonicalize_bootstrap_address_or_die(self.address)
            status = get_cluster_status(gcs, timeout=int(RAY_CONNECT_TIMEOUT_S.get()))
        except Exception as error:
            log.debug("the cluster's status could not be read (%s): connecting", error)
            return None
        return [
            RayNode(
                node_id=node.node_id,
                ip=node.ip_address or "?",
                cpus=float(node.total_resources().get("CPU", 0)),
                gpus=float(node.total_resources().get("GPU", 0)),
            )
            for node in [*status.active_nodes, *status.idle_nodes]
        ]

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
        fitting = [n for n in nodes if holds(n.cpus, n.gpus, need)]
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
    def wait_for_room(self, waiter: Waiter) -> bool:
        """Hold the attempt's placement group, after its turn in the cluster's queue
        (``ray_queue.py``); False when cancelled meanwhile."""
        self.connect()
        group = RayQueue(self, waiter).wait()
        if group is None:
            return False
        self._reserved[(waiter.job_id, waiter.attempt)] = group
        return True

    def start(self, launch: GroupLaunch, kept: Placed | None = None) -> RayGroup:
        """Place the attempt's nodes (or take ``kept``: the placement group and actors of a
        previous call of the same shape, still held) and start its commands."""
        placed = self._reuse(launch, kept) if kept is not None else None
        placed = placed or self._place(launch)
        running = RayGroup(launch, placed)
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
            ray.get(_begin_all(kept.actors, launch, kept.gpus), timeout=CALL_TIMEOUT_S)
        except BaseException as error:
            kept.release()
            if not isinstance(error, Exception):
                raise  # an interrupt: nothing kept is left held
            log.info(
                "the kept nodes cannot serve this call (%s): placing new ones", first_line(error)
            )
            return None
        return kept

    def _place(self, launch: GroupLaunch) -> Placed:
        import ray
        from ray.util.placement_group import placement_group, remove_placement_group

        self.connect()
        shape = bundle(launch.accelerators, launch.uses_gpus)
        group = self._reserved.pop((launch.job_id, launch.attempt), None)
        if group is None:  # not queued (a call's nodes): placed now or refused
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
                    f"could not place {launch.num_nodes} nodes of {_shape(shape)} on "
                    f"different Ray nodes within {timeout:.0f} s ({type(error).__name__}); the "
                    f"cluster has {self.describe()}"
                ) from None
        try:
            return self._runners_for(launch, group, shape)
        except BaseException:
            remove_placement_group(group)
            raise

    def _runners_for(self, launch: GroupLaunch, group: Any, shape: dict[str, float]) -> Placed:
        """A runner ready for each node of ``launch`` on its bundle's Ray node: the idle one
        there (ray_runners.py), else a new one. An idle runner that does not answer (its Ray
        worker or node gone meanwhile) is replaced by a new one."""
        import ray

        count = len(launch.nodes)
        machines = bundle_machines(group, count)
        if shape.get("GPU"):  # the workers held there take the bundle tasks
            self.runners.free(machines)
        probes = ask_bundle_gpus(group, shape, count)  # while the runners are found or made
        idle = [self.runners.take(machine) for machine in machines]
        actors = [actor or new_runner(m) for actor, m in zip(idle, machines, strict=True)]
        try:
            gpus = ray.get(probes, timeout=120) if probes else [""] * count
            if probes:  # the workers they ran on, held for the next placement's
                for machine in machines:
                    self.runners.hold(machine)
            asks = _begin_all(actors, launch, gpus)
            ray.wait(asks, num_returns=len(asks), timeout=120)
            stale = [i for i, ask in enumerate(asks) if idle[i] is not None and not answered(ask)]
            for index in stale:
                log.info("the idle node runner on Ray node %s is gone", machines[index][:8])
                kill_runner(actors[index])
                actors[index] = new_runner(machines[index])
                asks[index] = _begin(actors[index], launch, index, gpus[index])
            ray.get(asks, timeout=120)
        except BaseException:
            for actor in actors:
                kill_runner(actor)
            raise
        return Placed(group, actors, launch_shape(launch), machines, gpus, self.runners)

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
        if self._connected:
            self.runners.end()
        if self._reserved:
            from ray.util.placement_group import remove_placement_group

            for group in self._reserved.values():
                remove_placement_group(group)
            self._reserved.clear()
        if self._connected and self._owns:
            import ray

            ray.shutdown()
        self._connected = self._owns = False


def _initialized() -> bool:
    import ray

    return bool(ray.is_initialized())


def _begin(actor: Any, launch: GroupLaunch, index: int, gpus: str) -> Any:
    """``actor`` readied for node ``index`` of ``launch``, with its bundle's GPUs."""
    node = launch.nodes[index].node
    return actor.begin.remote(launch.job_id, launch.attempt, node, launch.uses_gpus, gpus)


def _begin_all(actors: list[Any], launch: GroupLaunch, gpus: list[str]) -> list[Any]:
    """Each runner readied for its node of ``launch``."""
    return [_begin(a, launch, i, g) for i, (a, g) in enumerate(zip(actors, gpus, strict=True))]


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
