"""The idle-aware poll loop with short intervals: cadence, idle pause, resume, holds, sharing.

Where a rule is about time (the cadence, the idle timeout), the loop runs on a clock the test
moves (``ManualClock``), and the test waits for what the loop does, not for a number of seconds:
a slow machine makes a test take longer, never fail."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from fake_nvml import three_gpus
from telemetry_support import ManualClock, wait_until

from jupyter_air.telemetry import History, PollLoop, Sampler
from jupyter_air.telemetry.nvml import NvmlBackend

INTERVAL = 0.05
IDLE = 0.3


def make_loop(**kwargs):
    fake = three_gpus()
    sampler = Sampler(NvmlBackend(nvml=fake), node="n")
    history = History(window_s=3600, interval_s=kwargs.get("interval_s", INTERVAL))
    loop = PollLoop(
        sampler.sample,
        history,
        interval_s=kwargs.pop("interval_s", INTERVAL),
        idle_timeout_s=kwargs.pop("idle_timeout_s", IDLE),
        close=sampler.close,
        **kwargs,
    )
    return loop, fake, history


async def test_starts_paused_and_touches_nothing_until_asked():
    loop, fake, history = make_loop()
    loop.start()
    await asyncio.sleep(0.2)
    assert loop.paused
    assert fake.total_calls == 0 and len(history) == 0
    await loop.stop()


async def test_first_request_takes_a_sample_before_answering():
    loop, fake, history = make_loop(interval_s=10.0, idle_timeout_s=300)
    loop.start()
    await loop.on_request()
    assert len(history) == 1
    assert not loop.paused
    assert fake.calls["nvmlInit"] == 1
    await loop.stop()


async def test_samples_at_the_interval_while_clients_ask():
    clock = ManualClock()
    loop, fake, history = make_loop(idle_timeout_s=10, clock=clock)
    loop.start()
    await loop.on_request()
    assert len(history) == 1
    for k in range(2, 7):  # one sample for each interval that passes, not before
        await asyncio.sleep(INTERVAL * 3)
        assert len(history) == k - 1
        clock.advance(INTERVAL)
        assert await wait_until(lambda k=k: len(history) >= k)
        assert len(history) == k
    times = [e.t for e in history.since()]
    assert times == sorted(times)
    await loop.stop()


async def test_idle_pause_makes_no_nvml_calls_and_the_next_request_resumes():
    clock = ManualClock()
    loop, fake, history = make_loop(clock=clock)
    loop.start()
    await loop.on_request()
    clock.advance(IDLE + 0.01)
    assert await wait_until(lambda: loop.paused)
    calls_when_paused = fake.total_calls
    samples_when_paused = len(history)
    await asyncio.sleep(0.5)
    assert fake.total_calls == calls_when_paused  # not a single NVML call while idle
    assert len(history) == samples_when_paused

    before = time.time()
    await loop.on_request()
    assert not loop.paused
    assert len(history) == samples_when_paused + 1
    newest = history.latest()
    assert newest is not None and newest.t >= before - 0.001  # fresh, taken at once (ms)
    # the pause is a gap in the history, not invented points
    times = [e.t for e in history.since()]
    assert times[-1] - times[-2] >= 0.5
    await loop.stop()


async def test_hold_keeps_sampling_without_clients_and_release_lets_it_pause():
    loop, fake, history = make_loop()
    loop.start()
    hold = loop.hold("workload w-1")
    # sampled although nobody asked, long past the idle timeout
    assert await wait_until(lambda: len(history) >= IDLE / INTERVAL + 4)
    assert not loop.paused
    assert loop.held_by == ["workload w-1"]
    hold.release()
    assert loop.held_by == []
    assert await wait_until(lambda: loop.paused)
    await loop.stop()


async def test_hold_from_another_thread_wakes_a_paused_loop():
    loop, fake, history = make_loop()
    loop.start()
    await asyncio.sleep(0.1)
    assert loop.paused and len(history) == 0
    holder: list = []
    thread = threading.Thread(target=lambda: holder.append(loop.hold("run from a thread")))
    thread.start()
    thread.join()
    assert await wait_until(lambda: len(history) >= 3)
    assert not loop.paused
    with holder[0]:
        pass  # leaving the context releases it
    assert loop.held_by == []
    await loop.stop()


async def test_concurrent_requests_share_one_sample():
    loop, fake, history = make_loop(interval_s=10.0, idle_timeout_s=300)
    loop.start()
    await asyncio.gather(
        *(loop.on_request() for _ in range(50)), *(loop.refresh() for _ in range(20))
    )
    assert loop.samples_taken == 1
    assert fake.calls["nvmlDeviceGetUtilizationRates"] == 3  # one read of each of 3 GPUs
    await loop.stop()


async def test_refresh_takes_a_new_sample_but_not_twice_in_a_second():
    loop, fake, history = make_loop(interval_s=10.0, idle_timeout_s=300)
    loop.start()
    await loop.on_request()
    first = history.latest()
    assert (await loop.refresh()) is first  # within 1 s of the last sample: shared
    await asyncio.sleep(1.05)
    second = await loop.refresh()
    assert second is not first and second.t > first.t
    assert len(history) == 2
    await loop.stop()


async def test_a_failing_sample_is_reported_and_sampling_goes_on():
    calls = {"n": 0}
    history = History(window_s=60, interval_s=INTERVAL)
    seen = threading.Event()

    def flaky(_context):
        calls["n"] += 1
        if calls["n"] == 2:
            raise RuntimeError("driver hiccup")
        if calls["n"] == 3:
            seen.wait(60)  # the next sample waits until the test has seen the error
        return {"t": time.time(), "node": "n", "host": {}, "gpus": []}

    loop = PollLoop(flaky, history, interval_s=INTERVAL, idle_timeout_s=10)
    loop.start()
    await loop.on_request()
    assert await wait_until(lambda: loop.last_error == "driver hiccup")
    seen.set()
    assert await wait_until(lambda: len(history) >= 3)
    assert loop.last_error is None
    await loop.stop()


async def test_context_is_gathered_on_the_loop_and_passed_to_the_sampler():
    seen = []
    history = History(window_s=60, interval_s=1)

    async def context():
        return {"owners": 1}

    def sample(ctx):
        seen.append((ctx, threading.current_thread().name))
        return {"t": time.time(), "node": "n", "host": {}, "gpus": []}

    loop = PollLoop(sample, history, interval_s=1, idle_timeout_s=10, context=context)
    loop.start()
    await loop.on_request()
    assert seen[0][0] == {"owners": 1}
    assert seen[0][1].startswith("air-telemetry")  # off the event loop
    await loop.stop()


async def test_stop_closes_the_backend_and_ends_the_task():
    loop, fake, history = make_loop()
    loop.start()
    await loop.on_request()
    await loop.stop()
    assert not loop.running
    assert fake.calls["nvmlShutdown"] == 1
    assert await wait_until(
        lambda: not [t for t in threading.enumerate() if t.name.startswith("air-telemetry")]
    )


async def test_stopping_while_a_sample_is_in_flight_lets_it_finish_before_closing():
    events: list[str] = []
    started = threading.Event()

    def slow_sample(context):
        started.set()
        time.sleep(0.3)
        events.append("sampled")
        return {"t": time.time(), "node": "n", "host": {}, "gpus": []}

    loop = PollLoop(
        slow_sample,
        History(60, INTERVAL),
        interval_s=INTERVAL,
        idle_timeout_s=10,
        close=lambda: events.append("closed"),
    )
    loop.start()
    loop.touch()  # a client asked: the loop samples by itself
    while not started.is_set():
        await asyncio.sleep(0.01)
    await loop.stop()  # used to fail with CancelledError from the cancelled sample
    assert events == ["sampled", "closed"]
    assert not loop.running


def test_rejects_a_non_positive_interval():
    with pytest.raises(ValueError, match="interval"):
        PollLoop(lambda c: None, History(60, 1), interval_s=0)
