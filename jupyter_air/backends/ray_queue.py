"""The Ray cluster's queue: job runs that fit the cluster but not what is free now wait here,
first come first served, whichever Jupyter server or shell submitted them.

The line (``queue_line.py``) lives in the cluster itself, in one detached actor
(``jupyter-air-queue`` in the ``jupyter-air`` namespace, no CPU) that every supervisor
connected to the cluster reaches, so two Jupyter servers on one cluster share one line. Each
waiting supervisor renews its ticket every ``BEAT_S``. The first in line creates its attempt's
placement group and leaves the line once Ray has placed it; the attempt then starts on it
(``RayBackend.start``). The others wait behind it, told their place and what the cluster has
free. A supervisor that dies leaves the line within ``STALE_S``; a lost queue actor (its node
gone) is made again by the next beat and refilled by the waiters' own tickets, in their order.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ..rendering import ordinal
from .base import PlacementError, Waiter
from .queue_line import Place, QueueLine, Ticket, behind

if TYPE_CHECKING:
    from .ray_backend import RayBackend

log = logging.getLogger(__name__)

QUEUE_ACTOR = "jupyter-air-queue"
BEAT_S = 1.0  # how often a waiter renews its ticket and looks again
FIRST_LOOK_S = 2.0  # placed within this long: the job run never shows QUEUED
LINE_CALL_S = 30.0  # a beat unanswered this long: the queue actor is looked up again
LOST_AFTER_S = 120.0  # the queue actor unreachable this long: the attempt fails


def bundle(accelerators: int, uses_gpus: bool) -> dict[str, float]:
    """What each node of an attempt holds on its Ray node."""
    return {"GPU": float(accelerators), "CPU": 1.0} if uses_gpus else {"CPU": 1.0}


def holds(cpus: float, gpus: float, need: dict[str, float]) -> bool:
    """Whether a node with ``cpus`` and ``gpus`` (in all, or free) holds one ``bundle``."""
    return cpus >= need["CPU"] and gpus >= need.get("GPU", 0)


class LineKeeper:
    """The detached actor that holds the cluster's line (one call at a time)."""

    def __init__(self) -> None:
        self.line = QueueLine()

    def beat(self, ticket: dict[str, Any]) -> dict[str, Any]:
        return asdict(self.line.beat(ticket))

    def leave(self, ticket_id: str) -> bool:
        return self.line.leave(ticket_id)


def line_keeper(namespace: str) -> Any:
    """The cluster's queue actor, made by the first who asks."""
    import ray

    return (
        ray.remote(LineKeeper)
        .options(
            name=QUEUE_ACTOR,
            namespace=namespace,
            lifetime="detached",
            get_if_exists=True,
            num_cpus=0,
        )
        .remote()
    )


class RayQueue:
    """One attempt's wait in the cluster's line, then its placement group held."""

    def __init__(self, backend: RayBackend, waiter: Waiter) -> None:
        self.backend = backend
        self.waiter = waiter
        self.ticket = Ticket(
            id=f"{waiter.job_id}/{waiter.attempt}",
            job_id=waiter.job_id,
            since=waiter.since,
            user=waiter.user,
            shape=waiter.describe(),
        )
        self.keeper: Any = None
        self.group: Any = None
        self.told: dict[str, Any] | None = None
        self.unanswered_since: float | None = None

    def wait(self) -> Any | None:
        """The placement group, ready; None when cancelled meanwhile."""
        from ray.util.placement_group import remove_placement_group

        waiter = self.waiter
        deadline = waiter.deadline()
        try:
            while True:
                place = self._beat()
                if place is not None and place.position == 1 and self.group is None:
                    self.group = self._placement_group()
                # the first in line waits on its placement group itself: it starts the moment
                # Ray places it, not at the next beat
                if self.group is not None and self._ready(
                    FIRST_LOOK_S if not self.told else BEAT_S
                ):
                    self._leave()
                    group, self.group = self.group, None
                    if self.told is not None:
                        waiter.placed()
                    return group
                self._tell(place)
                if waiter.cancelled():
                    return None
                if deadline is not None and time.monotonic() > deadline:
                    raise waiter.timed_out((self.told or {}).get("reason") or "resources")
                if self.group is None:
                    waiter.pause(BEAT_S)
        finally:
            if self.group is not None:
                remove_placement_group(self.group)
                self.group = None
            self._leave()

    # the line ----------------------------------------------------------------------------------
    def _beat(self) -> Place | None:
        import ray

        try:
            if self.keeper is None:
                self.keeper = line_keeper(self.backend.namespace)
            answer = ray.get(self.keeper.beat.remote(self.ticket.to_dict()), timeout=LINE_CALL_S)
        except Exception as error:  # the actor's node lost: made again at the next beat
            self.keeper = None
            now = time.monotonic()
            self.unanswered_since = self.unanswered_since or now
            if now - self.unanswered_since > LOST_AFTER_S:
                raise PlacementError(
                    f"the cluster's queue did not answer for {LOST_AFTER_S:.0f} s "
                    f"({type(error).__name__}: {error})"
                ) from None
            log.warning("the cluster's queue did not answer: %s", error)
            return None
        self.unanswered_since = None
        return Place(**answer)

    def _leave(self) -> None:
        if self.keeper is None:
            return
        try:
            self.keeper.leave.remote(self.ticket.id)  # its answer is not awaited
        except Exception as error:  # dropped as stale within STALE_S
            log.warning("leaving the cluster's queue: %s", error)

    def _tell(self, place: Place | None) -> None:
        if place is None:
            return
        if place.position == 1:
            reason = f"Waiting for {self.waiter.describe()}; {self._free_now()}"
        else:
            reason = f"{ordinal(place.position)} in line, {behind(place)}"
        told = {
            "position": place.position,
            "total": place.total,
            "ahead": [t["job_id"] for t in place.ahead],
            "reason": reason,
            "since": self.ticket.since,
            "cluster": self.backend.address,
        }
        if told != self.told:
            self.told = told
            self.waiter.queued(told)

    # the resources -----------------------------------------------------------------------------
    def _placement_group(self) -> Any:
        from ray.util.placement_group import placement_group

        shape = bundle(self.waiter.accelerators, self.waiter.accelerators > 0)
        return placement_group(
            [dict(shape) for _ in range(self.waiter.nodes)],
            strategy="STRICT_SPREAD",
            name=f"jupyter-air-{self.waiter.job_id}-{self.waiter.attempt}",
        )

    def _ready(self, timeout_s: float) -> bool:
        import ray

        ready, _ = ray.wait([self.group.ready()], timeout=timeout_s)
        return bool(ready)

    def _free_now(self) -> str:
        """How many nodes have the room free now ("1 is now"), or that the cluster has fewer
        nodes that could ever hold it than it needs (one was lost since the submission): it
        waits for nodes to join (an autoscaler's, a restarted one) rather than fail."""
        need = bundle(self.waiter.accelerators, self.waiter.accelerators > 0)
        nodes = self.backend.nodes()
        could = sum(1 for n in nodes if holds(n.cpus, n.gpus, need))
        if could < self.waiter.nodes:
            return (
                f"the cluster has {could or 'no'} node{'s' if could != 1 else ''} that could "
                "hold one now: it waits for nodes to join (queue_timeout_minutes limits the wait)"
            )
        try:
            from ray._private.state import available_resources_per_node

            free = available_resources_per_node()
        except Exception:  # a private call of Ray's: the reason goes without the count
            return "the cluster's resources are in use"
        alive = {n.node_id for n in nodes}
        fitting = sum(
            1
            for node_id, resources in free.items()
            if node_id in alive and holds(resources.get("CPU", 0), resources.get("GPU", 0), need)
        )
        verb = "is" if fitting == 1 else "are"
        return f"{fitting or 'none'} {verb} now"
