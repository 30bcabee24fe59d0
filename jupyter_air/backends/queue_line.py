"""The line of a cluster's queue: who waits for resources, in which order, and who is next.

First come, first served: a ticket's place is its ``since`` (when its job run first asked,
by the submitting machine's clock), then its id. Only the first ticket may take resources; the
others wait behind it even when a smaller shape would fit (no job run is passed over forever).
Each waiter renews its ticket while it waits (``beat``); a ticket not renewed for ``stale_s``
is dropped (its supervisor died), so a line never blocks on a job run that is gone. The line
keeps nothing its waiters cannot give back: renewing an unknown ticket puts it back at its
place, so a line lost with the process that held it (a restarted queue actor) is rebuilt by the
waiters within one beat, in the same order.

Pure Python, no Ray: the Ray queue (``ray_queue.py``) holds one in a detached actor that every
Jupyter server and shell using the cluster reaches; the tests drive it directly.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

STALE_S = 30.0  # a ticket not renewed for this long is dropped: its waiter is gone
MAX_TICKETS = 10_000  # a line longer than this refuses new tickets
AHEAD_SHOWN = 3  # the tickets ahead that a waiter is told about


@dataclass(frozen=True)
class Ticket:
    """One job run's (attempt's) wait: ``id`` is unique on the cluster (job id and attempt)."""

    id: str
    job_id: str
    since: float  # when the job run first asked (the submitting machine's clock)
    user: str = ""
    shape: str = ""  # what it waits for, for people: "3 nodes with 2 GPU and 1 CPU each"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Place:
    """A waiter's place: ``position`` 1 is next (the one that may take resources)."""

    position: int
    total: int
    ahead: list[dict[str, Any]] = field(default_factory=list)  # the first few, as tickets


class LineFull(RuntimeError):
    pass


class QueueLine:
    def __init__(
        self, stale_s: float = STALE_S, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stale_s = stale_s
        self.clock = clock
        self._tickets: dict[str, Ticket] = {}
        self._seen: dict[str, float] = {}

    def beat(self, ticket: Ticket | dict[str, Any]) -> Place:
        """Enter the line, or renew a place in it; where the ticket stands now."""
        if isinstance(ticket, dict):
            ticket = Ticket(**ticket)
        self._drop_stale()
        if ticket.id not in self._tickets and len(self._tickets) >= MAX_TICKETS:
            raise LineFull(f"the cluster's queue holds {MAX_TICKETS} job runs already")
        self._tickets[ticket.id] = ticket
        self._seen[ticket.id] = self.clock()
        order = self.order()
        index = next(i for i, t in enumerate(order) if t.id == ticket.id)
        ahead = [t.to_dict() for t in order[:index][:AHEAD_SHOWN]]
        return Place(position=index + 1, total=len(order), ahead=ahead)

    def leave(self, ticket_id: str) -> bool:
        """Out of the line (resources taken, cancelled, timed out); False if it was not in."""
        self._seen.pop(ticket_id, None)
        return self._tickets.pop(ticket_id, None) is not None

    def order(self) -> list[Ticket]:
        return sorted(self._tickets.values(), key=lambda t: (t.since, t.id))

    def listing(self) -> list[dict[str, Any]]:
        self._drop_stale()
        return [t.to_dict() for t in self.order()]

    def _drop_stale(self) -> None:
        now = self.clock()
        for ticket_id in [k for k, seen in self._seen.items() if now - seen > self.stale_s]:
            self.leave(ticket_id)


def behind(place: Place) -> str:
    """Who is ahead, for people: "behind job run 3f2a… (bob, waiting since 14:02)"."""
    shown = []
    for ticket in place.ahead:
        when = time.strftime("%H:%M", time.localtime(ticket["since"]))
        who = f"{ticket['user']}, " if ticket.get("user") else ""
        shown.append(f"{ticket['job_id']} ({who}submitted {when})")
    more = place.position - 1 - len(shown)
    listed = ", ".join(shown) + (f" and {more} more" if more > 0 else "")
    runs = "job run" if place.position == 2 else "job runs"
    return f"behind {runs} {listed}"
