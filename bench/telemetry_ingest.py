"""Node-agent telemetry at cluster scale, against a real Jupyter server process: 64 nodes x 8 GPUs
reporting every 10 s.

Prints figures (no pass/fail): bytes per report (raw and gzip), the server's CPU (% of one core)
and memory while 64 agents report, with every node's 2 h history full; a full 2 h history and a
delta for one node, and the cluster overview in full and as a delta: bytes and request time on
loopback. Reports are built by the real sampler over the pynvml fake (8 GPUs with health and one
process each), sent as agents send them (``--transport``: ``channel``, the agent's websocket,
answered when the answer is news, its reports stored in the server's batches; ``channel-each``,
the websocket with an answer to every report and each stored at once, as agents did before;
``keepalive``, its POST fallback on a kept connection; ``post``, one
request and connection a report, as agents did before the channel), token-authenticated.

``--curve`` prints the server's cost at 1, 8, 64 and 512 nodes instead (``--sizes``): for each
size and transport a fresh server, every agent a thread of this process with the agent's own
sender, one interval to connect, then ``--seconds`` of reports; CPU as % of one core and per
report, RSS per node (connections and latest samples; a full 2 h history per node is the
single-size run's figure). Sizes run in turn, the transports interleaved, so that a machine
shared with other work weighs on both alike; the fitted growth (CPU ~ nodes^k) comes last.

    python bench/telemetry_ingest.py [--nodes 64] [--gpus 8] [--seconds 30] [--json]
    python bench/telemetry_ingest.py --curve [--sizes 1,8,64,512] [--seconds 30]

``--batch-s S`` sets the server's ``JupyterAir.telemetry_batch_s`` (0: every report stored at
once), to compare with its default in runs one after the other.
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fake_nvml import FakeGpu, FakeNvml, MiB
from server_process import free_port, stop_process, wait_ready  # bench/server_process.py

from jupyter_air.telemetry import Sampler
from jupyter_air.telemetry.agent import AUTH_SCHEME, INGEST_PATH, HttpSender
from jupyter_air.telemetry.agent_tokens import mint_token
from jupyter_air.telemetry.models import AgentInfo, IngestRequest, NodeInfo, Sample
from jupyter_air.telemetry.nvml import NvmlBackend
from jupyter_air.telemetry.sender import ANSWER_EVERY, accepted_batch_s

INTERVAL_S = 10.0
HISTORY_S = 7200.0
BACKLOG_BATCH = 60


class Server:
    """A Jupyter server with jupyter-air, in its own process, on loopback."""

    def __init__(self, folder: Path, batch_s: float | None = None) -> None:
        self.port = free_port()
        self.token = "bench-" + os.urandom(8).hex()
        self.data_dir = folder / "air"
        config = folder / "jupyter_server_config.py"
        config.write_text(
            "c.ServerApp.jpserver_extensions = {'jupyter_air': True}\n"
            f"c.ServerApp.port = {self.port}\n"
            "c.ServerApp.ip = '127.0.0.1'\n"
            f"c.IdentityProvider.token = {self.token!r}\n"
            "c.ServerApp.open_browser = False\n"
            "c.ServerApp.allow_root = True\n"
            f"c.ServerApp.root_dir = {str(folder)!r}\n"
            "c.JupyterAir.gpu_backend = 'simulated'\n"
            "c.JupyterAir.simulated_gpus = 8\n"
            "c.JupyterAir.mlflow_embedded = False\n"
            f"c.JupyterAir.data_dir = {str(self.data_dir)!r}\n"
            + (f"c.JupyterAir.telemetry_batch_s = {batch_s!r}\n" if batch_s is not None else "")
        )
        self.base = f"http://127.0.0.1:{self.port}/"
        self.process = subprocess.Popen(
            [sys.executable, "-m", "jupyter_server", f"--config={config}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        if not wait_ready(self.process, lambda: self.get("api/status"), timeout_s=90):
            self.stop()
            raise RuntimeError("the Jupyter server did not start within 90 s")
        self.ps = psutil.Process(self.process.pid)

    def get(self, path: str, gzip_ok: bool = False) -> tuple[bytes, float]:
        headers = {"Authorization": f"token {self.token}"}
        if gzip_ok:
            headers["Accept-Encoding"] = "gzip"
        request = urllib.request.Request(self.base + path, headers=headers)
        start = time.perf_counter()
        with urllib.request.urlopen(request, timeout=60) as answer:
            body = answer.read()
        return body, (time.perf_counter() - start) * 1000

    def post_report(self, token: str, body: bytes) -> None:
        request = urllib.request.Request(
            self.base + INGEST_PATH,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"{AUTH_SCHEME} {token}"},
        )
        with urllib.request.urlopen(request, timeout=60) as answer:
            answer.read()

    def cpu_s(self) -> float:
        """The process's CPU seconds: the sum of its threads' schedstat (nanoseconds; the
        server's threads live as long as it does) where Linux has it, else psutil's (in
        clock ticks, 10 ms, too coarse for a node or two)."""
        total = 0
        try:
            for task in Path(f"/proc/{self.process.pid}/task").iterdir():
                with contextlib.suppress(FileNotFoundError):
                    total += int((task / "schedstat").read_text().split()[0])
        except OSError:
            times = self.ps.cpu_times()
            return times.user + times.system
        return total / 1e9

    def rss_mb(self) -> float:
        return self.ps.memory_info().rss / 2**20

    def stop(self) -> None:
        stop_process(self.process, timeout_s=30)


class Node:
    """One simulated node: a real sampler over the pynvml fake, and its report bodies."""

    def __init__(self, name: str, gpus: int, token: str) -> None:
        fake = FakeNvml(
            [
                FakeGpu(uuid=f"GPU-{name}-{i}", compute=[(4_000_000 + i, 20_000 * MiB)])
                for i in range(gpus)
            ]
        )
        self.name = name
        self.token = token
        self.sampler = Sampler(NvmlBackend(nvml=fake), node=name)
        self.template = self.sampler.sample()
        self.info = NodeInfo.model_validate(self.sampler.info())
        self.agent = AgentInfo(version="bench", interval_s=INTERVAL_S, started=time.time())
        self.random = random.Random(name)

    def sample_at(self, t: float) -> Sample:
        """The node's sample at ``t``, its values moving as a training job's do."""
        sample = Sample.model_validate(self.template)
        sample.t = round(t, 3)
        sample.host.cpu_pct = round(self.random.uniform(5, 60), 1)
        for gpu in sample.gpus:
            gpu.util_pct = round(self.random.uniform(0, 100), 1)
            gpu.mem_util_pct = round(self.random.uniform(0, 60), 1)
            gpu.mem_used_mb = round(self.random.uniform(1_000, 40_000), 1)
            gpu.temp_c = float(self.random.randint(35, 85))
            gpu.power_w = round(self.random.uniform(60, 400), 1)
            if gpu.health is not None:
                gpu.health.sm_clock_mhz = self.random.choice((1095, 1275, 1410))
        return sample

    def request(self, times: list[float], info: bool = False) -> IngestRequest:
        return IngestRequest(
            node=self.name,
            agent=self.agent,
            sampling=True,
            info=self.info if info else None,
            samples=[self.sample_at(t) for t in times],
        )

    def report(self, times: list[float], info: bool = False) -> bytes:
        return self.request(times, info).model_dump_json().encode()


def fill_history(server: Server, nodes: list[Node]) -> float:
    """Every node's 2 h window, sent as agents send a backlog (60 samples a report)."""
    now = time.time()
    times = [now - HISTORY_S + 5 + INTERVAL_S * i for i in range(int(HISTORY_S / INTERVAL_S))]
    start = time.perf_counter()

    def send(node: Node) -> None:
        for k in range(0, len(times), BACKLOG_BATCH):
            server.post_report(node.token, node.report(times[k : k + BACKLOG_BATCH], info=k == 0))

    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(send, nodes))
    return time.perf_counter() - start


TRANSPORTS = ("post", "keepalive", "channel", "channel-each")


class SteadyLoad:
    """Each node reports one sample every INTERVAL_S, the nodes spread over the interval, each
    by ``transport`` (see the module's doc); the first report carries the node's devices."""

    def __init__(self, server: Server, nodes: list[Node], transport: str = "channel") -> None:
        if transport not in TRANSPORTS:
            raise ValueError(f"transport must be one of {', '.join(TRANSPORTS)}")
        self.server = server
        self.transport = transport
        self.stop = threading.Event()
        self.sent = 0
        self.failed = 0
        self._lock = threading.Lock()
        self.senders: list[HttpSender] = []
        self.threads = [
            threading.Thread(target=self._agent, args=(k, n), daemon=True)
            for k, n in enumerate(nodes)
        ]
        self.count = len(nodes)
        self.started = False

    def _agent(self, k: int, node: Node) -> None:
        sender = None
        if self.transport != "post":
            sender = HttpSender(
                self.server.base,
                node.token,
                timeout_s=60,
                channel=self.transport.startswith("channel"),
                answer_every=1 if self.transport == "channel-each" else ANSWER_EVERY,
                batch_s=accepted_batch_s(INTERVAL_S),  # as `air agent` asks
            )
            with self._lock:
                self.senders.append(sender)
        next_at = time.monotonic() + INTERVAL_S * k / self.count
        first = True
        while not self.stop.wait(max(0.0, next_at - time.monotonic())):
            try:
                if sender is None:
                    self.server.post_report(node.token, node.report([time.time()], info=first))
                else:
                    sender(node.request([time.time()], info=first))
                first = False
                with self._lock:
                    self.sent += 1
            except Exception:
                with self._lock:
                    self.failed += 1
            next_at += INTERVAL_S
        if sender is not None:
            sender.close()

    def start(self) -> None:
        if not self.started:
            self.started = True
            for thread in self.threads:
                thread.start()

    def measure(self, seconds: float) -> dict:
        """Start the agents (if not yet); the server's CPU over ``seconds`` (they keep
        reporting after)."""
        cpu0, wall0, sent0 = self.server.cpu_s(), time.perf_counter(), self.sent
        self.start()
        time.sleep(seconds)
        wall = time.perf_counter() - wall0
        sent = self.sent - sent0
        cpu = self.server.cpu_s() - cpu0
        return {
            "reports": sent,
            "reports_per_s": sent / wall,
            "server_cpu_pct": cpu / wall * 100,
            "server_cpu_ms_per_report": cpu / sent * 1000 if sent else math.nan,
            "failed": self.failed,
            "connections": sum(s.connections for s in self.senders) if self.senders else sent,
        }

    def end(self) -> None:
        self.stop.set()
        for thread in self.threads:
            thread.join(60)


def curve(
    sizes: list[int], transports: list[str], gpus: int, seconds: float, batch_s: float | None
) -> dict:
    """The server's cost at each size, for each transport (see the module's doc)."""
    rows: list[dict] = []
    with tempfile.TemporaryDirectory(prefix="air-bench-") as tmp:
        server = Server(Path(tmp), batch_s)
        try:
            server.get("air/api/gpu/nodes")
            time.sleep(2)
            cpu0, wall0 = server.cpu_s(), time.perf_counter()
            time.sleep(min(seconds, 20))
            idle = (server.cpu_s() - cpu0) / (time.perf_counter() - wall0) * 100
        finally:
            server.stop()
    for size in sizes:
        for transport in transports:
            with tempfile.TemporaryDirectory(prefix="air-bench-") as tmp:
                folder = Path(tmp)
                server = Server(folder, batch_s)
                try:
                    server.get("air/api/gpu/nodes")  # a panel is open: the cluster samples
                    names = [f"gpu-node-{k:03d}" for k in range(size)]
                    nodes = [Node(n, gpus, mint_token(server.data_dir, n)) for n in names]
                    rss0 = server.rss_mb()
                    load = SteadyLoad(server, nodes, transport)
                    try:
                        load.start()
                        time.sleep(INTERVAL_S + 1)  # every agent connected, reported once
                        figures = load.measure(seconds)
                        rss = server.rss_mb()
                    finally:
                        load.end()
                finally:
                    server.stop()
            row = {
                "nodes": size,
                "transport": transport,
                **figures,
                "server_rss_mb": rss,
                "rss_kb_per_node": (rss - rss0) * 1024 / size,
            }
            rows.append(row)
            print(
                f"  {size:4d} nodes  {transport:9s}  {row['reports_per_s']:6.1f} reports/s  "
                f"{row['server_cpu_pct']:6.2f} % of one core  "
                f"{row['server_cpu_ms_per_report']:5.2f} ms/report  RSS {rss:6.1f} MB "
                f"({row['rss_kb_per_node']:6.1f} KB/node)  "
                f"{row['failed']} failed, {row['connections']} connections",
                flush=True,
            )
    for row in rows:  # what the reports cost beyond the server's own idle work
        above = row["server_cpu_pct"] - idle
        row["server_cpu_ms_per_report_above_idle"] = (
            above * 10 / row["reports_per_s"] if row["reports_per_s"] else math.nan
        )
    growth = {}
    for transport in transports:
        points = [
            (math.log(r["nodes"]), math.log(r["server_cpu_pct"] - idle))
            for r in rows
            if r["transport"] == transport and r["nodes"] > 1 and r["server_cpu_pct"] > idle
        ]
        if len(points) >= 2:
            mx = sum(x for x, _ in points) / len(points)
            my = sum(y for _, y in points) / len(points)
            sxx = sum((x - mx) ** 2 for x, _ in points)
            growth[transport] = sum((x - mx) * (y - my) for x, y in points) / sxx
    return {"idle_server_cpu_pct": idle, "rows": rows, "cpu_growth_exponent": growth}


def print_curve(result: dict, transports: list[str]) -> None:
    rows = result["rows"]
    print(
        "  server alone (a panel open, no agent): "
        f"{result['idle_server_cpu_pct']:.3f} % of one core"
    )
    for transport, k in result["cpu_growth_exponent"].items():
        kind = "linear" if 0.9 <= k <= 1.1 else ("sublinear" if k < 0.9 else "superlinear")
        print(f"  {transport:9s} CPU above the idle server grows as nodes^{k:.2f} ({kind})")
    if "channel" in transports:
        for peer in [t for t in transports if t != "channel"]:
            ratios = []
            for r in rows:
                if r["transport"] != "channel":
                    continue
                other = next(
                    (o for o in rows if o["transport"] == peer and o["nodes"] == r["nodes"]), None
                )
                key = "server_cpu_ms_per_report_above_idle"
                if other and other[key] > 0 and r["nodes"] >= 8:
                    ratios.append(
                        f"{r['nodes']} nodes {r[key]:.2f} / {other[key]:.2f} ms "
                        f"= {r[key] / other[key]:.2f}x"
                    )
            print(f"  CPU per report above the idle server, channel / {peer}: " + "; ".join(ratios))


def timed(server: Server, path: str, repeat: int = 15) -> dict:
    """Bytes of one answer and its request time on loopback (gzip accepted, as a browser does):
    the first request, which encodes what changed, and the median of repeats."""
    zipped, first_ms = server.get(path, gzip_ok=True)
    raw = gzip.decompress(zipped) if zipped[:2] == b"\x1f\x8b" else zipped
    times = [server.get(path, gzip_ok=True)[1] for _ in range(repeat)]
    return {
        "raw_kb": len(raw) / 1024,
        "gzip_kb": len(zipped) / 1024,
        "first_ms": first_ms,
        "ms": statistics.median(times) if times else first_ms,
        "body": raw,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--gpus", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--transport", choices=TRANSPORTS, default="channel")
    parser.add_argument("--curve", action="store_true", help="the cost at each of --sizes")
    parser.add_argument("--sizes", default="1,8,64,512")
    parser.add_argument("--transports", default="post,channel", help="for --curve")
    parser.add_argument(
        "--batch-s",
        type=float,
        default=None,
        help="the server's JupyterAir.telemetry_batch_s (its default when not given; 0: none)",
    )
    args = parser.parse_args()

    if args.curve:
        sizes = [int(n) for n in args.sizes.split(",")]
        transports = [t for t in args.transports.split(",") if t]
        if not sizes or min(sizes) < 1 or max(sizes) > 1024 or set(transports) - set(TRANSPORTS):
            parser.error(f"--sizes: 1 to 1024 nodes; --transports: {', '.join(TRANSPORTS)}")
        print(
            f"Node agents: the Jupyter server's cost at {args.sizes} nodes x {args.gpus} GPUs, "
            f"a report every {INTERVAL_S:g} s, {args.seconds:g} s measured per size"
        )
        result = curve(sizes, transports, args.gpus, args.seconds, args.batch_s)
        if args.json:
            print(json.dumps(result, indent=2))
        else:
            print_curve(result, transports)
        return

    with tempfile.TemporaryDirectory(prefix="air-bench-") as tmp:
        server = Server(Path(tmp), args.batch_s)
        try:
            server.get("air/api/gpu/nodes")  # a panel is open: the cluster samples
            rss_empty = server.rss_mb()
            names = [f"gpu-node-{k:03d}" for k in range(args.nodes)]
            nodes = [Node(n, args.gpus, mint_token(server.data_dir, n)) for n in names]
            one = nodes[0].report([time.time()])
            first = nodes[0].report([time.time()], info=True)
            fill_s = fill_history(server, nodes)
            rss_full = server.rss_mb()
            agents = SteadyLoad(server, nodes, args.transport)
            try:
                agents.start()
                time.sleep(INTERVAL_S + 1)  # every agent connected and reported once
                load = agents.measure(args.seconds)
                rss_after = server.rss_mb()
                # what a panel asks while the agents keep reporting
                node_full = timed(server, f"air/api/gpu?node={names[0]}")
                newest = json.loads(node_full["body"])["samples"][-1]["t"]
                node_delta = timed(server, f"air/api/gpu?node={names[0]}&since={newest - 1}")
                overview_full = timed(server, "air/api/gpu/nodes")
                seen = json.loads(overview_full["body"])["now"]
                time.sleep(1.0)  # a tenth of the nodes reported since
                overview_1s = timed(server, f"air/api/gpu/nodes?since={seen}", repeat=0)
                time.sleep(INTERVAL_S - 1.0)  # a panel's next poll: every node reported since
                overview_delta = timed(server, f"air/api/gpu/nodes?since={seen}", repeat=0)
            finally:
                agents.end()
        finally:
            server.stop()

    figures = {
        "nodes": args.nodes,
        "transport": args.transport,
        "gpus_per_node": args.gpus,
        "interval_s": INTERVAL_S,
        "report_raw_bytes": len(one),
        "report_gzip_bytes": len(gzip.compress(one, 5)),
        "first_report_raw_bytes": len(first),
        "fill_2h_s": fill_s,
        "server_rss_mb_no_nodes": rss_empty,
        "server_rss_mb_full_history": rss_full,
        "rss_mb_per_node": (rss_full - rss_empty) / args.nodes,
        "server_rss_mb_after_load": rss_after,
        **{f"load_{k}": v for k, v in load.items()},
        **{
            f"{name}_{k}": v
            for name, part in (
                ("node_full", node_full),
                ("node_delta", node_delta),
                ("overview_full", overview_full),
                ("overview_delta_1s", overview_1s),
                ("overview_delta", overview_delta),
            )
            for k, v in part.items()
            if k != "body"
        },
    }
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    print(
        f"Node agents: {args.nodes} nodes x {args.gpus} GPUs, a report every {INTERVAL_S:g} s "
        f"({args.transport})"
    )
    print(
        f"  one report (1 sample, health, 1 process/GPU)  {len(one):7d} B raw, "
        f"{figures['report_gzip_bytes']:6d} B gzip; with the device list {len(first)} B"
    )
    print(
        f"  server CPU while they report     {load['server_cpu_pct']:6.2f} % of one core "
        f"({load['reports_per_s']:.1f} reports/s, {load['reports']} in {args.seconds:g} s)"
    )
    print(
        f"  server memory   {rss_empty:6.1f} MB without nodes, {rss_full:6.1f} MB with every "
        f"2 h history ({figures['rss_mb_per_node']:.2f} MB per node); filled in {fill_s:.1f} s"
    )
    for label, part in (
        ("one node, full 2 h history", node_full),
        ("one node, delta (?since=)", node_delta),
        ("overview, every node", overview_full),
        ("overview, delta after 1 s", overview_1s),
        ("overview, delta after 10 s", overview_delta),
    ):
        print(
            f"  {label:28s} {part['raw_kb']:7.1f} KB raw, {part['gzip_kb']:6.1f} KB gzip, "
            f"{part['first_ms']:6.2f} ms first request, {part['ms']:6.2f} ms again"
        )


if __name__ == "__main__":
    main()
