"""GPU agents on every node of the real loopback Ray cluster (tests/ray_cluster.py), started by
a real Jupyter server whose ``cluster`` names it: each Ray node reports as a node of its own in
the overview (the same host here, so names carry the Ray node's id), with its simulated GPUs."""

from __future__ import annotations

import json
import socket

import pytest
from telemetry_support import telemetry_config, wait_until

from jupyter_air.telemetry.models import ClusterOverview

pytestmark = pytest.mark.timeout(600)  # the cluster may start here


@pytest.fixture
def air_config(tmp_path, ray_cluster, monkeypatch, jp_http_port, jp_base_url) -> dict:
    for name, value in ray_cluster.env().items():
        monkeypatch.setenv(name, value)
    return telemetry_config(
        tmp_path,
        cluster=ray_cluster.address,
        gpu_poll_interval=1.0,
        agent_server_url=f"http://127.0.0.1:{jp_http_port}{jp_base_url}",
    )


async def test_every_ray_node_reports_its_gpus(jp_fetch, ray_cluster):
    views: list[dict] = []

    async def ask() -> dict:
        body = json.loads((await jp_fetch("air", "api", "gpu", "nodes")).body)
        ClusterOverview.model_validate(body)
        views.append(body)
        return body

    def ray_nodes(view: dict) -> list[dict]:
        return [n for n in view["nodes"] if n["source"] == "agent"]

    expected = 1 + len(ray_cluster.workers)  # the head and its workers
    reported = False
    for _ in range(90):  # a panel asking every second: the agents sample
        view = await ask()
        nodes = ray_nodes(view)
        if len(nodes) >= expected and all(n["gpus"] for n in nodes):
            reported = True
            break
        await wait_until(lambda: False, timeout=1.0)
    assert reported, views[-1] if views else "no answer"
    nodes = ray_nodes(views[-1])
    host = socket.gethostname()
    assert all(n["node"].startswith(host) for n in nodes)  # one host, several Ray nodes
    assert len({n["node"] for n in nodes}) == len(nodes)
    assert all(n["state"] == "live" and n["backend"] == "simulated" for n in nodes)
    assert "jupyter-host" in views[-1]["node_names"]  # the server's own node as before
