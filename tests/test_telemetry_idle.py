"""The idle rule for the whole cluster, on a real Jupyter server with agents on the pynvml fake:
no panel asking → agents are told to stop sampling and make no NVML call at all (heartbeats
only); a panel request wakes them by their next report; a run holding a node keeps that node's
agent sampling. The server's idle timeout is measured on a clock the test moves itself: it
passes when the test says so, never because the machine was slow."""

from __future__ import annotations

import json

import pytest
from fake_nvml import three_gpus
from telemetry_support import ManualClock, telemetry_config, wait_until

from jupyter_air.telemetry.hold_files import HoldFile

INTERVAL = 0.2
IDLE = 300.0  # on the test's clock


@pytest.fixture
def air_config(tmp_path) -> dict:
    return telemetry_config(tmp_path, gpu_idle_timeout=IDLE)


def record(jp_serverapp, node: str):
    return jp_serverapp.web_app.settings["jupyter_air"]["gpu"].nodes.get(node)


def manual_clock(jp_serverapp) -> ManualClock:
    clock = ManualClock()
    jp_serverapp.web_app.settings["jupyter_air"]["gpu"].poll_loop.clock = clock
    return clock


async def test_idle_agents_make_no_nvml_call_and_a_panel_wakes_them_by_their_next_report(
    jp_fetch, jp_serverapp, agents
):
    clock = manual_clock(jp_serverapp)
    fake = three_gpus()
    agent = agents.start("gpu-a", fake, interval_s=INTERVAL)
    # nobody has asked yet: heartbeats only, and not a single NVML call (not even nvmlInit)
    assert await wait_until(lambda: agent.reports >= 5)
    assert fake.total_calls == 0 and agent.samples_taken == 0
    assert record(jp_serverapp, "gpu-a").sampling is False

    for _ in range(2):  # a panel opens (first round), then comes back after a pause
        reports = agent.reports
        taken = agent.samples_taken
        body = json.loads((await jp_fetch("air", "api", "gpu", "nodes")).body)
        assert body["resumed"] is True
        assert await wait_until(lambda t=taken: agent.samples_taken > t)
        # the report answered after the request said "sample", and the agent sampled at once
        assert agent.reports - reports <= 2
        view = json.loads((await jp_fetch("air", "api", "gpu", params={"node": "gpu-a"})).body)
        assert view["paused"] is False
        assert await wait_until(lambda: len(record(jp_serverapp, "gpu-a").history) >= 2)

        # no panel asks for longer than the idle timeout: the agent stops sampling
        clock.advance(IDLE + 1)
        assert await wait_until(lambda: not record(jp_serverapp, "gpu-a").sampling, timeout=60)
        calls, reports = fake.total_calls, agent.reports
        assert await wait_until(lambda r=reports: agent.reports >= r + 5)
        assert fake.total_calls == calls  # heartbeats, no NVML call
        assert (
            jp_serverapp.web_app.settings["jupyter_air"]["gpu"].nodes.state(
                record(jp_serverapp, "gpu-a")
            )
            == "live"
        )  # a heartbeat is a report: idle is not stale
    await agents.stop_all()


async def test_a_run_holding_the_node_keeps_its_agent_sampling(
    jp_fetch, jp_serverapp, agents, tmp_path
):
    clock = manual_clock(jp_serverapp)
    node_data = tmp_path / "node-data"  # the data folder on the agent's node
    fake = three_gpus()
    agent = agents.start("gpu-a", fake, interval_s=INTERVAL, holds_dir=node_data)
    assert await wait_until(lambda: agent.reports >= 3)
    assert fake.total_calls == 0
    with HoldFile.create("workload 0123456789ab", data_dir=node_data):
        assert await wait_until(lambda: agent.samples_taken >= 3)
        held = record(jp_serverapp, "gpu-a")
        assert held.sampling is True and held.holds == ["workload 0123456789ab"]
        view = json.loads((await jp_fetch("air", "api", "gpu", params={"node": "gpu-a"})).body)
        assert view["held_by"] == ["workload 0123456789ab"]
    # released; the request above counts as a panel asking, until the idle timeout has passed
    gpu = jp_serverapp.web_app.settings["jupyter_air"]["gpu"]
    assert gpu.poll_loop.watched
    clock.advance(IDLE + 1)
    assert not gpu.poll_loop.watched
    reports = agent.reports
    assert await wait_until(lambda: agent.reports >= reports + 2)  # told so since
    assert record(jp_serverapp, "gpu-a").sampling is False
    calls = fake.total_calls
    reports = agent.reports
    assert await wait_until(lambda: agent.reports >= reports + 5)
    assert fake.total_calls == calls
    await agents.stop_all()
