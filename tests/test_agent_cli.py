"""`air agent-token` and `air agent` as people run them: a token minted on the Jupyter host (kept
as a hash, 0600), a real `air agent` process reporting to a real Jupyter server, a refused token
ending the agent with the server's reason."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from telemetry_support import telemetry_config, wait_until

from jupyter_air.telemetry.agent_tokens import AgentTokens, mint_token, tokens_path

AIR = [sys.executable, "-m", "jupyter_air.cli"]


@pytest.fixture
def air_config(tmp_path) -> dict:
    return telemetry_config(tmp_path, simulated_gpus=1)


def air(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*AIR, *args], capture_output=True, text=True, timeout=60, env=env or os.environ.copy()
    )


def test_tokens_are_minted_per_node_stored_as_hashes_and_replaced(tmp_path):
    first = air("agent-token", "gpu-node-7", "--data-dir", str(tmp_path))
    assert first.returncode == 0, first.stderr
    token = first.stdout.strip()
    path = tokens_path(tmp_path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert token not in path.read_text()  # only its hash is kept
    known = AgentTokens(tmp_path)
    known.reload_if_changed()
    assert known.node_for(token) == "gpu-node-7"
    again = mint_token(tmp_path, "gpu-node-7")  # minting again replaces the old token
    known.reload_if_changed()
    assert known.node_for(token) is None and known.node_for(again) == "gpu-node-7"
    assert air("agent-token", "--list", "--data-dir", str(tmp_path)).stdout == "gpu-node-7\n"
    revoked = air("agent-token", "gpu-node-7", "--revoke", "--data-dir", str(tmp_path))
    assert revoked.stdout == "gpu-node-7: token revoked\n"
    known.reload_if_changed()
    assert known.node_for(again) is None
    bad = air("agent-token", "my node!", "--data-dir", str(tmp_path))
    assert bad.returncode == 2 and "is not a node name" in bad.stderr


async def test_air_agent_reports_to_a_real_server_until_stopped(
    jp_fetch, jp_http_port, jp_base_url, air_config
):
    data_dir = Path(air_config["data_dir"])
    token = mint_token(data_dir, "gpu-node-7")
    env = {**os.environ, "JUPYTER_AIR_AGENT_TOKEN": token, "JUPYTER_AIR_GPU_BACKEND": "auto"}
    await jp_fetch("air", "api", "gpu", "nodes")  # a panel is open
    agent = subprocess.Popen(
        [
            *AIR,
            "agent",
            "--server",
            f"http://127.0.0.1:{jp_http_port}{jp_base_url}",
            "--node",
            "gpu-node-7",
            "--interval",
            "0.2",
            "--data-dir",
            str(data_dir / "node"),
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:

        async def reported() -> dict | None:
            body = json.loads((await jp_fetch("air", "api", "gpu", "nodes")).body)
            return {n["node"]: n for n in body["nodes"]}.get("gpu-node-7")

        node: dict | None = None
        for _ in range(300):
            node = await reported()
            if node is not None and node["last_sample_t"] is not None:
                break
            await asyncio.sleep(0.1)
        assert node is not None and node["last_sample_t"] is not None
        # no NVIDIA driver on this machine: the real NVML says so, host metrics still flow
        assert node["backend"] in ("none", "nvml")
        if node["backend"] == "none":
            assert node["reason"] and node["gpus"] == []
        assert node["host"]["mem_total_mb"] > 0
    finally:
        agent.send_signal(signal.SIGTERM)
        out, err = await asyncio.get_running_loop().run_in_executor(
            None, lambda: agent.communicate(timeout=30)
        )
    assert agent.returncode == 0, err
    assert "node 'gpu-node-7' reports to" in out


async def test_a_refused_token_ends_the_agent_with_the_reason(jp_fetch, jp_http_port, jp_base_url):
    agent = subprocess.Popen(
        [
            *AIR,
            "agent",
            "--server",
            f"http://127.0.0.1:{jp_http_port}{jp_base_url}",
            "--token",
            "air-agent-not-a-real-token",
            "--node",
            "gpu-node-8",
            "--interval",
            "0.2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    loop = asyncio.get_running_loop()
    done = loop.run_in_executor(None, lambda: agent.communicate(timeout=60))
    assert await wait_until(lambda: agent.poll() is not None, timeout=60)
    _, err = await done
    assert agent.returncode == 2
    assert "the server refused this agent" in err and "403" in err
    assert "air agent-token NODE" in err
