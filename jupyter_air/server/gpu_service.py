"""The GPU telemetry service of one Jupyter server: its own node (one sampler, one history, one
poll loop) and the nodes that agents report (``telemetry/nodes.py``), with one idle rule for all.

Created when the extension loads (cheap, nothing started); the poll loop starts on the first
request or hold, on the server's event loop. Builds the payloads of the GPU API
(``telemetry/models.py``); the large bodies (a panel opening on two hours of history) are assembled
from pre-encoded samples and compressed off the event loop, and a large cluster overview's rows
are encoded there too (from the samples' validated models, without a second validation).
"""

from __future__ import annotations

import asyncio
import gzip
import math
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NamedTuple

from pydantic_core import to_json

from ..tasks import cancel_and_wait
from ..telemetry import History, Hold, PollLoop, Sampler, create_backend
from ..telemetry.agent_tokens import AgentTokens
from ..telemetry.history import Entry
from ..telemetry.hold_files import live_holds
from ..telemetry.models import (
    ClusterOverview,
    GpuPayload,
    GpuReading,
    GpuSummary,
    GpuValues,
    IngestRequest,
    IngestResponse,
)
from ..telemetry.models import Sample as SampleModel
from ..telemetry.nodes import STALE_INTERVALS, Encoded, NodeRecord, NodeRegistry
from ..telemetry.samples import KernelOwner

GZIP_MIN_BYTES = 1024
OFFLOAD_MIN_BYTES = 64 * 1024
OFFLOAD_MIN_ROWS = 64  # an overview with more rows to encode is made off the event loop
READING_ONLY = tuple(GpuReading.model_fields.keys() - GpuValues.model_fields.keys())


class NodeConflict(Exception):
    """An agent reports under the name of the Jupyter host's own node."""


class GpuService:
    def __init__(
        self,
        *,
        backend: str = "auto",
        simulated_gpus: int = 4,
        interval_s: float = 10.0,
        history_s: float = 7200.0,
        idle_timeout_s: float = 300.0,
        lost_after_s: float = 300.0,
        node: str | None = None,
        owners: Callable[[], Awaitable[dict[int, KernelOwner]]] | None = None,
        data_dir: Path | None = None,
    ) -> None:
        self.sampler = Sampler(create_backend(backend, simulated_gpus), node=node or None)
        self.history = History(history_s, interval_s)
        self.nodes = NodeRegistry(
            history_s=history_s, min_interval_s=interval_s, lost_after_s=lost_after_s
        )
        self.tokens = AgentTokens(data_dir) if data_dir is not None else None
        self._summaries: dict[str, tuple[tuple[float, float, str], str]] = {}  # overview parts
        self.poll_loop = PollLoop(
            self.sampler.sample,
            self.history,
            interval_s=interval_s,
            idle_timeout_s=idle_timeout_s,
            context=owners,
            close=self.sampler.close,
        )
        self._hold_watcher: asyncio.Task[None] | None = None
        self._file_holds: dict[str, Hold] = {}

    def watch_hold_files(self, data_dir: Path, interval_s: float = 2.0) -> None:
        """Hold sampling awake while processes of this node (kernels running `.distributed()`,
        workload supervisors) say they train, through files in ``<data_dir>/gpu-holds``.
        Call on the running event loop; runs until ``stop()``."""
        if self._hold_watcher is None:
            self._hold_watcher = asyncio.get_running_loop().create_task(
                self._watch_hold_files(data_dir, interval_s), name="jupyter-air-gpu-holds"
            )

    async def _watch_hold_files(self, data_dir: Path, interval_s: float) -> None:
        loop = asyncio.get_running_loop()
        try:
            while True:
                live = await loop.run_in_executor(None, live_holds, data_dir)
                for name, reason in live.items():
                    if name not in self._file_holds:
                        self._file_holds[name] = self.hold(reason)
                for name in [n for n in self._file_holds if n not in live]:
                    self._file_holds.pop(name).release()
                await asyncio.sleep(interval_s)
        finally:
            for hold in self._file_holds.values():
                hold.release()
            self._file_holds.clear()

    def ensure_started(self) -> None:
        """Start the poll loop on the running event loop (idempotent)."""
        if not self.poll_loop.running:
            self.poll_loop.start()

    def hold(self, reason: str) -> Hold:
        """Keep sampling while something managed by jupyter-air runs on this node."""
        self.ensure_started()
        return self.poll_loop.hold(reason)

    async def stop(self) -> None:
        watcher, self._hold_watcher = self._hold_watcher, None
        await cancel_and_wait(watcher)
        await self.poll_loop.stop()

    # requests ----------------------------------------------------------------------------
    @property
    def node(self) -> str:
        return self.sampler.node

    def knows(self, node: str) -> bool:
        return node == self.node or node in self.nodes

    async def on_request(self, node: str | None = None, *, refresh: bool = False) -> bool:
        """Count a panel request as activity (waking agents at their next report and this
        node's sampling now); returns whether sampling was paused. For this node, a paused
        loop takes a fresh sample first (``refresh``: a sample now, whatever its state)."""
        self.ensure_started()
        loop = self.poll_loop
        if node is not None and node != self.node:
            was_paused = not loop.watched
            loop.touch()
            return was_paused
        was_paused = loop.paused
        if refresh:
            await loop.refresh()
        else:
            await loop.on_request()
        return was_paused

    async def on_overview_request(self) -> bool:
        """Count an overview request as activity; returns whether the cluster was idle (agents
        told not to sample) before it."""
        self.ensure_started()
        was_idle = not self.poll_loop.watched
        await self.poll_loop.on_request()
        return was_idle

    # payloads ----------------------------------------------------------------------------
    def payload(
        self, since: float | None = None, *, resumed: bool = False, node: str | None = None
    ) -> str:
        """``GET air/api/gpu``: a node's devices, state, latest sample and history."""
        record = self.nodes.get(node) if node not in (None, self.node) else None
        if record is not None:
            head = self._agent_payload(record, resumed)
            entries = record.history.since(since)
        else:
            head = self._own_payload(resumed)
            entries = self.history.since(since)
        return _splice(head.model_dump_json(), "samples", [e.wire for e in entries])

    def _own_payload(self, resumed: bool) -> GpuPayload:
        latest = self.history.latest()
        loop = self.poll_loop
        return GpuPayload.model_validate(
            {
                **self.sampler.info(),
                "source": "server",
                "state": "live",
                "last_seen": latest.t if latest is not None else None,
                "interval_s": loop.interval_s,
                "history_s": self.history.window_s,
                "idle_timeout_s": loop.idle_timeout_s,
                "paused": loop.paused,
                "resumed": resumed,
                "held_by": loop.held_by,
                "error": loop.last_error,
                "now": round(time.time(), 3),
                "latest": latest.sample if latest is not None else None,
                "samples": [],
            }
        )

    def _agent_payload(self, record: NodeRecord, resumed: bool) -> GpuPayload:
        latest = record.history.latest()
        return GpuPayload.model_validate(
            {
                **self._agent_info(record),
                "source": "agent",
                "state": self.nodes.state(record),
                "last_seen": round(record.last_seen, 3),
                "interval_s": record.interval_s,
                "history_s": self.nodes.history_s,
                "idle_timeout_s": self.poll_loop.idle_timeout_s,
                "paused": not record.sampling,
                "resumed": resumed,
                "held_by": record.holds,
                "error": record.error,
                "now": round(self.nodes.now(), 3),
                "latest": latest.sample if latest is not None else None,
                "samples": [],
            }
        )

    @staticmethod
    def _agent_info(record: NodeRecord) -> dict[str, Any]:
        if record.info is not None:
            return record.info
        return {
            "node": record.name,
            "backend": None,
            "reason": "The agent has not sampled yet: it starts when a panel asks.",
            "devices": [],
            "driver_version": None,
        }

    async def overview(self, since: float | None = None, *, resumed: bool = False) -> str:
        """``GET air/api/gpu/nodes`` (a ``ClusterOverview``): every node's latest values and
        health, sorted by name. Each agent node's row is encoded once per change of what it
        shows, so a panel polling a quiet cluster costs a join. When many rows are to be encoded
        (a panel's poll after every node of a large cluster reported), they and the join are made
        off the event loop, from what the nodes showed when the request came (taken on the loop,
        where all mutation happens; a stored sample's model and a node's info are replaced,
        never changed)."""
        now = self.nodes.now()
        rows: dict[str, str | Row] = {self.node: self._own_row()}
        for name in self.nodes.names():
            record = self.nodes.get(name)
            assert record is not None
            if since is None or record.changed_since(since, now, self.nodes.lost_after_s):
                rows[name] = self._agent_row(record)
        loop = self.poll_loop
        head = ClusterOverview(
            now=math.floor(now * 1000) / 1000,  # a panel's next `since`: never past a change
            since=since,
            interval_s=loop.interval_s,
            idle_timeout_s=loop.idle_timeout_s,
            stale_after_intervals=STALE_INTERVALS,
            lost_after_s=self.nodes.lost_after_s,
            paused=not loop.watched,
            resumed=resumed,
            node_names=sorted([self.node, *self.nodes.names()]),
            nodes=[],
        ).model_dump_json()
        if sum(isinstance(row, Row) for row in rows.values()) < OFFLOAD_MIN_ROWS:
            text, built = overview_text(head, rows)
        else:
            run = asyncio.get_running_loop().run_in_executor
            text, built = await run(None, overview_text, head, rows)
        for name, (key, part) in built.items():
            if key is not None:
                self._summaries[name] = (key, part)
        return text

    def _own_row(self) -> Row:
        latest = self.history.latest()
        loop = self.poll_loop
        status = {
            "source": "server",
            "state": "live",
            "last_seen": latest.t if latest is not None else None,
            "interval_s": loop.interval_s,
            "paused": loop.paused,
            "held_by": list(loop.held_by),
            "error": loop.last_error,
        }
        return Row(None, self.sampler.info(), status, _latest_model(latest))

    def _agent_row(self, record: NodeRecord) -> str | Row:
        """The node's row as encoded before, while it shows the same; else what to encode."""
        state = self.nodes.state(record)
        key = (record.changed_at, record.last_seen, state)
        cached = self._summaries.get(record.name)
        if cached is not None and cached[0] == key:
            return cached[1]
        status = {
            "source": "agent",
            "state": state,
            "last_seen": round(record.last_seen, 3),
            "interval_s": record.interval_s,
            "paused": not record.sampling,
            "held_by": list(record.holds),
            "error": record.error,
        }
        info = self._agent_info(record)
        return Row(key, info, status, _latest_model(record.history.latest()))

    # agents ------------------------------------------------------------------------------
    def ingest(
        self, request: IngestRequest, encoded: list[Encoded] | None = None
    ) -> IngestResponse:
        """Store an agent's report and answer with the idle rule: sample while a panel asked
        within the idle timeout."""
        if request.node == self.node:
            raise NodeConflict(
                f"Node {request.node!r} is this Jupyter server's own node, which it samples "
                "itself; give the agent another name (--node)."
            )
        accepted = self.nodes.ingest(request, encoded)
        record = self.nodes.get(request.node)
        return IngestResponse(
            sample=self.poll_loop.watched,
            next_s=request.agent.interval_s,
            accepted=accepted,
            have_info=record is not None and record.info is not None,
            idle_timeout_s=self.poll_loop.idle_timeout_s,
        )

    @staticmethod
    async def body(text: str, *, accept_gzip: bool) -> tuple[bytes, bool]:
        """The encoded body and whether it is gzip-compressed; big bodies compressed off-loop."""
        raw = text.encode()
        if not accept_gzip or len(raw) < GZIP_MIN_BYTES:
            return raw, False
        if len(raw) < OFFLOAD_MIN_BYTES:
            return gzip.compress(raw, compresslevel=5), True
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(None, gzip.compress, raw, 5), True


def summary_json(info: dict[str, Any], status: dict[str, Any], sample: SampleModel | None) -> str:
    """A node's overview row (``NodeSummary``) as JSON: what the node said about itself (``info``:
    ``NodeInfo``'s fields), its ``status`` (the rest of ``NodeStatus``'s) and its latest sample.

    The same JSON as ``NodeSummary.model_validate(...).model_dump_json()`` (fields in the model's
    order, pydantic's own encoding), without validating again what the server built from
    validated reports: the sample's parts are serialised as the models they already are."""
    readings = {g.index: g for g in sample.gpus} if sample is not None else {}
    devices = {d["index"]: d for d in info.get("devices") or ()}
    rows: list[Any] = []
    for index in sorted(devices.keys() | readings.keys()):
        device = devices.get(index, {})
        reading = readings.get(index)
        if reading is None:
            rows.append(GpuSummary(index=index, name=device.get("name"), uuid=device.get("uuid")))
            continue
        row = dict(reading.__dict__)  # its fields in order: GpuSummary's first (GpuValues)
        for name in READING_ONLY:
            del row[name]
        row["name"] = device.get("name")
        row["uuid"] = device.get("uuid")
        rows.append(row)
    last_seen = status["last_seen"]
    row = {
        "node": info["node"],
        "source": status["source"],
        "state": status["state"],
        "last_seen": float(last_seen) if last_seen is not None else None,
        "interval_s": float(status["interval_s"]),
        "paused": bool(status["paused"]),
        "held_by": list(status["held_by"]),
        "error": status["error"],
        "backend": info.get("backend"),
        "reason": info.get("reason"),
        "driver_version": info.get("driver_version"),
        "last_sample_t": sample.t if sample is not None else None,
        "host": sample.host if sample is not None else None,
        "gpus": rows,
    }
    return to_json(row).decode()


class Row(NamedTuple):
    """A node's overview row to encode (``summary_json``), and its cache key (agents' rows)."""

    key: tuple[float, float, str] | None
    info: dict[str, Any]
    status: dict[str, Any]
    sample: SampleModel | None


def overview_text(
    head: str, rows: dict[str, str | Row]
) -> tuple[str, dict[str, tuple[tuple[float, float, str] | None, str]]]:
    """The overview: ``head`` with every row, by node name, encoded where it is not yet (a
    pure function of its arguments: it may run off the event loop); and the rows it encoded."""
    built = {
        name: (row.key, summary_json(row.info, row.status, row.sample))
        for name, row in rows.items()
        if isinstance(row, Row)
    }
    parts = [row if isinstance(row, str) else built[name][1] for name, row in sorted(rows.items())]
    return _splice(head, "nodes", parts), built


def _latest_model(entry: Entry | None) -> SampleModel | None:
    """The latest sample as its model: as it came from an agent, else validated from the dict."""
    if entry is None:
        return None
    if entry.model is not None:
        return entry.model
    return SampleModel.model_validate(entry.sample) if entry.sample is not None else None


def _splice(head: str, field: str, items: list[str]) -> str:
    """``head`` (JSON whose last field is ``field``, empty) with pre-encoded ``items`` in it."""
    empty = f'"{field}":[]}}'
    assert head.endswith(empty), f"{field} must stay the payload's last field"
    return "".join((head[: -len("]}")], ",".join(items), "]}"))
