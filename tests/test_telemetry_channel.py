"""The agents' persistent channel (``GET air/api/telemetry/channel``, a websocket) on a real Jupyter
server, and the agent's sender over it: one connection carries report after report; only a node's
agent token opens it, and the token is checked again for every report; a bad report gets one
clear answer and the channel stays open; a server without the channel gets keep-alive POSTs."""

from __future__ import annotations

import asyncio
import json
from contextlib import closing

import pytest
from telemetry_support import wait_until
from test_telemetry_ingest import air_config, report  # noqa: F401 (the same server's settings)
from tornado.httpclient import HTTPClientError, HTTPRequest
from tornado.websocket import websocket_connect

from jupyter_air.telemetry.agent import (
    ANSWER_EVERY_HEADER,
    AUTH_SCHEME,
    CHANNEL_PATH,
    MAX_BYTES_HEADER,
    AgentRejected,
    HttpSender,
    ReportRefused,
)
from jupyter_air.telemetry.agent_tokens import mint_token, revoke_token
from jupyter_air.telemetry.models import IngestRequest
from jupyter_air.telemetry.sender import BATCH_HEADER


@pytest.fixture
def base_url(jp_fetch, jp_http_port, jp_base_url) -> str:
    """The test server's URL, once it listens (``jp_fetch`` starts it)."""
    return f"http://127.0.0.1:{jp_http_port}{jp_base_url}"


def later(body: dict, seconds: int) -> dict:
    """The report with its samples ``seconds`` later (a new report of the same node)."""
    for sample in body["samples"]:
        sample["t"] += seconds
    return body


async def send(sender: HttpSender, body: dict):
    """The sender's answer, the sender running off the event loop as an agent's thread does."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, sender, IngestRequest.model_validate(body))


async def channel(base_url: str, token: str | None, **headers: str):
    if token is not None:
        headers["Authorization"] = f"{AUTH_SCHEME} {token}"
    url = base_url.replace("http://", "ws://") + CHANNEL_PATH
    return await websocket_connect(HTTPRequest(url, headers=headers, connect_timeout=30))


def gpu_service(jp_serverapp):
    return jp_serverapp.web_app.settings["jupyter_air"]["gpu"]


async def test_the_agent_sends_report_after_report_on_one_channel(
    jp_fetch, jp_serverapp, base_url, data_dir
):
    with closing(HttpSender(base_url, mint_token(data_dir, "gpu-1"))) as sender:
        answers = [await send(sender, later(report(samples=2), 10 * k)) for k in range(4)]
    assert [a.accepted for a in answers] == [2, 2, 2, 2]
    assert answers[0].have_info and answers[0].next_s == 10.0
    assert sender.transport == "channel" and sender.connections == 1
    view = json.loads((await jp_fetch("air", "api", "gpu", params={"node": "gpu-1"})).body)
    assert view["source"] == "agent" and len(view["samples"]) == 8
    assert view["devices"][1]["uuid"] == "GPU-1"


async def test_an_agent_that_asks_is_answered_only_with_news(jp_serverapp, base_url, data_dir):
    poll_loop = gpu_service(jp_serverapp).poll_loop
    poll_loop._last_activity = None  # no panel asked: agents are told not to sample
    asks = {ANSWER_EVERY_HEADER: "3", BATCH_HEADER: "2"}  # reports may wait 2 s to be stored
    ws = await channel(base_url, mint_token(data_dir, "gpu-1"), **asks)
    assert ws.headers[ANSWER_EVERY_HEADER] == "3"
    assert ws.headers[BATCH_HEADER] == "1"  # they are stored in the server's batches of 1 s
    await ws.write_message(json.dumps(report()))
    first = json.loads(await ws.read_message())  # the first report is always answered
    assert first["accepted"] == 1 and first["sample"] is False
    poll_loop.touch()  # a panel asks: news for the agent
    await ws.write_message(json.dumps(later(report(samples=2), 10)))
    woke = json.loads(await ws.read_message())
    assert woke["accepted"] == 2 and woke["sample"] is True
    for k in (3, 4, 5):  # nothing new: only the third of them is answered
        await ws.write_message(json.dumps(later(report(samples=k), 10 * k)))
    assert json.loads(await ws.read_message())["accepted"] == 5
    await ws.write_message(b"{not json", binary=True)  # a refusal is always answered
    assert json.loads(await ws.read_message())["status"] == 400
    ahead = later(report(samples=1), 3600)  # dated an hour ahead: refused once its batch is stored
    await ws.write_message(json.dumps(ahead))
    answer = json.loads(await ws.read_message())
    assert answer["status"] == 400 and "synchronise the clocks" in answer["message"]
    ws.close()
    assert len(gpu_service(jp_serverapp).nodes.get("gpu-1").history) == 15
    # the sender asks for it, and is granted at most what the server allows
    ws = await channel(base_url, mint_token(data_dir, "gpu-2"), **{ANSWER_EVERY_HEADER: "1000"})
    assert ws.headers[ANSWER_EVERY_HEADER] == "60"
    ws.close()
    # each report stored at once: for an agent that lets them wait less than the server's batch,
    # one that does not ask, and one that waits for every answer (the Ray forwarder)
    for asks in ({ANSWER_EVERY_HEADER: "6", BATCH_HEADER: "0.5"}, {ANSWER_EVERY_HEADER: "6"}, {}):
        ws = await channel(base_url, mint_token(data_dir, "gpu-2"), **asks)
        assert BATCH_HEADER not in ws.headers
        ws.close()
    with closing(HttpSender(base_url, mint_token(data_dir, "gpu-3"), batch_s=2)) as sender:
        answers = [await send(sender, later(report("gpu-3"), 10 * k)) for k in range(8)]
    assert sender._every == 6 and sender.connections == 1
    assert sender._grace_s == 1.5  # it waits the batch's second longer for news
    assert all(a.accepted == 1 and a.sample and a.have_info for a in answers)
    # the last report was not answered: it is stored with its batch, a moment later
    assert await wait_until(lambda: len(gpu_service(jp_serverapp).nodes.get("gpu-3").history) == 8)


async def test_a_channel_closed_meanwhile_is_opened_again_for_the_same_report(
    jp_serverapp, base_url, data_dir
):
    with closing(HttpSender(base_url, mint_token(data_dir, "gpu-1"))) as sender:
        assert (await send(sender, report())).accepted == 1
        sender._ws.sock.close()  # the connection breaks between two reports
        assert (await send(sender, later(report(), 10))).accepted == 1
    assert sender.connections == 2
    assert len(gpu_service(jp_serverapp).nodes.get("gpu-1").history) == 2


async def test_without_a_channel_the_agent_posts_on_one_kept_connection(
    jp_serverapp, base_url, data_dir
):
    # a server of an older jupyter-air: no channel (404), so POST, on one connection
    sender = HttpSender(base_url, mint_token(data_dir, "gpu-1"))
    sender.channel_url = sender.channel_url.replace("channel", "no-such-channel")
    plain = HttpSender(base_url, sender._token, channel=False)
    try:
        answers = [await send(sender, later(report(), 10 * k)) for k in range(3)]
        answers.append(await send(plain, later(report(), 40)))
        answers.append(await send(plain, later(report(), 50)))
    finally:
        sender.close()
        plain.close()
    assert [a.accepted for a in answers] == [1] * 5
    assert sender.transport == "post" and sender.connections == 1
    assert plain.connections == 1


async def test_only_an_agent_token_opens_the_channel(jp_serverapp, base_url, data_dir):
    mint_token(data_dir, "gpu-1")
    for token, headers in (
        (None, {}),
        ("air-agent-wrong", {}),
        (None, {"Authorization": f"token {jp_serverapp.identity_provider.token}"}),
    ):
        with pytest.raises(HTTPClientError) as error:
            await channel(base_url, token, **headers)
        assert error.value.code == 403
    # the agent's sender says why, and stops (AgentRejected)
    with pytest.raises(AgentRejected, match=r"403.*agent token"):
        await send(HttpSender(base_url, "air-agent-wrong"), report())
    # a browser page of another origin cannot use a token it has
    with pytest.raises(HTTPClientError) as error:
        await channel(base_url, mint_token(data_dir, "gpu-1"), Origin="http://elsewhere.example")
    assert error.value.code == 403
    assert gpu_service(jp_serverapp).nodes.names() == []


async def test_every_report_on_the_channel_is_authenticated(jp_serverapp, base_url, data_dir):
    gpu_service(jp_serverapp).tokens.recheck_s = 0  # the token file is looked at every time
    token = mint_token(data_dir, "gpu-1")
    ws = await channel(base_url, token)
    assert ws.headers[MAX_BYTES_HEADER] == str(16 * 1024)
    await ws.write_message(json.dumps(report()))
    assert json.loads(await ws.read_message())["accepted"] == 1
    # another node's report on this node's channel: refused, and the channel closed
    await ws.write_message(json.dumps(report("gpu-2")))
    answer = json.loads(await ws.read_message())
    assert answer["status"] == 403 and "reports for node 'gpu-1', not 'gpu-2'" in answer["message"]
    assert await ws.read_message() is None and ws.close_code == 1008
    # a token revoked while its channel is open: the next report is refused
    ws = await channel(base_url, token)
    revoke_token(data_dir, "gpu-1")
    await ws.write_message(json.dumps(later(report(), 10)))
    answer = json.loads(await ws.read_message())
    assert answer["status"] == 403 and "revoked" in answer["message"]
    assert await ws.read_message() is None
    assert len(gpu_service(jp_serverapp).nodes.get("gpu-1").history) == 1


async def test_a_bad_report_gets_one_clear_answer_and_the_channel_stays_open(
    jp_serverapp, base_url, data_dir
):
    ws = await channel(base_url, mint_token(data_dir, "gpu-1"))
    bad = report()
    bad["samples"][0]["gpus"][1]["util_pct"] = 250
    for body, words in (
        (b"{not json", "Malformed telemetry report"),
        (json.dumps(bad), "samples.0.gpus.1.util_pct: Input should be less than or equal to 100"),
        (json.dumps(report("jupyter-host") | {"node": "gpu-1"}), "the report is for 'gpu-1'"),
    ):
        await ws.write_message(body, binary=isinstance(body, bytes))
        answer = json.loads(await ws.read_message())
        assert answer["status"] == 400 and words in answer["message"], answer
    await ws.write_message(json.dumps(report()))
    assert json.loads(await ws.read_message())["accepted"] == 1
    ws.close()
    assert len(gpu_service(jp_serverapp).nodes.get("gpu-1").history) == 1


async def test_the_sender_drops_a_refused_report_and_keeps_its_channel(
    jp_serverapp, base_url, data_dir
):
    with closing(HttpSender(base_url, mint_token(data_dir, "gpu-1"))) as sender:
        assert (await send(sender, report())).accepted == 1
        # too big for this server (16 KiB): the sender knows the limit from the channel
        with pytest.raises(ReportRefused, match="413"):
            await send(sender, report(gpus=8, samples=60))
        bad = later(report(), 10)
        bad["samples"][0]["t"] += 3600  # dated far ahead of the server's clock
        with pytest.raises(ReportRefused, match=r"400.*synchronise the clocks"):
            await send(sender, bad)
        assert (await send(sender, later(report(), 20))).accepted == 1
    assert sender.connections == 1


async def test_a_message_over_the_limit_closes_the_channel(jp_serverapp, base_url, data_dir):
    ws = await channel(base_url, mint_token(data_dir, "gpu-1"))
    await ws.write_message(b"x" * (16 * 1024 + 1), binary=True)
    assert await ws.read_message() is None and ws.close_code == 1009
    assert gpu_service(jp_serverapp).nodes.names() == []


async def test_the_authorizer_can_refuse_the_channel(jp_serverapp, base_url, data_dir):
    class NoAgents:
        def is_authorized(self, handler, user, action, resource) -> bool:
            return resource != "air-telemetry"

    jp_serverapp.web_app.settings["authorizer"] = NoAgents()
    with pytest.raises(AgentRejected, match="403"):
        await send(HttpSender(base_url, mint_token(data_dir, "gpu-1")), report())
    assert gpu_service(jp_serverapp).nodes.names() == []


async def test_a_stopped_agent_closes_its_channel(jp_serverapp, base_url, data_dir):
    from fake_nvml import FakeGpu, FakeNvml

    from jupyter_air.telemetry import Sampler
    from jupyter_air.telemetry.agent import NodeAgent
    from jupyter_air.telemetry.nvml import NvmlBackend

    sender = HttpSender(base_url, mint_token(data_dir, "gpu-1"))
    agent = NodeAgent(
        Sampler(NvmlBackend(nvml=FakeNvml([FakeGpu(uuid="GPU-a")])), node="gpu-1"),
        sender,
        interval_s=10,
    )
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, agent.step)  # a heartbeat, on the channel
    assert agent.reports == 1 and sender._ws is not None and sender.connections == 1
    await loop.run_in_executor(None, agent.stop)
    assert sender._ws is None
