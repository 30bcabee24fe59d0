"""History: bounded by count and by time, deltas by time, compact wire form."""

from __future__ import annotations

import json

from jupyter_air.telemetry import History


def sample(t: float, gpus: int = 2) -> dict:
    return {
        "t": t,
        "node": "n",
        "host": {"cpu_pct": 1.0, "mem_used_mb": 1.0, "mem_total_mb": 2.0},
        "gpus": [
            {
                "index": i,
                "util_pct": None,
                "temp_c": 50.0,
                "lost": False,
                "processes": [{"pid": 1, "gpu_mem_mb": 10.0}],
            }
            for i in range(gpus)
        ],
    }


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_two_hours_at_ten_seconds_stays_bounded_in_count_and_time():
    clock = Clock()
    history = History(window_s=7200, interval_s=10, clock=clock)
    for i in range(5000):  # ~14 hours of samples, with extra refreshes every 7th tick
        clock.now = i * 10.0
        history.append(sample(clock.now))
        if i % 7 == 0:
            clock.now += 1
            history.append(sample(clock.now))
    entries = history.since()
    assert len(history) <= history.capacity < 1000
    assert entries[-1].t == clock.now
    assert clock.now - entries[0].t <= 7200
    # nothing within the window was dropped
    assert len(entries) >= 720


def test_a_pause_leaves_a_gap_and_old_samples_expire():
    clock = Clock()
    history = History(window_s=60, interval_s=1, clock=clock)
    for t in range(10):
        clock.now = float(t)
        history.append(sample(clock.now))
    clock.now = 100.0  # paused for 90 s: everything is older than the window
    assert history.since() == []
    history.append(sample(100.0))
    assert [e.t for e in history.since()] == [100.0]


def test_since_returns_only_newer_samples_in_order():
    clock = Clock()
    history = History(window_s=3600, interval_s=1, clock=clock)
    for t in range(1, 11):
        clock.now = float(t)
        history.append(sample(clock.now))
    assert [e.t for e in history.since(7.0)] == [8.0, 9.0, 10.0]
    assert history.since(10.0) == []
    assert len(history.since(None)) == 10
    assert len(history.since(-1)) == 10


def test_wire_form_drops_processes_and_keeps_nulls():
    clock = Clock()
    history = History(window_s=60, interval_s=1, clock=clock)
    entry = history.append(sample(0.0))
    decoded = json.loads(entry.wire)
    assert all("processes" not in gpu for gpu in decoded["gpus"])
    assert decoded["gpus"][0]["util_pct"] is None
    assert entry.sample["gpus"][0]["processes"]  # the stored sample keeps them
