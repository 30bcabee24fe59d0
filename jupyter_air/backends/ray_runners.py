"""The node runners a Ray driver keeps between attempts, so that nodes placed anew start at once.

Most of what placing a node costs is Ray's: a new worker process for its actor, whose ``import
ray`` alone takes over a second. So a node's ``NodeRunner`` (ray_node.py) is not pinned to the
attempt's bundle: it is an actor of its own on the bundle's Ray node, asking for nothing
(``num_cpus=0``), that serves one attempt at a time. The placement group still reserves each
node's CPU and GPUs, and the GPUs a bundle holds are read by a small task placed in it
(``bundle_gpus``), which needs a Ray worker of the driver on that node. When an attempt's nodes
are released after every command ended cleanly, their runners go back here, one per Ray node,
and the next attempt on that node takes it; any other end kills them.

The worker for the bundle task is held too. An idle Ray worker does not last: Ray ends those a
node has more of than it has CPUs free, and gives them to the driver's other work (a Ray Train
run's actors take them), so the next bundle task would wait for a new worker (2.5 s on a 2-core
machine, most of it ``import ray``). So once a bundle task has run on a node, a task that holds
no resources keeps that worker of the driver busy (``ray_node.stand_by``); the next placement
there cancels it first (``free``), and its bundle task runs on that worker at once.

Idle runners and held workers hold no resources, only their process on the node: they end with
the backend (``RayBackend.close``: a kernel keeps it ``KEEP_RUNNERS_S`` after its last call, a
supervisor until its job run ends) and with the driver that owns them (Ray ends a driver's actors
and tasks with it); a hold ends by itself after ``KEEP_RUNNERS_S``.
"""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable
from typing import Any

RUNNER_CONCURRENCY = 4  # a tick while a stop waits for its grace period
FREE_WAIT_S = 2.0  # a cancelled hold ends within 0.05 s; past this the bundle task goes on


def kill_runner(actor: Any) -> None:
    """The runner's process ends (an actor already gone is no error)."""
    import ray

    with contextlib.suppress(Exception):
        ray.kill(actor)


def hold_worker(node_id: str) -> Any | None:
    """A task that keeps a worker of this driver busy on Ray node ``node_id``, holding no
    resources, as long as the runners are kept (``KEEP_RUNNERS_S``); None when they are not."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from ..config import KEEP_RUNNERS_S

    seconds = KEEP_RUNNERS_S.get()
    if not seconds:
        return None
    strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
    options = {"num_cpus": 0, "max_retries": 0, "scheduling_strategy": strategy}
    return _remote_stand_by().options(**options).remote(seconds)


def free_workers(holds: list[Any], wait_s: float = FREE_WAIT_S) -> None:
    """The tasks ``holds`` cancelled and, within ``wait_s``, ended: their workers are idle."""
    import ray

    for hold in holds:
        with contextlib.suppress(Exception):  # ended already
            ray.cancel(hold)
    if holds and wait_s > 0:
        with contextlib.suppress(Exception):
            ray.wait(holds, num_returns=len(holds), timeout=wait_s)


class Runners:
    """At most one idle runner per Ray node, handed to one attempt at a time; and on GPU nodes
    a worker of the driver held for the next bundle task."""

    def __init__(
        self,
        kill: Callable[[Any], None] = kill_runner,
        hold: Callable[[str], Any] = hold_worker,
        free: Callable[[list[Any]], None] = free_workers,
    ) -> None:
        self._lock = threading.Lock()
        self._idle: dict[str, Any] = {}  # Ray node id → its idle runner
        self._held: dict[str, Any] = {}  # Ray node id → the task holding a worker there
        self._kill = kill
        self._hold = hold
        self._free = free

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

    def hold(self, node_id: str) -> None:
        """A worker of the driver held on ``node_id`` for its next bundle task (once; submitting
        the task does not wait for it)."""
        with self._lock:
            if node_id not in self._held:
                task = self._hold(node_id)
                if task is not None:
                    self._held[node_id] = task

    def held(self) -> list[str]:
        with self._lock:
            return sorted(self._held)

    def free(self, node_ids: list[str]) -> None:
        """The workers held on ``node_ids`` free for the bundle tasks about to be placed."""
        with self._lock:
            holds = [self._held.pop(node) for node in set(node_ids) if node in self._held]
        if holds:
            self._free(holds)

    def end(self) -> None:
        """Every idle runner ends (their processes go), every held worker is let go."""
        with self._lock:
            idle, self._idle = list(self._idle.values()), {}
            held, self._held = list(self._held.values()), {}
        for actor in idle:
            self._kill(actor)
        if held:
            self._free(held)


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
    """The bundle task's function run once on Ray node ``node_id``, holding nothing: a worker
    of this driver started there, for ``Runners.hold`` to keep."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    strategy = NodeAffinitySchedulingStrategy(node_id, soft=False)
    return _remote_probe().options(num_cpus=0, scheduling_strategy=strategy).remote()


@functools.cache
def _remote_runner() -> Any:
    import ray

    from .ray_node import NodeRunner

    return ray.remote(NodeRunner)


@functools.cache
def _remote_stand_by() -> Any:
    import ray

    from .ray_node import stand_by

    return ray.remote(stand_by)


@functools.cache
def _remote_probe() -> Any:
    import ray

    from .ray_node import bundle_gpus

    return ray.remote(bundle_gpus)
