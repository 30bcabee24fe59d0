"""A node agent whose reports travel through its mailbox (as on a Ray node, where the Jupyter
host takes them over Ray and forwards them): the server's real telemetry service gets what the
agent sampled and its answers reach the agent; a report nobody takes fails like an unreachable
server and its samples are sent with the next one; the server's refusals reach the agent as
they would over HTTP."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from fake_nvml import three_gpus
from test_telemetry_agent import Clock, to

from jupyter_air.server.gpu_service import GpuService
from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.agent import AgentRejected, NodeAgent, ReportRefused
from jupyter_air.telemetry.mailbox import Mailbox, forward
from jupyter_air.telemetry.models import IngestRequest, IngestResponse
from jupyter_air.telemetry.nvml import NvmlBackend

REQUEST = IngestRequest.model_validate(
    {
        "node": "ray-w2",
        "agent": {"version": "1", "interval_s": 10, "started": 1.0},
        "sampling": False,
    }
)


@pytest.fixture
def service() -> GpuService:
    return GpuService(backend="none", idle_timeout_s=300.0, node="jupyter-host")


def forwarding(mailbox: Mailbox, send: Callable[[IngestRequest], IngestResponse]) -> Callable:
    """The Jupyter host's side, for the reports to come: take, forward, give back (a thread)."""
    stop = threading.Event()

    def pump() -> None:
        while not stop.is_set():
            report = mailbox.take(0.05)
            if report is not None:
                mailbox.give(report[0], forward(send, report[1]))

    thread = threading.Thread(target=pump, daemon=True)
    thread.start()

    def halt() -> None:
        stop.set()
        thread.join(5)

    return halt


def test_reports_through_the_mailbox_reach_the_server_and_its_answers_the_agent(service):
    clock = Clock()
    mailbox = Mailbox(timeout_s=0.3)
    agent = NodeAgent(
        Sampler(NvmlBackend(nvml=three_gpus()), node="ray-w1", clock=clock),
        mailbox,
        interval_s=10,
        clock=clock,
    )
    halt = forwarding(mailbox, to(service))
    try:
        assert agent.step() == 10  # nobody watches: a heartbeat
        record = service.nodes.get("ray-w1")
        assert record is not None and record.sampling is False
        service.poll_loop.touch()  # a panel asks: the answer tells the agent to sample
        assert agent.step() == 0
        agent.step()
        assert agent.samples_taken == 1 and len(record.history) == 1
    finally:
        halt()

    for _ in range(2):  # nobody takes the reports (the Jupyter host away): samples are kept
        clock.now += 10
        agent.step()
    assert agent.samples_taken == 3 and "did not take" in (agent.last_send_error or "")
    assert len(record.history) == 1

    halt = forwarding(mailbox, to(service))
    try:
        service.poll_loop.touch()
        clock.now += 10
        agent.step()
    finally:
        halt()
    assert len(record.history) == 4 and agent.last_send_error is None  # the kept ones, and one


@pytest.mark.parametrize(
    ("error", "kind"), [(AgentRejected("the token was revoked"), AgentRejected),
                        (ReportRefused("over the limit (413)"), ReportRefused)]
)  # fmt: skip
def test_the_servers_refusal_reaches_the_agent_as_over_http(error, kind):
    def refuse(request: IngestRequest) -> IngestResponse:
        raise error

    mailbox = Mailbox(timeout_s=5)
    halt = forwarding(mailbox, refuse)
    try:
        with pytest.raises(kind, match=str(error).split(" ")[0]):
            mailbox(REQUEST)
    finally:
        halt()


def test_an_answer_to_an_older_report_is_not_taken_for_the_newer_ones():
    mailbox = Mailbox(timeout_s=0.2)
    with pytest.raises(Exception, match="did not take"):
        mailbox(REQUEST)  # report 1: nobody took it
    mailbox.give(1, ("ok", "{}"))  # its late answer
    taker = threading.Thread(target=lambda: mailbox.take(2.0))
    taker.start()
    with pytest.raises(Exception, match="did not take"):
        mailbox(REQUEST)  # report 2 is taken, never answered: the old answer does not count
    taker.join()
