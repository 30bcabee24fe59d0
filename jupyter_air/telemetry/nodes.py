"""The nodes that node agents report, on the server: per node its history (the same ring buffer
as the server's own), what it said about itself, and whether it still reports.

A node is **live** while it reports (samples, or heartbeats while idle); **stale** once it has
been silent for 3 of its intervals; **lost** after ``lost_after_s``; it is live again with its
next report. Times are the server's clock (injectable), except the samples' own ``t`` (the node's
clock; a report dated far ahead of the server's is refused, as it would hide every later sample).
All mutation happens on one thread (the server's event loop).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .history import LATEST_ONLY, History
from .models import IngestRequest, NodeState
from .models import Sample as SampleModel

STALE_INTERVALS = 3
MAX_NODES = 1024
MAX_AHEAD_S = 600.0  # a sample dated later than this after the server's now is refused

Encoded = tuple[float, str, SampleModel]  # a sample's t, its history form, the sample
WIRE_EXCLUDE = {"gpus": {"__all__": set(LATEST_ONLY)}}


def encode(request: IngestRequest) -> list[Encoded]:
    """A report's samples as the history keeps them (CPU work: off the event loop when big):
    the wire form straight from the validated model (what ``history.wire_form`` makes of its
    dict, without building the dict); the newest sample is kept as its model."""
    return [(m.t, m.model_dump_json(exclude=WIRE_EXCLUDE), m) for m in request.samples]


class TooManyNodes(Exception):
    """The server keeps at most MAX_NODES agent nodes."""


class ClockAhead(ValueError):
    """A report's samples are dated too far ahead of the server's clock."""


@dataclass
class NodeRecord:
    name: str
    history: History
    interval_s: float
    last_seen: float
    changed_at: float  # server time of the last change a panel would show
    sampling: bool = False
    holds: list[str] = field(default_factory=list)
    error: str | None = None
    info: dict[str, Any] | None = None
    agent_version: str | None = None

    def state(self, now: float, lost_after_s: float) -> NodeState:
        silent = now - self.last_seen
        if silent > max(lost_after_s, self.stale_after_s):
            return "lost"
        if silent > self.stale_after_s:
            return "stale"
        return "live"

    @property
    def stale_after_s(self) -> float:
        return STALE_INTERVALS * self.interval_s

    def changed_since(self, since: float, now: float, lost_after_s: float) -> bool:
        """Whether a panel that saw the node at server time ``since`` must be told again."""
        if self.changed_at > since:
            return True
        stale_at = self.last_seen + self.stale_after_s
        lost_at = self.last_seen + max(lost_after_s, self.stale_after_s)
        return any(since < at <= now for at in (stale_at, lost_at))


@dataclass(eq=False, kw_only=True)
class NodeRegistry:
    """Agent nodes by name. ``min_interval_s`` sizes each node's ring buffer: a node sampling
    faster than that keeps less than ``history_s``, so memory stays bounded per node."""

    history_s: float
    min_interval_s: float
    lost_after_s: float
    clock: Callable[[], float] = time.time
    max_nodes: int = MAX_NODES
    _nodes: dict[str, NodeRecord] = field(default_factory=dict, init=False)

    def __contains__(self, name: str) -> bool:
        return name in self._nodes

    def get(self, name: str) -> NodeRecord | None:
        return self._nodes.get(name)

    def names(self) -> list[str]:
        return sorted(self._nodes)

    def now(self) -> float:
        return self.clock()

    def state(self, record: NodeRecord) -> NodeState:
        return record.state(self.clock(), self.lost_after_s)

    def ingest(self, request: IngestRequest, encoded: list[Encoded] | None = None) -> int:
        """Apply a validated report; returns how many samples were stored (samples not newer
        than the node's latest — a report sent twice — are skipped). ``encoded``: the samples
        with their history form (``encode``), when already encoded (off the event loop)."""
        now = self.clock()
        ahead = max((s.t for s in request.samples), default=now) - now
        if ahead > MAX_AHEAD_S:
            raise ClockAhead(
                f"Node {request.node!r} dates its samples {ahead:.0f} s ahead of this server's "
                "clock: synchronise the clocks of the node and the Jupyter host (NTP)."
            )
        record = self._nodes.get(request.node)
        if record is None:
            if len(self._nodes) >= self.max_nodes:
                raise TooManyNodes(
                    f"This server keeps at most {self.max_nodes} nodes; node {request.node!r} "
                    "was not added."
                )
            interval = max(request.agent.interval_s, self.min_interval_s)
            record = NodeRecord(
                request.node,
                History(self.history_s, interval, clock=self.clock),
                request.agent.interval_s,
                last_seen=now,
                changed_at=now,
            )
            self._nodes[request.node] = record
        if record.state(now, self.lost_after_s) != "live":
            record.changed_at = now  # back
        before = (record.sampling, record.holds, record.error, record.interval_s)
        record.last_seen = now
        record.interval_s = request.agent.interval_s
        record.sampling = request.sampling
        record.holds = list(request.holds)
        record.error = request.error
        record.agent_version = request.agent.version
        if request.info is not None:
            info = request.info.model_dump(mode="json")
            if info != record.info:
                record.info = info
                record.changed_at = now
        if before != (record.sampling, record.holds, record.error, record.interval_s):
            record.changed_at = now
        if encoded is None:
            encoded = encode(request)
        latest = record.history.latest()
        newest = latest.t if latest is not None else float("-inf")
        fresh: list[Encoded] = []
        for item in sorted(encoded, key=lambda item: item[0]):
            if item[0] > newest:
                fresh.append(item)
                newest = item[0]
        for t, wire, _ in fresh[:-1]:
            record.history.append_wire(t, wire)
        if fresh:
            _, wire, model = fresh[-1]
            record.history.append_model(model, wire)
            record.changed_at = now
        return len(fresh)
