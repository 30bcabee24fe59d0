"""The ingest endpoint on a real Jupyter server: only a node's agent token gets in (not Jupyter's
token, not a login cookie, not another node's token), without an XSRF cookie; oversized and
malformed reports are refused; nothing is stored unless the whole report is valid."""

from __future__ import annotations

import asyncio
import json
import re
import time
from urllib.parse import urlencode

import pytest
from telemetry_support import telemetry_config
from tornado.httpclient import AsyncHTTPClient, HTTPClientError

from jupyter_air.telemetry.agent import (
    AUTH_SCHEME,
    INGEST_PATH,
    AgentRejected,
    HttpSender,
    ReportRefused,
)
from jupyter_air.telemetry.agent_tokens import mint_token, revoke_token
from jupyter_air.telemetry.models import IngestRequest


@pytest.fixture
def air_config(tmp_path) -> dict:
    return telemetry_config(tmp_path, telemetry_ingest_max_bytes=16 * 1024)


def report(node: str = "gpu-1", gpus: int = 2, samples: int = 1) -> dict:
    t0 = round(time.time()) - samples
    return {
        "node": node,
        "agent": {"version": "0.1.0", "interval_s": 10.0, "started": t0},
        "sampling": True,
        "info": {
            "node": node,
            "backend": "nvml",
            "devices": [
                {"index": i, "name": "NVIDIA H100", "uuid": f"GPU-{i}"} for i in range(gpus)
            ],
        },
        "samples": [
            {
                "t": t0 + k,
                "node": node,
                "host": {"cpu_pct": 3.0, "mem_used_mb": 1000.0, "mem_total_mb": 2000.0},
                "gpus": [{"index": i, "util_pct": 50.0} for i in range(gpus)],
            }
            for k in range(samples)
        ],
    }


async def post(jp_fetch, body: bytes | dict, token: str | None, **headers):
    if token is not None:
        headers["Authorization"] = f"{AUTH_SCHEME} {token}"
    else:
        headers.setdefault("Authorization", "")
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    return await jp_fetch(*INGEST_PATH.split("/"), method="POST", body=data, headers=headers)


async def refused(jp_fetch, body, token, code: int, **headers) -> str:
    with pytest.raises(HTTPClientError) as error:
        await post(jp_fetch, body, token, **headers)
    assert error.value.code == code
    return json.loads(error.value.response.body)["message"]


def stored(jp_serverapp) -> list[str]:
    return jp_serverapp.web_app.settings["jupyter_air"]["gpu"].nodes.names()


async def test_an_agent_token_reports_for_its_node_without_any_xsrf_cookie(jp_fetch, data_dir):
    token = mint_token(data_dir, "gpu-1")
    sent = report(samples=3)
    answer = await post(jp_fetch, sent, token)
    body = json.loads(answer.body)
    assert body["accepted"] == 3
    assert body["have_info"] is True
    assert body["next_s"] == 10.0
    assert isinstance(body["sample"], bool)
    view = json.loads((await jp_fetch("air", "api", "gpu", params={"node": "gpu-1"})).body)
    assert view["source"] == "agent" and view["state"] == "live"
    assert [s["t"] for s in view["samples"]] == [s["t"] for s in sent["samples"]]
    assert view["devices"][1]["uuid"] == "GPU-1"


async def test_bad_tokens_and_jupyter_credentials_are_refused_and_nothing_is_stored(
    jp_fetch, jp_serverapp, data_dir
):
    # the server reads the token file again when it changed, here at once (by default within
    # 2 s for a revoked token; a new one is seen at once)
    jp_serverapp.web_app.settings["jupyter_air"]["gpu"].tokens.recheck_s = 0
    token = mint_token(data_dir, "gpu-1")
    body = report()
    assert "agent token" in await refused(jp_fetch, body, None, 403)  # no credentials
    await refused(jp_fetch, body, token + "x", 403)  # a wrong token
    await refused(jp_fetch, body, "", 403)
    # the server's own token, as an API client would send it
    jupyter_token = jp_serverapp.identity_provider.token
    await refused(jp_fetch, body, None, 403, Authorization=f"token {jupyter_token}")
    await refused(jp_fetch, body, jupyter_token, 403)
    # another node's token
    other = mint_token(data_dir, "gpu-2")
    message = await refused(jp_fetch, body, other, 403)
    assert "reports for node 'gpu-2', not 'gpu-1'" in message
    # a revoked token
    revoke_token(data_dir, "gpu-2")
    await refused(jp_fetch, report("gpu-2"), other, 403)
    assert stored(jp_serverapp) == []


async def test_a_login_cookie_alone_does_not_get_in(
    jp_fetch, jp_serverapp, jp_http_port, jp_base_url
):
    client = AsyncHTTPClient()
    base = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    login = await client.fetch(base + "login", raise_error=False)
    xsrf = re.search(r"_xsrf=([^;]+)", login.headers.get("Set-Cookie", "")).group(1)
    signed_in = await client.fetch(
        base + "login",
        method="POST",
        body=urlencode({"password": jp_serverapp.identity_provider.token, "_xsrf": xsrf}),
        headers={"Cookie": f"_xsrf={xsrf}"},
        follow_redirects=False,
        raise_error=False,
    )
    cookies = "; ".join(
        c.split(";")[0] for c in signed_in.headers.get_list("Set-Cookie") if "=" in c
    )
    assert "username-" in cookies  # a real login cookie
    cookies += f"; _xsrf={xsrf}"
    status = await client.fetch(base + "api/status", headers={"Cookie": cookies})
    assert status.code == 200  # the cookie works for Jupyter's API
    answer = await client.fetch(
        base + INGEST_PATH,
        method="POST",
        body=json.dumps(report()),
        headers={"Cookie": cookies, "X-XSRFToken": xsrf},
        raise_error=False,
    )
    assert answer.code == 403
    assert stored(jp_serverapp) == []


async def test_oversized_reports_are_refused_whole(jp_fetch, jp_serverapp, data_dir):
    token = mint_token(data_dir, "gpu-1")
    big = json.dumps(report(gpus=8, samples=60)).encode()
    assert len(big) > 16 * 1024
    message = await refused(jp_fetch, big, token, 413)
    assert "at most 16384 bytes" in message and "telemetry_ingest_max_bytes" in message
    assert stored(jp_serverapp) == []


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{not json", "Malformed telemetry report"),
        (json.dumps({**report(), "sampling": "maybe"}).encode(), "sampling"),
        (json.dumps(report() | {"samples": [{"t": 1, "node": "gpu-1"}]}).encode(), "host"),
        (
            json.dumps(
                report()
                | {
                    "samples": [
                        {"t": 5, "node": "gpu-1", "host": {}, "gpus": [{"index": 0}]},
                        {"t": 6, "node": "gpu-1", "host": {}, "gpus": [{"util_pct": 250}]},
                    ]
                }
            ).encode(),
            "samples.1.gpus.0.index: Field required",
        ),
        (json.dumps(report(gpus=65)).encode(), "at most 64"),
    ],
)
async def test_malformed_reports_are_a_400_naming_the_field_and_store_nothing(
    jp_fetch, jp_serverapp, data_dir, body, words
):
    token = mint_token(data_dir, "gpu-1")
    message = await refused(jp_fetch, body, token, 400)
    assert words in message
    assert stored(jp_serverapp) == []


async def test_an_agent_cannot_report_as_the_jupyter_host(jp_fetch, jp_serverapp, data_dir):
    token = mint_token(data_dir, "jupyter-host")
    message = await refused(jp_fetch, report("jupyter-host"), token, 409)
    assert "own node" in message
    assert stored(jp_serverapp) == []


async def test_the_authorizer_can_refuse_agents(jp_fetch, jp_serverapp, data_dir):
    class NoAgents:
        def is_authorized(self, handler, user, action, resource) -> bool:
            return resource != "air-telemetry"

    jp_serverapp.web_app.settings["authorizer"] = NoAgents()
    token = mint_token(data_dir, "gpu-1")
    await refused(jp_fetch, report(), token, 403)
    assert stored(jp_serverapp) == []


async def test_the_agent_sender_tells_refusals_from_failures(
    jp_fetch, jp_serverapp, jp_http_port, jp_base_url, data_dir
):
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}"
    token = mint_token(data_dir, "gpu-1")
    loop = asyncio.get_running_loop()

    async def send(sender: HttpSender, body: dict):
        return await loop.run_in_executor(None, sender, IngestRequest.model_validate(body))

    answer = await send(HttpSender(url, token), report())
    assert answer.accepted == 1 and answer.have_info
    with pytest.raises(ReportRefused, match="413"):  # dropped by the agent, not resent
        await send(HttpSender(url, token), report(gpus=8, samples=60))
    with pytest.raises(AgentRejected, match="403"):  # the agent stops
        await send(HttpSender(url, token + "x"), report())
    with pytest.raises(AgentRejected, match=r"403.*reports for node 'gpu-1'"):
        await send(HttpSender(url, token), report("gpu-2"))
