"""Node agents on several simulated nodes (the pynvml fake) reporting over HTTP to a real Jupyter
server: the overview and each node's own view, a node whose NVML fails, a node that stops
reporting (stale → lost → back), `?since=` deltas, health flags, and which run holds a GPU."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest
from fake_nvml import FakeGpu, FakeNvml, MiB, three_gpus
from telemetry_support import telemetry_config, wait_until

from jupyter_air.telemetry.models import ClusterOverview, GpuPayload

INTERVAL = 0.2
LOST_AFTER = 2.0


@pytest.fixture
def air_config(tmp_path) -> dict:
    return telemetry_config(tmp_path, agent_lost_after=LOST_AFTER)


async def overview(jp_fetch, **params) -> dict:
    body = json.loads((await jp_fetch("air", "api", "gpu", "nodes", params=params)).body)
    ClusterOverview.model_validate(body)
    return body


async def node_view(jp_fetch, node: str, **params) -> dict:
    body = json.loads((await jp_fetch("air", "api", "gpu", params={"node": node, **params})).body)
    GpuPayload.model_validate(body)
    return body


def by_name(view: dict) -> dict[str, dict]:
    return {n["node"]: n for n in view["nodes"]}


async def test_several_nodes_report_and_the_overview_shows_them_all(jp_fetch, agents):
    await overview(jp_fetch)  # a panel is open: agents sample
    broken = FakeNvml([FakeGpu()], init_error=FakeNvml.NVML_ERROR_LIBRARY_NOT_FOUND)
    fakes = {"gpu-a": three_gpus(), "gpu-b": three_gpus(), "gpu-c": broken}
    fakes["gpu-b"].gpus[2].throttle = 0x40  # running hot
    for node, fake in fakes.items():
        agents.start(node, fake, interval_s=INTERVAL)

    def all_reported() -> bool:
        return all(a.samples_taken >= 2 and a.reports >= 2 for a in agents.started)

    assert await wait_until(all_reported), [(a.rejected, a.last_send_error) for a in agents.started]
    view = await overview(jp_fetch)
    assert view["node_names"] == ["gpu-a", "gpu-b", "gpu-c", "jupyter-host"]
    nodes = by_name(view)
    assert [n["node"] for n in view["nodes"]] == sorted(nodes)
    host = nodes["jupyter-host"]
    assert host["source"] == "server" and host["backend"] == "simulated"
    a = nodes["gpu-a"]
    assert (a["source"], a["state"], a["backend"], a["paused"]) == ("agent", "live", "nvml", False)
    assert [g["index"] for g in a["gpus"]] == [0, 1, 2]
    assert a["gpus"][0]["util_pct"] == 87.0 and a["gpus"][0]["temp_c"] == 71.0
    assert a["gpus"][0]["name"] == "NVIDIA A100-SXM4-40GB"
    assert a["gpus"][1]["temp_c"] is None  # NotSupported stays null across the wire
    assert a["gpus"][0]["health"]["sm_clock_max_mhz"] == 1410
    assert a["last_sample_t"] is not None and a["last_seen"] is not None
    # a flagged GPU
    assert nodes["gpu-b"]["gpus"][2]["health"]["flags"] == ["thermal_throttling"]
    assert nodes["gpu-b"]["gpus"][0]["health"]["flags"] == []
    # NVML fails on gpu-c: no GPU data, the reason, and host metrics still flow
    c = nodes["gpu-c"]
    assert c["backend"] == "none" and "No NVIDIA driver found" in c["reason"]
    assert c["gpus"] == []
    assert c["host"]["mem_total_mb"] > 0 and c["state"] == "live"

    # one node's own view is today's payload, from its agent
    b = await node_view(jp_fetch, "gpu-b")
    assert (b["node"], b["source"], b["backend"], b["paused"]) == ("gpu-b", "agent", "nvml", False)
    assert b["interval_s"] == INTERVAL and b["history_s"] == 7200.0
    assert len(b["samples"]) >= 2 and "health" not in b["samples"][0]["gpus"][0]
    assert b["latest"]["gpus"][2]["health"]["throttle_reasons"] == ["hw_thermal_slowdown"]
    assert [d["uuid"] for d in b["devices"]] == [g.uuid for g in fakes["gpu-b"].gpus]
    # the server's own node still answers as before, with or without ?node=
    own = await node_view(jp_fetch, "jupyter-host")
    assert own["source"] == "server" and own["backend"] == "simulated"
    await agents.stop_all()


async def test_a_node_that_stops_reporting_goes_stale_then_lost_and_comes_back(jp_fetch, agents):
    await overview(jp_fetch)
    agent = agents.start("gpu-a", three_gpus(), interval_s=INTERVAL)
    assert await wait_until(lambda: agent.samples_taken >= 1 and agent.reports >= 2)
    assert by_name(await overview(jp_fetch))["gpu-a"]["state"] == "live"
    await agents.stop(agent)  # the node goes quiet
    last = by_name(await overview(jp_fetch))["gpu-a"]["last_seen"]

    async def state() -> str:
        return by_name(await overview(jp_fetch))["gpu-a"]["state"]

    states = [await state()]
    while states[-1] != "lost" and len(states) < 400:  # bounded: ~8 s of polling
        await asyncio.sleep(0.02)
        states.append(await state())
    seen = [s for i, s in enumerate(states) if i == 0 or s != states[i - 1]]
    assert seen[-2:] == ["stale", "lost"]
    gone = by_name(await overview(jp_fetch))["gpu-a"]
    assert gone["last_seen"] == last  # shown with the time it was last heard from
    assert gone["gpus"][0]["util_pct"] == 87.0  # and its last values
    assert (await node_view(jp_fetch, "gpu-a"))["state"] == "lost"

    again = agents.start("gpu-a", three_gpus(), interval_s=INTERVAL)
    assert await wait_until(lambda: again.reports >= 1)
    back = by_name(await overview(jp_fetch))["gpu-a"]
    assert back["state"] == "live" and back["last_seen"] > last
    await agents.stop_all()


async def test_deltas_carry_only_what_is_new(jp_fetch, jp_serverapp, agents):
    await overview(jp_fetch)
    a = agents.start("gpu-a", three_gpus(), interval_s=INTERVAL)
    b = agents.start("gpu-b", three_gpus(), interval_s=INTERVAL)
    assert await wait_until(lambda: a.samples_taken >= 3 and b.samples_taken >= 3)
    full = await node_view(jp_fetch, "gpu-a")
    newest = full["samples"][-1]["t"]
    assert await wait_until(lambda: a.samples_taken >= len(full["samples"]) + 3)
    delta = await node_view(jp_fetch, "gpu-a", since=str(newest))
    assert delta["samples"] and all(s["t"] > newest for s in delta["samples"])
    assert delta["latest"]["t"] == delta["samples"][-1]["t"]

    first = await overview(jp_fetch)
    await agents.stop(b)  # gpu-a keeps sampling; gpu-b goes quiet, then stale
    nodes = jp_serverapp.web_app.settings["jupyter_air"]["gpu"].nodes
    assert await wait_until(lambda: nodes.state(nodes.get("gpu-b")) == "stale")
    changed = await overview(jp_fetch, since=str(first["now"]))
    assert changed["since"] == first["now"]
    assert changed["node_names"] == first["node_names"]
    names = [n["node"] for n in changed["nodes"]]
    assert "gpu-a" in names  # new samples
    assert "gpu-b" in names and by_name(changed)["gpu-b"]["state"] == "stale"  # new state
    quiet = await overview(jp_fetch, since=str(changed["now"]))
    assert "gpu-b" not in [n["node"] for n in quiet["nodes"]]  # stale, and nothing new since
    await agents.stop_all()


async def test_a_gpu_process_of_a_distributed_rank_names_its_run_and_rank(jp_fetch, agents):
    launcher = subprocess.Popen(
        [sys.executable, "-c", "import sys; print(flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        env={
            "PATH": os.environ["PATH"],
            "MLFLOW_RUN_ID": "4f2c9e8a1b7d4e3f",
            "MLFLOW_EXPERIMENT_ID": "12",
            "RANK": "1",
            "LOCAL_RANK": "1",
        },
    )
    try:
        assert launcher.stdout is not None
        launcher.stdout.readline()  # it runs
        await overview(jp_fetch)
        fake = FakeNvml([FakeGpu(compute=[(launcher.pid, 3000 * MiB)])])
        agent = agents.start("gpu-a", fake, interval_s=INTERVAL)
        assert await wait_until(lambda: agent.samples_taken >= 1 and agent.reports >= 2)
        view = await node_view(jp_fetch, "gpu-a")
        (process,) = view["latest"]["gpus"][0]["processes"]
        assert process["pid"] == launcher.pid and process["gpu_mem_mb"] == 3000.0
        assert process["run"] == {
            "run_id": "4f2c9e8a1b7d4e3f",
            "experiment_id": "12",
            "rank": 1,
            "local_rank": 1,
            "node_rank": None,
            "job_id": None,
        }
    finally:
        assert launcher.stdin is not None
        launcher.stdin.close()
        launcher.wait(timeout=30)
        await agents.stop_all()


async def test_an_unknown_node_is_a_404_naming_it(jp_fetch):
    from tornado.httpclient import HTTPClientError

    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("air", "api", "gpu", params={"node": "gpu-z"})
    assert error.value.code == 404
    assert "'gpu-z'" in json.loads(error.value.response.body)["message"]
