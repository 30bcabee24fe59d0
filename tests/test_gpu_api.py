"""The GPU REST API on a real Jupyter server with simulated GPUs."""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest
from kernel_support import open_notebook
from tornado.httpclient import HTTPClientError


def body(response) -> dict:
    return json.loads(response.body)


async def test_get_returns_devices_backend_state_and_history(jp_fetch):
    response = await jp_fetch("air", "api", "gpu")
    assert response.code == 200
    data = body(response)
    assert data["backend"] == "simulated"
    assert data["reason"] is None
    assert [d["index"] for d in data["devices"]] == [0, 1, 2]
    assert data["interval_s"] == 10.0
    assert data["history_s"] == 7200.0
    assert data["idle_timeout_s"] == 300.0
    assert data["paused"] is False
    assert data["resumed"] is True  # the first request woke the sampler
    latest = data["latest"]
    assert len(latest["gpus"]) == 3
    assert latest["host"]["mem_total_mb"] > 0
    assert [s["t"] for s in data["samples"]] == [latest["t"]]
    assert "processes" not in data["samples"][0]["gpus"][0]


async def test_without_a_token_it_is_forbidden(jp_fetch):
    for method, parts, kwargs in (
        ("GET", ("air", "api", "gpu"), {}),
        ("POST", ("air", "api", "gpu", "refresh"), {"body": b""}),
    ):
        with pytest.raises(HTTPClientError) as error:
            await jp_fetch(*parts, method=method, headers={"Authorization": ""}, **kwargs)
        assert error.value.code == 403


async def test_since_returns_only_new_samples(jp_fetch):
    first = body(await jp_fetch("air", "api", "gpu"))
    last_t = first["samples"][-1]["t"]
    await asyncio.sleep(1.1)  # refreshes within a second share a sample
    refreshed = body(
        await jp_fetch(
            "air", "api", "gpu", "refresh", method="POST", body=b"", params={"since": str(last_t)}
        )
    )
    assert len(refreshed["samples"]) == 1
    assert refreshed["samples"][0]["t"] > last_t
    assert refreshed["latest"]["t"] == refreshed["samples"][0]["t"]
    nothing_new = await jp_fetch(
        "air", "api", "gpu", params={"since": str(refreshed["latest"]["t"])}
    )
    assert body(nothing_new)["samples"] == []
    # a delta poll stays small: the latest sample (3 GPUs with their health), no history
    assert len(nothing_new.body) < 4096


async def test_refresh_adds_a_sample_to_the_history(jp_fetch):
    await jp_fetch("air", "api", "gpu")
    await asyncio.sleep(1.1)
    await jp_fetch("air", "api", "gpu", "refresh", method="POST", body=b"")
    data = body(await jp_fetch("air", "api", "gpu"))
    assert len(data["samples"]) == 2


@pytest.mark.parametrize("bad", ["yesterday", "nan", "inf"])
async def test_a_bad_since_is_a_clear_400(jp_fetch, bad):
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("air", "api", "gpu", params={"since": bad})
    assert error.value.code == 400
    assert "'since' must be a unix time" in json.loads(error.value.response.body)["message"]


async def test_an_unknown_node_is_a_clear_404(jp_fetch):
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch("air", "api", "gpu", params={"node": "elsewhere"})
    assert error.value.code == 404
    assert "elsewhere" in json.loads(error.value.response.body)["message"]


async def test_large_answers_are_gzip_compressed(jp_fetch, jp_serverapp):
    gpu = jp_serverapp.web_app.settings["jupyter_air"]["gpu"]
    gpu.ensure_started()
    for _ in range(30):  # make the history bigger than the compression threshold
        await gpu.poll_loop.fresh_sample()
    response = await jp_fetch(
        "air", "api", "gpu", headers={"Accept-Encoding": "gzip"}, decompress_response=False
    )
    assert response.headers["Content-Encoding"] == "gzip"
    data = json.loads(gzip.decompress(response.body))
    assert len(data["samples"]) >= 30


async def test_many_concurrent_clients_share_one_poll_loop(jp_fetch, jp_serverapp):
    answers = await asyncio.gather(*(jp_fetch("air", "api", "gpu") for _ in range(40)))
    assert {a.code for a in answers} == {200}
    gpu = jp_serverapp.web_app.settings["jupyter_air"]["gpu"]
    assert gpu.poll_loop.samples_taken == 1
    loops = [t for t in asyncio.all_tasks() if t.get_name() == "jupyter-air-gpu-poll-loop"]
    assert len(loops) == 1


async def test_a_notebook_kernel_is_named_as_the_owner_of_its_gpu_process(jp_fetch):
    # the simulated backend shows the server's kernels as GPU processes; the owner resolution
    # (kernel pid → session → notebook path) is the real one
    session = await open_notebook(jp_fetch, "experiments/llm.ipynb")
    try:
        await asyncio.sleep(1.1)
        data = body(await jp_fetch("air", "api", "gpu", "refresh", method="POST", body=b""))
        processes = [p for g in data["latest"]["gpus"] for p in g.get("processes", [])]
        owned = [p for p in processes if p["kernel"]]
        assert len(owned) == 1, processes
        assert owned[0]["kernel"]["kernel_id"] == session["kernel"]["id"]
        assert owned[0]["kernel"]["path"] == "experiments/llm.ipynb"
        assert owned[0]["kernel"]["kernel_name"] == "python3"
        assert owned[0]["user"] and "ipykernel" in owned[0]["command"]
    finally:
        await jp_fetch("api", "sessions", session["id"], method="DELETE")


async def test_stopping_the_extension_stops_sampling(jp_fetch, jp_serverapp):
    await jp_fetch("air", "api", "gpu")
    app = jp_serverapp.extension_manager.extension_apps["jupyter_air"]
    (air,) = app
    assert air.gpu.poll_loop.running
    await air.stop_extension()
    assert not air.gpu.poll_loop.running
