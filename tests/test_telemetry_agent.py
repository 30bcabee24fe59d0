"""The node agent's own rules, on an injected clock, reporting to the server's real telemetry
service in-process (its ``send`` swapped, as a Ray actor would): it starts idle and touches no
NVML, wakes when told, keeps what it could not send and sends it later, and stops sampling when it
has been out of touch with the server for longer than the idle timeout."""

from __future__ import annotations

import socket
import time

import pytest
from fake_nvml import three_gpus
from import_support import assert_light_import

from jupyter_air.server.gpu_service import GpuService
from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.agent import HttpSender, NodeAgent, ReportRefused, SendFailed
from jupyter_air.telemetry.models import IngestRequest, IngestResponse
from jupyter_air.telemetry.nvml import NvmlBackend


class Clock:
    """The agent's and the sampler's clock: starts at the wall clock (the server prunes and
    dates by it) and moves only when told, so samples are an interval apart as on a node, never
    two within the same millisecond (which the server would take for one report sent twice)."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


def dead_url() -> str:
    """A loopback port nothing listens on."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/"


@pytest.fixture
def service() -> GpuService:
    return GpuService(backend="none", idle_timeout_s=300.0, node="jupyter-host")


def to(service: GpuService):
    def send(request: IngestRequest) -> IngestResponse:
        # through JSON, as over HTTP
        return service.ingest(IngestRequest.model_validate_json(request.model_dump_json()))

    return send


def agent_on(service: GpuService, fake, clock: Clock) -> NodeAgent:
    """An agent of the node ``gpu-a`` (NVML on ``fake``) reporting to ``service`` every 10 s of
    ``clock``."""
    sampler = Sampler(NvmlBackend(nvml=fake), node="gpu-a", clock=clock)
    return NodeAgent(sampler, to(service), interval_s=10, clock=clock)


def test_an_agent_idles_until_told_then_samples_and_buffers_what_it_cannot_send(service):
    fake = three_gpus()
    clock = Clock()
    agent = agent_on(service, fake, clock)
    assert agent.step() == 10  # nobody watches: a heartbeat, and again in one interval
    assert fake.total_calls == 0
    record = service.nodes.get("gpu-a")
    assert record is not None and record.sampling is False and record.info is None

    service.poll_loop.touch()  # a panel asks
    assert agent.step() == 0  # told to sample: at once
    assert agent.step() == 10
    assert agent.samples_taken == 1 and len(record.history) == 1
    assert record.info is not None and record.info["backend"] == "nvml"

    agent.send = HttpSender(dead_url(), "air-agent-x", timeout_s=2)
    for _ in range(3):  # the server is away: samples are kept
        clock.now += 10
        agent.step()
    assert agent.samples_taken == 4 and "127.0.0.1" in (agent.last_send_error or "")
    agent.send = to(service)
    service.poll_loop.touch()
    clock.now += 10
    agent.step()
    assert len(record.history) == 5  # the three kept, and the new one
    assert agent.last_send_error is None


def test_out_of_touch_for_longer_than_the_idle_timeout_it_stops_sampling(service):
    fake = three_gpus()
    clock = Clock()
    agent = agent_on(service, fake, clock)
    service.poll_loop.touch()
    agent.step()
    agent.step()
    assert agent.samples_taken == 1
    agent.send = HttpSender(dead_url(), "air-agent-x", timeout_s=2)
    clock.now += 299
    agent.step()
    assert agent.samples_taken == 2  # still within the idle timeout of its last contact
    calls = fake.total_calls
    clock.now += 2
    agent.step()
    clock.now += 10
    agent.step()
    assert agent.samples_taken == 2 and fake.total_calls == calls  # nobody can be watching


def test_a_refused_report_is_dropped_not_resent(service):
    clock = Clock()
    agent = agent_on(service, three_gpus(), clock)
    service.poll_loop.touch()
    agent.step()  # told to sample
    sent: list[int] = []

    def refuse(request: IngestRequest) -> IngestResponse:
        sent.append(len(request.samples))
        raise SendFailed("down") if len(sent) == 1 else AssertionError("resent")

    agent.send = refuse
    clock.now += 10
    agent.step()
    assert sent == [1]  # kept for later after a failure...

    def too_big(request: IngestRequest) -> IngestResponse:
        sent.append(len(request.samples))
        raise ReportRefused("413")

    agent.send = too_big
    clock.now += 10
    agent.step()
    assert sent == [1, 2]  # ...and sent again with the next, which is refused
    agent.send = to(service)
    clock.now += 10
    agent.step()
    record = service.nodes.get("gpu-a")
    assert record is not None and len(record.history) == 1  # the refused two are gone
    assert agent.samples_taken == 3


def test_the_interval_is_bounded():
    with pytest.raises(ValueError, match="interval"):
        NodeAgent(Sampler(NvmlBackend(nvml=three_gpus()), node="n"), print, interval_s=0)


def test_the_agent_has_no_jupyter_imports_and_starts_nothing_at_import():
    assert_light_import(
        "import jupyter_air.telemetry.agent, jupyter_air.telemetry.models",
        {"jupyter_server", "tornado", "jupyter_core", "jupyterlab", "traitlets", "pynvml"},
    )
