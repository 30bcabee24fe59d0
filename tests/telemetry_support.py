"""Node agents for tests: real ``NodeAgent``s on the pynvml fake, reporting over HTTP to the test's
real Jupyter server (the ``agents`` fixture, in conftest.py), the server's settings for them, and a
bounded wait."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

from fake_nvml import FakeNvml

from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.agent import HttpSender, NodeAgent
from jupyter_air.telemetry.agent_tokens import mint_token
from jupyter_air.telemetry.nvml import NvmlBackend


def telemetry_config(tmp_path: Path, **changes: object) -> dict:
    """JupyterAir settings of a test server that agents report to: its own node named
    ``jupyter-host`` (2 simulated GPUs), its data folder (agent tokens) in ``tmp_path``."""
    return {
        "gpu_backend": "simulated",
        "simulated_gpus": 2,
        "mlflow_embedded": False,
        "data_dir": str(tmp_path / "air"),
        "node_name": "jupyter-host",
        **changes,
    }


async def wait_until(predicate: Callable[[], bool], timeout: float = 60.0) -> bool:
    """Poll ``predicate`` while the server's event loop runs; False after ``timeout``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.02)
    return predicate()


class Agents:
    """Starts agents for simulated nodes against one server; stops every one at the end."""

    def __init__(self, server_url: str, data_dir: Path) -> None:
        self.server_url = server_url
        self.data_dir = data_dir
        self.tokens: dict[str, str] = {}
        self.started: list[NodeAgent] = []

    def token(self, node: str) -> str:
        if node not in self.tokens:
            self.tokens[node] = mint_token(self.data_dir, node)
        return self.tokens[node]

    def start(
        self,
        node: str,
        fake: FakeNvml,
        *,
        interval_s: float = 0.2,
        holds_dir: Path | None = None,
    ) -> NodeAgent:
        agent = NodeAgent(
            Sampler(NvmlBackend(nvml=fake), node=node),
            HttpSender(self.server_url, self.token(node), timeout_s=10),
            interval_s=interval_s,
            holds_dir=holds_dir,
        )
        agent.start()
        self.started.append(agent)
        return agent

    async def stop(self, agent: NodeAgent) -> None:
        """Stop an agent without blocking the event loop its report may be waiting on."""
        await asyncio.get_running_loop().run_in_executor(None, agent.stop)

    async def stop_all(self) -> None:
        for agent in self.started:
            await self.stop(agent)


class ManualClock:
    """A monotonic clock that moves only when told (``PollLoop.clock``): idle timeouts pass
    when a test says so, never because the machine was slow."""

    def __init__(self, start: float | None = None) -> None:
        self.now = time.monotonic() if start is None else start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds
