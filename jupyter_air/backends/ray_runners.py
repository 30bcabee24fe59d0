"""The node runners a Ray driver keeps between attempts, so that nodes placed anew start at once.

Most of what placing a node costs is Ray's: a new worker process for its actor, whose ``import
ray`` alone takes over a second. So a node's ``NodeRunner`` (ray_node.py) is not pinned to the
attempt's bundle: it is an actor of its own on the bundle's Ray node, asking for nothing
(``num_cpus=0``), that serves one attempt at a time. The placement group still reserves each
node's CPU and GPUs, and the GPUs a bundle holds are read by a small task placed in it
(``bundle_devices``; Ray runs it on an idle worker of the driver, which it keeps between tasks).
When an attempt's nodes are released after every command ended cleanly, their runners go back
here, one per Ray node, and the next attempt on that node takes it; any other end kills them.
Ray may end that idle worker meanwhile (it keeps as many idle workers on a node as the node
has CPUs free, and other work of the driver may take it): the next bundle's task then waits
for a new one, as a runner placed in the bundle would have.

Idle runners hold no resources, only their process on the node: they end with the backend
(``RayBackend.close``: a kernel keeps it ``KEEP_RUNNERS_S`` after its last call, a supervisor
until its job run ends) and with the driver that owns them (Ray ends a driver's actors with it).
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any

RUNNER_CONCURRENCY = 4  # a tick while a stop waits for its grace period


def kill_runner(actor: Any) -> None:
    """The runner's process ends (an actor already gone is no error)."""
    import ray

    with contextlib.suppress(Exception):
        ray.kill(actor)


class Runners:
    """At most one idle runner per Ray node, handed to one attempt at a time."""

    def __init__(self, kill: Callable[[Any], None] = kill_runner) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, Any] = {}  # Ray node id → its idle runner
        self._kill = kill

    def take(self, node_id: str) -> Any | None:
        """The idle runner on ``node_id``, now the caller's; None when there is none."""
        with self._lock:
            return self._idle.pop(node_id, None)

    def give_back(self, node_id: str, actor: Any) -> None:
        """``actor`` (its command ended, its folder gone) serves the next attempt on
        ``node_id``; a node that has an idle runner already keeps that one."""
        with self._lock:
            extra = actor if node_id in self._idle else None
            if extra is None:
                self._idle[node_id] = actor
        if extra is not None:
            self._kill(extra)

    def idle(self) -> int:
        with self._lock:
            return len(self._idle)

    def end(self) -> None:
        """Every idle runner ends (their processes go)."""
        with self._lock:
            idle, self._idle = list(self._idle.values()), {}
        for actor in idle:
            self._kill(actor)


def new_runner(node_id: str) -> Any:
    """A runner on Ray node ``node_id``: an actor that asks for no resources (the attempt's
    placement group holds them), ended with its owner."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    return (
        _remote_runner()
        .options(
            num_cpus=0,
            num_gpus=0,
            max_concurrency=RUNNER_CONCURRENCY,
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        )
        .remote()
    )


def bundle_machines(group: Any, count: int) -> list[str]:
    """The Ray node of each of the placement group's ``count`` bundles."""
    import ray

    table = ray.util.placement_group_table(group)["bundles_to_node_id"]
    return [str(table[index]) for index in range(count)]


def ask_bundle_gpus(group: Any, shape: dict[str, float], count: int) -> list[Any]:
    """The GPUs Ray gave each bundle (``"0,1"``), asked of a task placed in it: the calls, to
    ``ray.get``; none without GPUs."""
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    if not shape.get("GPU"):
        return []
    return [
        _remote_probe()
        .options(
            num_cpus=shape["CPU"],
            num_gpus=shape["GPU"],
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                group, placement_group_bundle_index=index
            ),
        )
        .remote()
        for index in range(count)
    ]


def warm_probe_worker(node_id: str) -> Any:
    """The bundle task's function run once on Ray node ``node_id``, holding nothing: Ray keeps
    the worker it started for it idle, and the next bundle task there runs on it at once."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
    return _remote_probe().options(num_cpus=0, scheduling_strategy=strategy).remote()


@functools.cache
def _remote_runner() -> Any:
    import ray

    from .ray_node import NodeRunner

    return ray.remote(NodeRunner)


@functools.cache
def _remote_probe() -> Any:
    import ray

    from .ray_node import bundle_gpus

    return ray.remote(bundle_gpus)
