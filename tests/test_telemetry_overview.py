"""The cluster overview (``GpuService.overview``) in this process: each node's row is encoded
without a pydantic round trip of what the server built, and must be the very JSON that validating
the row through ``NodeSummary`` gives; an agent's newest sample is kept as its model and served
as the dict it always was."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest
from fake_nvml import FakeGpu, FakeMig, FakeNvml, MiB, three_gpus

from jupyter_air.server import gpu_service
from jupyter_air.server.gpu_service import GpuService
from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.models import GpuSummary, IngestRequest, NodeSummary
from jupyter_air.telemetry.nvml import NvmlBackend

AGENT = {"version": "0.1.0", "interval_s": 10.0, "started": 0.0}


@pytest.fixture
def gpu():
    service = GpuService(backend="simulated", simulated_gpus=2, node="jupyter-host", interval_s=10)
    yield service
    service.sampler.close()


def report(sampler: Sampler, *, info: dict | None = None, samples: int = 1, **more) -> bytes:
    now = time.time()
    sampled = [sampler.sample() for _ in range(samples)]
    for k, sample in enumerate(sampled):
        sample["t"] = now - samples + k + 1
    body = {
        "node": sampler.node,
        "agent": AGENT,
        "sampling": True,
        "info": info if info is not None else sampler.info(),
        "samples": sampled,
        **more,
    }
    return json.dumps(body).encode()


def ingest(gpu: GpuService, body: bytes) -> IngestRequest:
    request = IngestRequest.model_validate_json(body)
    gpu.ingest(request)
    return request


def reference_row(gpu: GpuService, node: str) -> str:
    """The row as the overview built it before: the node's status, devices and latest sample as
    the one-node payload has them, validated whole through ``NodeSummary``."""
    view = json.loads(gpu.payload(node=node))
    latest = view["latest"]
    readings = {g["index"]: g for g in latest["gpus"]} if latest else {}
    devices = {d["index"]: d for d in view["devices"]}
    rows = []
    for index in sorted(devices.keys() | readings.keys()):
        reading = readings.get(index, {})
        row = {k: v for k, v in reading.items() if k in GpuSummary.model_fields}
        device = devices.get(index, {})
        rows.append({**row, "index": index, "name": device.get("name"), "uuid": device.get("uuid")})
    return NodeSummary.model_validate(
        {
            **view,
            "last_sample_t": latest["t"] if latest else None,
            "host": latest["host"] if latest else None,
            "gpus": rows,
        }
    ).model_dump_json()


async def test_each_row_of_the_overview_is_the_json_its_model_gives(gpu):
    busy = three_gpus()
    busy.gpus[0].compute = [(4242, 2_000 * MiB)]
    busy.gpus[0].ecc = (3, 1)
    busy.gpus[1].mig = [FakeMig(uuid="MIG-aaaa"), FakeMig(uuid="MIG-bbbb")]
    busy_node = Sampler(NvmlBackend(nvml=busy), node="gpu-busy")
    ingest(gpu, report(busy_node, samples=3, holds=["run 7"], error="NVML: slow"))
    # devices known without a reading (a GPU lost since), and a reading of an unknown device
    odd = Sampler(NvmlBackend(nvml=FakeNvml([FakeGpu(uuid="GPU-odd-0")])), node="gpu-odd")
    info = odd.info()
    info["devices"] = [{"index": 3, "name": "gone", "uuid": "GPU-gone"}]
    ingest(gpu, report(odd, info=info))
    # a node that has not sampled yet: a heartbeat without its info
    heartbeat = {"node": "gpu-quiet", "agent": AGENT, "sampling": False}
    ingest(gpu, json.dumps(heartbeat).encode())
    gpu.history.append(gpu.sampler.sample())  # the Jupyter host's own node

    overview = json.loads(await gpu.overview())
    names = [row["node"] for row in overview["nodes"]]
    assert names == ["gpu-busy", "gpu-odd", "gpu-quiet", "jupyter-host"]
    for row in overview["nodes"]:
        part = json.dumps(row, separators=(",", ":"), ensure_ascii=False)
        assert list(row) == list(NodeSummary.model_fields)
        assert part == reference_row(gpu, row["node"]), row["node"]
    busy_row, odd_row, quiet_row, _ = overview["nodes"]
    assert busy_row["held_by"] == ["run 7"] and busy_row["error"] == "NVML: slow"
    assert busy_row["gpus"][0]["health"]["ecc_uncorrected"] == 1
    assert [m["uuid"] for m in busy_row["gpus"][1]["mig"]] == ["MIG-aaaa", "MIG-bbbb"]
    assert "processes" not in busy_row["gpus"][0]
    assert [(g["index"], g["name"], g["util_pct"] is None) for g in odd_row["gpus"]] == [
        (0, None, False),
        (3, "gone", True),
    ]
    assert quiet_row["gpus"] == [] and quiet_row["host"] is None


async def test_the_raw_overview_text_is_what_the_models_encode(gpu):
    """Not only the same values: the bytes, as a panel's gzip'd answer was before."""
    node = Sampler(NvmlBackend(nvml=three_gpus()), node="gpu-a")
    ingest(gpu, report(node))
    text = await gpu.overview()
    start = text.index('"nodes":[') + len('"nodes":[')
    row = text[start : start + len(reference_row(gpu, "gpu-a"))]
    assert row == reference_row(gpu, "gpu-a")


async def test_an_agents_newest_sample_is_kept_as_its_model_and_served_as_before(gpu):
    fake = three_gpus()
    fake.gpus[2].compute = [(77, 1_000 * MiB)]
    node = Sampler(NvmlBackend(nvml=fake), node="gpu-a")
    request = ingest(gpu, report(node, samples=2))
    record = gpu.nodes.get("gpu-a")
    assert record is not None
    older, newest = record.history.since()
    assert newest.model is request.samples[-1] and older.model is None
    await gpu.overview()  # built from the model
    served = json.loads(gpu.payload(node="gpu-a"))["latest"]
    assert served == request.samples[-1].model_dump(mode="json")
    assert served["gpus"][2]["processes"][0]["pid"] == 77
    ingest(gpu, report(node))  # the next report: the former newest keeps its wire form only
    assert not record.history.since()[-2].full


async def test_a_big_overview_is_made_off_the_event_loop_while_reports_keep_arriving(
    gpu, monkeypatch
):
    """Many rows to encode: they are encoded in another thread, from what the nodes showed when
    the request came; a report stored meanwhile is in the next answer, not mixed into this one."""
    sampler = Sampler(NvmlBackend(nvml=three_gpus()), node="gpu-000")

    def report_of(node: str) -> bytes:  # one sampler's reading, as if each node had sent it
        body = json.loads(report(sampler))
        body["node"] = body["info"]["node"] = body["samples"][0]["node"] = node
        return json.dumps(body).encode()

    clock = {"now": time.time()}  # the server's clock, moved by the test
    gpu.nodes.clock = lambda: clock["now"]
    nodes = [f"gpu-{k:03d}" for k in range(gpu_service.OFFLOAD_MIN_ROWS)]
    for node in nodes:
        ingest(gpu, report_of(node))
    clock["now"] += 1.0  # the panel asks a second after the nodes reported
    started, release = threading.Event(), threading.Event()
    threads: set[int] = set()
    encode = gpu_service.summary_json

    def held(*args):
        threads.add(threading.get_ident())
        started.set()
        release.wait(30)
        return encode(*args)

    monkeypatch.setattr(gpu_service, "summary_json", held)
    asked = asyncio.ensure_future(gpu.overview())
    for _ in range(3000):
        if started.is_set():
            break
        await asyncio.sleep(0.01)
    assert started.is_set()
    clock["now"] += 1.0
    newer = ingest(gpu, report_of(nodes[0])).samples[-1].t  # the loop goes on meanwhile
    assert not asked.done()
    release.set()
    view = json.loads(await asked)
    assert threading.get_ident() not in threads
    first = {row["node"]: row for row in view["nodes"]}
    assert len(first) == len(nodes) + 1 and first["gpu-000"]["last_sample_t"] < newer

    monkeypatch.setattr(gpu_service, "summary_json", encode)
    delta = json.loads(await gpu.overview(view["now"]))
    assert [row["node"] for row in delta["nodes"]] == ["gpu-000", "jupyter-host"]
    assert delta["nodes"][0]["last_sample_t"] == newer
    again = {row["node"]: row for row in json.loads(await gpu.overview())["nodes"]}
    assert again["gpu-000"]["last_sample_t"] == newer
    assert again["gpu-001"] == first["gpu-001"]
