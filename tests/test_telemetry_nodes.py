"""Agent nodes on the server, on an injected clock: live → stale after 3 intervals → lost after
the configured timeout → live again with the next report; a report sent twice is stored once;
each node's history is bounded like the server's own."""

from __future__ import annotations

import json

import pytest

from jupyter_air.telemetry.history import wire_form
from jupyter_air.telemetry.models import IngestRequest
from jupyter_air.telemetry.nodes import ClockAhead, NodeRegistry, TooManyNodes


class Clock:
    def __init__(self, now: float = 1000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def report(node: str = "n1", times: tuple[float, ...] = (), interval: float = 10.0, **more):
    return IngestRequest.model_validate(
        {
            "node": node,
            "agent": {"version": "0.1.0", "interval_s": interval, "started": 0.0},
            "sampling": bool(times),
            "samples": [
                {"t": t, "node": node, "host": {"cpu_pct": 5.0}, "gpus": [{"index": 0}]}
                for t in times
            ],
            **more,
        }
    )


def registry(clock: Clock, **kwargs) -> NodeRegistry:
    options = {"history_s": 7200.0, "min_interval_s": 10.0, "lost_after_s": 120.0, **kwargs}
    return NodeRegistry(clock=clock, **options)


def test_a_silent_node_goes_stale_then_lost_and_comes_back_with_its_next_report():
    clock = Clock()
    nodes = registry(clock)
    nodes.ingest(report(times=(1000.0,)))
    record = nodes.get("n1")
    assert record is not None and nodes.state(record) == "live"
    clock.now += 30.0  # 3 intervals of 10 s: still live
    assert nodes.state(record) == "live"
    clock.now += 0.5
    assert nodes.state(record) == "stale"
    clock.now = 1000.0 + 120.0
    assert nodes.state(record) == "stale"
    clock.now += 0.5
    assert nodes.state(record) == "lost"
    assert record.last_seen == 1000.0  # shown with the time it was last heard from
    assert record.history.latest().t == 1000.0  # and its data kept
    nodes.ingest(report())  # a heartbeat (idle agent) is a report too
    assert nodes.state(record) == "live"
    assert record.last_seen == clock.now


def test_the_overview_delta_carries_a_node_when_it_changes_or_changes_state():
    clock = Clock()
    nodes = registry(clock)
    nodes.ingest(report())  # an idle agent's heartbeat
    record = nodes.get("n1")
    assert record is not None
    seen = clock.now
    clock.now += 10.0
    nodes.ingest(report())  # another: nothing new
    assert not record.changed_since(seen, clock.now, nodes.lost_after_s)
    clock.now += 35.0  # it went stale after the panel looked
    assert record.changed_since(seen, clock.now, nodes.lost_after_s)
    seen = clock.now
    assert not record.changed_since(seen, clock.now + 1.0, nodes.lost_after_s)
    clock.now = record.last_seen + 121.0  # and lost
    assert record.changed_since(seen, clock.now, nodes.lost_after_s)
    seen = clock.now
    clock.now += 1.0
    nodes.ingest(report())  # back
    assert record.changed_since(seen, clock.now, nodes.lost_after_s)
    seen = clock.now
    clock.now += 10.0
    nodes.ingest(report(times=(clock.now,)))  # new samples (and it samples again)
    assert record.changed_since(seen, clock.now, nodes.lost_after_s)


def test_a_report_sent_twice_is_stored_once_and_samples_are_kept_in_order():
    clock = Clock(2000.0)
    nodes = registry(clock)
    assert nodes.ingest(report(times=(1990.0, 1970.0, 1980.0))) == 3
    assert nodes.ingest(report(times=(1980.0, 1990.0))) == 0  # resent after a lost answer
    assert nodes.ingest(report(times=(1990.0, 2000.0))) == 1
    record = nodes.get("n1")
    assert record is not None
    assert [e.t for e in record.history.since()] == [1970.0, 1980.0, 1990.0, 2000.0]
    # the full sample is kept for the latest only
    assert [e.sample is not None for e in record.history.since()] == [False] * 3 + [True]


def test_each_node_keeps_two_hours_at_most_and_no_more_than_the_server_interval_allows():
    clock = Clock(0.0)
    nodes = registry(clock)
    fast = registry(clock, min_interval_s=10.0)
    for i in range(1000):
        clock.now = i * 10.0
        nodes.ingest(report(times=(clock.now,)))
    record = nodes.get("n1")
    assert record is not None and len(record.history) == 721  # the window: 2 h at 10 s
    # a node sampling every second is kept within the same bound (less than 2 h of it)
    for i in range(2000):
        clock.now = 20_000 + i
        fast.ingest(report(times=(clock.now,), interval=1.0))
    fast_record = fast.get("n1")
    assert fast_record is not None
    assert len(fast_record.history) == fast_record.history.capacity == 908


def test_the_number_of_nodes_is_bounded():
    nodes = registry(Clock(), max_nodes=2)
    nodes.ingest(report("a"))
    nodes.ingest(report("b"))
    with pytest.raises(TooManyNodes, match="at most 2 nodes"):
        nodes.ingest(report("c"))
    assert nodes.names() == ["a", "b"]
    nodes.ingest(report("a"))  # a known node still reports


def test_samples_dated_far_ahead_of_the_server_are_refused_whole():
    clock = Clock(5000.0)
    nodes = registry(clock)
    with pytest.raises(ClockAhead, match="synchronise the clocks"):
        nodes.ingest(report(times=(4990.0, 5000.0 + 3600)))
    assert nodes.names() == []  # nothing of it stored
    assert nodes.ingest(report(times=(5000.0 + 60,))) == 1  # a minute ahead is clock noise


def test_a_reports_history_form_is_what_the_history_makes_of_the_sample_dict():
    """The wire form comes from the validated model (no dict per sample): the same JSON as
    ``wire_form`` of the sample's dict, without processes, health and MIG readings."""
    clock = Clock(2000.0)
    nodes = registry(clock)
    gpu = {
        "index": 0,
        "util_pct": 50,
        "temp_c": 61.5,
        "health": {"sm_clock_mhz": 1410, "flags": ["xid"]},
        "mig": [{"index": 0, "mem_used_mb": 1.0}],
        "processes": [{"pid": 7, "gpu_mem_mb": 100.0, "name": "python"}],
    }
    sent = IngestRequest.model_validate(
        {
            "node": "n1",
            "agent": {"version": "0.1.0", "interval_s": 10.0, "started": 0.0},
            "sampling": True,
            "samples": [
                {"t": t, "node": "n1", "host": {"cpu_pct": 5.0}, "gpus": [gpu]}
                for t in (1980.0, 1990.0)
            ],
        }
    )
    assert nodes.ingest(sent) == 2
    record = nodes.get("n1")
    assert record is not None
    older, newest = record.history.since()
    assert older.sample is None and newest.sample is not None
    full = sent.samples[1].model_dump(mode="json")
    assert newest.sample == full
    assert json.loads(newest.wire) == json.loads(wire_form(full))
    assert json.loads(older.wire) == json.loads(wire_form(sent.samples[0].model_dump(mode="json")))
    assert "processes" not in newest.wire and "health" not in newest.wire
