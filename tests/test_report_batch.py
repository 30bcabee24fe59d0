"""Reports of the telemetry channels stored in batches: what waits, for how long, in what order,
and that one report's failure is not its neighbours'."""

from __future__ import annotations

import asyncio
import logging

import pytest

from jupyter_air.server.report_batch import ReportBatch


async def test_reports_added_meanwhile_are_stored_together_in_order_once_the_delay_passed():
    batch = ReportBatch(0.05)
    stored: list[str] = []
    loop = asyncio.get_running_loop()
    first_added = loop.time()
    done = [batch.add(lambda k=k: stored.append(k)) for k in "abc"]
    assert stored == []  # nothing is stored while the reports are added
    assert done[0] is done[1] is done[2]  # one batch, one future for its channels to wait on
    await done[0]
    assert stored == ["a", "b", "c"]
    assert loop.time() - first_added >= 0.049  # the loop's timers may run a clock tick early
    # the next report starts the next batch
    later = batch.add(lambda: stored.append("d"))
    assert later is not done[0] and not later.done()
    await later
    assert stored == ["a", "b", "c", "d"]


async def test_a_report_that_fails_to_store_leaves_the_others_stored(caplog):
    batch = ReportBatch(0.01)
    stored: list[int] = []

    def broken() -> None:
        raise RuntimeError("disk gone")

    batch.add(lambda: stored.append(1))
    batch.add(broken)
    with caplog.at_level(logging.ERROR, logger="jupyter_air.server.report_batch"):
        await batch.add(lambda: stored.append(3))
    assert stored == [1, 3]
    assert "storing a telemetry report failed" in caplog.text and "disk gone" in caplog.text


async def test_what_waits_is_stored_at_once_when_the_server_stops():
    batch = ReportBatch(10)
    stored: list[int] = []
    done = batch.add(lambda: stored.append(1))
    batch.store_now()
    assert stored == [1] and done.done()
    batch.store_now()  # nothing waits: nothing happens
    await asyncio.sleep(0)
    assert stored == [1]


@pytest.mark.parametrize("delay", [0, -1, 10.5])
def test_a_batch_waits_a_bounded_positive_while(delay):
    with pytest.raises(ValueError, match="more than 0 and at most 10 s"):
        ReportBatch(delay)
