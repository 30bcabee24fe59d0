"""A slow tracking server cannot starve the rest of the server: with the user's MLflow answering
every API call after 10 s (a stub HTTP server on loopback, in a process of its own), 20 runs
requests hang while ``GET air/api/gpu`` (a large, compressed history) and ``GET
air/api/workloads`` still answer within a second — the MLflow queries hold no thread, and the
workload calls have their own executor."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time

import pytest
from telemetry_support import telemetry_config
from tornado.httpclient import AsyncHTTPClient

SLOW_S = 10.0
STUB = """
import json, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

class Slow(BaseHTTPRequestHandler):
    def do_GET(self):
        self.answer()

    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.answer()

    def answer(self):
        if self.path == "/health":
            body = b"OK"
        else:
            time.sleep(float(sys.argv[1]))
            body = json.dumps({"experiments": [], "runs": []}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

ThreadingHTTPServer.daemon_threads = True
server = ThreadingHTTPServer(("127.0.0.1", 0), Slow)
print(server.server_address[1], flush=True)
server.serve_forever()
"""


@pytest.fixture(scope="module")
def slow_mlflow():
    process = subprocess.Popen(
        [sys.executable, "-c", STUB, str(SLOW_S)], stdout=subprocess.PIPE, text=True
    )
    try:
        yield f"http://127.0.0.1:{int(process.stdout.readline())}"
    finally:
        process.kill()
        process.wait()


@pytest.fixture
def air_config(tmp_path) -> dict:
    return telemetry_config(tmp_path, simulated_gpus=8, gpu_poll_interval=0.05, gpu_idle_timeout=0)


@pytest.fixture
def server_env(slow_mlflow) -> dict[str, str]:
    return {"MLFLOW_TRACKING_URI": slow_mlflow}


async def timed_get(port: int, path: str, headers: dict[str, str]) -> float:
    """Seconds until the answer to ``GET path`` is in, over a plain socket (no HTTP client of
    this process: its name resolution would share the server process's default executor)."""
    started = time.monotonic()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    lines = [f"GET {path} HTTP/1.0", "Host: 127.0.0.1", "Accept-Encoding: gzip"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
    answer = await reader.read()  # HTTP/1.0: the server closes when it is done
    writer.close()
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    return time.monotonic() - started


async def test_a_slow_mlflow_does_not_starve_the_gpu_and_workloads_endpoints(
    jp_fetch, jp_serverapp, jp_http_port, jp_base_url, jp_auth_header
):
    from jupyter_air.server.gpu_service import OFFLOAD_MIN_BYTES

    gpu = jp_serverapp.web_app.settings["jupyter_air"]["gpu"]
    await jp_fetch("air", "api", "gpu")  # sampling starts
    deadline = time.monotonic() + 60
    while len(gpu.payload()) < 2 * OFFLOAD_MIN_BYTES:  # compressed off the event loop
        assert time.monotonic() < deadline, "the GPU history did not grow"
        await asyncio.sleep(0.2)
    gpu.poll_loop.interval_s = 10.0  # enough history: sample as a panel would

    # from a client of their own (jp_fetch's does 10 requests at a time: ours would queue)
    browser = AsyncHTTPClient(force_instance=True, max_clients=30)
    url = f"http://127.0.0.1:{jp_http_port}{jp_base_url}air/api/runs?notebook="
    runs = [
        asyncio.ensure_future(
            browser.fetch(f"{url}n{i}.ipynb", headers=jp_auth_header, request_timeout=120)
        )
        for i in range(20)
    ]
    await asyncio.sleep(1.0)  # every runs request is waiting on MLflow now
    gpu_s, workloads_s = [], []
    answered_while_waiting = 0  # answers that came while every runs request still waited
    for _ in range(3):  # a loaded machine may end the runs requests' 10 s before round 3
        for path, seconds in (("air/api/gpu", gpu_s), ("air/api/workloads", workloads_s)):
            seconds.append(await timed_get(jp_http_port, jp_base_url + path, jp_auth_header))
            answered_while_waiting += not any(r.done() for r in runs)
        if any(r.done() for r in runs):
            break
        await asyncio.sleep(0.1)
    # starved, they would wait as long as the runs requests (10 s, the MLflow timeout); a
    # loaded machine may take a second or two, never that
    assert max(gpu_s) < 4.0, gpu_s
    assert max(workloads_s) < 4.0, workloads_s
    assert answered_while_waiting >= 2, "the first GPU and workloads answers came after the runs"

    answers = [json.loads(r.body) for r in await asyncio.gather(*runs)]
    browser.close()
    for answer in answers:  # each said, in about the timeout, that MLflow did not answer
        assert answer["mlflow"]["state"] == "failed"
        assert "did not answer" in answer["mlflow"]["error"]
