"""A kernel's Ray connection and the nodes of its last ``nodes=M`` call, kept for the next call.

Half of a ``.distributed(nodes=M)`` call's start is Ray's: a new worker process for each node's
actor, and the placement group. A notebook runs the same call again and again, so when a call
ends cleanly (every node's command ended on its own, nothing left, no node lost, not
interrupted) its placement group and actors are kept for ``keep_nodes`` seconds (default 60,
``KEEP_NODES_S`` in config.py); the next call of the same shape (nodes, GPUs per node) takes them
and starts at once. What is kept holds its bundles — the nodes' GPUs — so it yields: a watcher
thread releases it as soon as the cluster has a demand waiting (a placement group, task or
actor that is pending, anyone's), when its time runs out, when a call of another shape comes,
and with the kernel (Ray ends a driver's actors and placement groups with it).
``keep_nodes=0``: released at the end of every call, as a Ray Train run is.

Released nodes leave their runners behind (backends/ray_runners.py: one Ray worker process per
Ray node, holding no resources), so a call placed anew starts without new Ray workers too. The
connection and those runners stay ``KEEP_RUNNERS_S`` (config.py, default 600 s) after the
kernel's last call, then end.

One ``KeptNodes`` per process, made at the first ``nodes=M`` call, never at import.
"""

from __future__ import annotations

import contextlib
import threading
import time
from typing import TYPE_CHECKING

from ..config import KEEP_NODES_S, KEEP_RUNNERS_S

if TYPE_CHECKING:
    from ..backends.ray_backend import RayBackend
    from ..backends.ray_group import Placed

WATCH_S = 0.5  # how often what is kept looks for a demand waiting on the cluster
WATCH_GRACE_S = 2.0


def keep_seconds(option: float | None) -> float:
    """The option, else ``KEEP_NODES_S`` (config.py), else 60 s."""
    if option is not None:
        return float(option)
    return KEEP_NODES_S.get()


class KeptNodes:
    """The process's Ray backend (one connection, kept while a call uses it or nodes are kept)
    and at most one kept placement."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._backend: RayBackend | None = None
        self._placed: Placed | None = None
        self._watching: threading.Event | None = None  # set: the watcher stops
        self._users = 0
        self._idle_timer: threading.Timer | None = None  # ends an idle backend's runners

    def backend(self, address: str | None) -> RayBackend:
        """The backend for a call (counted until ``done``): the kept one when the address is the
        same, else a new one (what was kept on another cluster is released)."""
        from ..backends.ray_backend import RayBackend

        fresh = RayBackend(address)
        with self._lock:
            self._stop_idle_timer_locked()
            if self._backend is not None and self._backend.address == fresh.address:
                self._users += 1
                return self._backend
            if self._users > 0:
                return fresh  # another call holds the other cluster's: this one is the call's
            old = self._drop_locked()
            self._backend, self._users = fresh, 1
        _release(*old)
        return fresh

    def take(self, shape: tuple[int, int, bool]) -> Placed | None:
        """The kept placement when it has this shape; anything else kept is released."""
        with self._lock:
            placed, self._placed = self._placed, None
            self._stop_watching_locked()
        if placed is None:
            return None
        if placed.shape == shape:
            return placed
        _release(placed, None)
        return None

    def keep(self, placed: Placed, keep_s: float) -> None:
        """Hold ``placed`` for the next call for ``keep_s`` seconds at most, or until the cluster
        has a demand waiting (what was kept is released)."""
        gcs = _gcs_address()
        stop = threading.Event()
        with self._lock:
            old, self._placed = self._placed, placed
            self._stop_watching_locked()
            self._watching = stop
        threading.Thread(
            target=self._watch,
            args=(placed, time.monotonic() + keep_s, gcs, stop),
            name="jupyter-air-kept-nodes",
            daemon=True,
        ).start()
        _release(old, None)

    def _watch(
        self, placed: Placed, deadline: float, gcs: str | None, stop: threading.Event
    ) -> None:
        # the cluster's report lags: the kept group's own placement may still show as waiting
        # for a moment, so a demand counts after WATCH_GRACE_S, seen twice in a row
        quiet_until = time.monotonic() + WATCH_GRACE_S
        own = _placement_id(placed)
        seen = 0
        while not stop.wait(WATCH_S):
            now = time.monotonic()
            seen = seen + 1 if now >= quiet_until and _demanded(gcs, own) else 0
            if now >= deadline or seen >= 2:
                self._expire(placed)
                return

    def done(self, backend: RayBackend) -> None:
        """A call no longer uses ``backend``: disconnected when nothing else needs it (after
        ``KEEP_RUNNERS_S`` when it has runners standing by)."""
        with self._lock:
            self._users = max(0, self._users - 1)
            shared = backend is self._backend
        if shared:
            self._when_idle()
        else:
            with contextlib.suppress(Exception):
                backend.close()

    def release(self) -> None:
        """Release what is kept now (its runners stand by; the connection goes when no call
        runs and none does)."""
        with self._lock:
            placed, self._placed = self._placed, None
            self._stop_watching_locked()
        _release(placed, None)
        self._when_idle()

    def _expire(self, placed: Placed) -> None:
        with self._lock:
            if self._placed is not placed:
                return  # taken or replaced meanwhile
            self._placed = None
            self._stop_watching_locked()
        _release(placed, None)
        self._when_idle()

    def _when_idle(self) -> None:
        """With no call running and nothing kept: the backend closed now, or when
        ``KEEP_RUNNERS_S`` have passed while runners stand by."""
        keep_s = KEEP_RUNNERS_S.get()
        with self._lock:
            backend = self._backend
            if backend is None or self._users > 0 or self._placed is not None:
                return
            self._stop_idle_timer_locked()
            if keep_s > 0 and backend.runners.idle():
                timer = threading.Timer(keep_s, self._idle_for_long, args=(backend,))
                timer.name, timer.daemon = "jupyter-air-node-runners", True
                self._idle_timer = timer
                timer.start()
                return
            self._backend = None
        _release(None, backend)

    def _idle_for_long(self, backend: RayBackend) -> None:
        with self._lock:
            if self._backend is not backend or self._users > 0 or self._placed is not None:
                return  # used again meanwhile
            self._backend, self._idle_timer = None, None
        _release(None, backend)

    def _drop_locked(self) -> tuple[Placed | None, RayBackend | None]:
        """What is kept, and the backend when no call uses it, taken out to be released."""
        placed, self._placed = self._placed, None
        self._stop_watching_locked()
        backend = None
        if self._users == 0:
            backend, self._backend = self._backend, None
        return placed, backend

    def _stop_idle_timer_locked(self) -> None:
        if self._idle_timer is not None:
            self._idle_timer.cancel()
            self._idle_timer = None

    def _stop_watching_locked(self) -> None:
        if self._watching is not None:
            self._watching.set()
            self._watching = None


def _gcs_address() -> str | None:
    with contextlib.suppress(Exception):
        import ray

        return str(ray.get_runtime_context().gcs_address)
    return None


def _placement_id(placed: Placed) -> str | None:
    with contextlib.suppress(Exception):
        return str(placed.placement.id.hex())
    return None


def _demanded(gcs: str | None, own: str | None) -> bool:
    """Whether something waits on the cluster for resources (anyone's placement group but the
    kept one, task or actor): then what is kept goes, so that it never keeps a job waiting."""
    if gcs is None:
        return False
    try:
        from ray.autoscaler.v2.sdk import get_cluster_status

        demands = get_cluster_status(gcs, timeout=2).resource_demands
    except Exception:
        return False  # cannot tell: the time limit still holds
    groups = [d.pg_id for d in demands.placement_group_demand if d.pg_id and d.pg_id != own]
    return bool(_still_waiting(groups) or demands.ray_task_actor_demand)


def _still_waiting(groups: list[str]) -> list[str]:
    """Of these placement groups (from the cluster's status, which lags by seconds on a busy
    cluster: a group placed or removed since may still show), those the GCS has waiting now."""
    if not groups:
        return []
    try:
        import ray

        table = ray.util.placement_group_table()
    except Exception:
        return groups  # cannot tell: as reported
    return [g for g in groups if table.get(g, {}).get("state") in ("PENDING", "RESCHEDULING")]


def _release(placed: Placed | None, backend: RayBackend | None) -> None:
    """``placed`` released (it was kept: its commands ended cleanly, so its runners stand by),
    then ``backend`` closed (the runners standing by end)."""
    if placed is not None:
        with contextlib.suppress(Exception):
            placed.release(clean=True)
    if backend is not None:
        with contextlib.suppress(Exception):
            backend.close()


_kept: KeptNodes | None = None
_kept_lock = threading.Lock()


def kept_nodes() -> KeptNodes:
    """This process's ``KeptNodes``, made at first use."""
    global _kept
    with _kept_lock:
        if _kept is None:
            _kept = KeptNodes()
        return _kept
