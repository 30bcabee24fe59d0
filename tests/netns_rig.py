"""Hosts that share nothing but a network, on one machine: the ``netns_rig`` fixture.

Each host is a Linux network namespace with one address in 198.18.0.0/24 on a bridge (which
lives in a namespace of its own), its own loopback and a default route through that link, and a
long-lived holder process with its own mount and UTS namespaces: its own host name, a private
tmpfs ``/tmp/ray`` (the raylet's sockets and Ray's temp folder) and — on the worker hosts — an
empty tmpfs over the Jupyter host's work and data folders (the test session's temporary folder
and the repository's ``.jupyter-test``), so a worker cannot see them. Every command on a host
enters its namespaces with ``nsenter -t HOLDER -m -u -n``.

The hosts run a real Ray cluster: ``ray start --head --num-cpus=0`` on the head (198.18.0.1,
the "Jupyter host", which sees this machine's folders) and ``ray start --address`` on each worker
(2 CPUs and 2 fake GPUs each, as in tests/ray_cluster.py). Everything is stopped by namespace:
every pid of ``ip netns pids`` is killed and waited for, then the namespaces are deleted — in the
fixture's finaliser, so a failed test leaves nothing behind. Namespace names carry this pytest
process's pid, so parallel sessions never collide. A machine that cannot make namespaces fails
the fixture, saying so: the rig must run in CI.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from ray_cluster import LOOPBACK_ENV

SUBNET = "198.18.0"
HEAD_IP = f"{SUBNET}.1"
RAY_PORT = 6379
WORKER_RESOURCES = ("--num-cpus=2", "--num-gpus=2")
OBJECT_STORE_BYTES = 200 << 20  # small: three object stores on one machine
MAX_RESTARTS = 3  # of a worker whose raylet died while starting
START_TIMEOUT_S = 240.0  # for each step of the start: the head, then the workers
REPO = Path(__file__).resolve().parents[1]

# Ray's patient settings of the loopback cluster, but each host has one address of its own
# (no RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER: that would keep Ray on 127.0.0.1), and Ray's token
# authentication on, as a real cluster has it: the token is a file of each host's own /tmp/ray
# (a worker cannot read the Jupyter host's), and every process of the rig reads it where Ray does.
# Said outright: ``ray start`` turns token mode on by itself when ~/.ray/auth_token exists (any
# local ``ray.init()`` writes one), and a driver without RAY_AUTH_MODE then cannot connect.
TOKEN_PATH = "/tmp/ray/auth_token"
RAY_ENV = {k: v for k, v in LOOPBACK_ENV.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
RAY_ENV |= {"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN_PATH": TOKEN_PATH}
RAY_START_ARGS = ("start", "--block", "--disable-usage-stats",
                  f"--object-store-memory={OBJECT_STORE_BYTES}")  # fmt: skip
# ``ray start`` with Ray's 30 s for a raylet to register lengthened (ray_cluster.py says why)
RAY_START = (
    "import sys; sys.path.insert(0, {tests!r}); "
    "from ray_cluster import patient_registration; patient_registration(); "
    "from ray.scripts.scripts import main; sys.argv = ['ray', *sys.argv[1:]]; main()"
)


class RigError(AssertionError):
    """The rig could not be built or a command on it failed (the message says which)."""


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if check and done.returncode != 0:
        raise RigError(f"`ip {' '.join(args)}` failed: {done.stderr.strip()}")
    return done


@dataclass
class Host:
    name: str  # its host name
    namespace: str  # its network namespace
    address: str  # its address on the rig's network
    holder: subprocess.Popen[str] | None = None  # holds its mount and UTS namespaces

    @property
    def pid(self) -> int:
        assert self.holder is not None, f"host {self.name} has no holder"
        return self.holder.pid

    def argv(self, command: Sequence[str], cwd: str | None = None) -> list[str]:
        """``command`` as run on this host, in ``cwd`` (this process's folder by default: entering
        a mount namespace starts at its root)."""
        enter = ["nsenter", "-t", str(self.pid), "-m", "-u", "-n", f"--wd={cwd or os.getcwd()}"]
        return [*enter, "--", *command]


@dataclass
class Rig:
    """A head and workers that share nothing but the network (see the module's doc)."""

    tag: str  # in every namespace's name: unique to this pytest session
    token: str  # the Ray cluster's authentication token
    folder: Path  # the rig's logs (on this machine; hidden from the workers)
    hidden: list[str]  # folders of the Jupyter host the workers must not see
    hosts: list[Host] = field(default_factory=list)
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)
    start_s: float | None = None  # how long the rig took to start, cluster included

    @property
    def bridge_namespace(self) -> str:
        return f"{self.tag}-br"

    @property
    def head(self) -> Host:
        return self.hosts[0]

    @property
    def workers(self) -> list[Host]:
        return self.hosts[1:]

    @property
    def address(self) -> str:
        return f"{HEAD_IP}:{RAY_PORT}"

    def env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The environment of a process on the rig: this one's (the repository first on
        ``PYTHONPATH``, so that the code under test is the one the hosts import), Ray's patient
        settings, the cluster's address."""
        env = {**os.environ, **RAY_ENV, "RAY_ADDRESS": self.address}
        env.pop("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", None)
        paths = [str(REPO), *[p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]]
        env["PYTHONPATH"] = os.pathsep.join(dict.fromkeys(paths))
        env.update(extra or {})
        return env

    # running commands on a host ----------------------------------------------------------------
    def spawn(
        self,
        host: Host,
        command: Sequence[str],
        *,
        log: str,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> subprocess.Popen[bytes]:
        """Start ``command`` on ``host`` in the background, its output into ``log`` (a file of
        the rig's folder); it is stopped with the host's namespace."""
        with open(self.folder / log, "ab") as out:
            process = subprocess.Popen(
                host.argv(command, cwd),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=self.env(env),
                start_new_session=True,
            )
        self.started.append(process)
        return process

    def run(
        self,
        host: Host,
        command: Sequence[str],
        *,
        timeout: float = 180.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run ``command`` on ``host`` to its end; its output (a failure raises, showing it)."""
        try:
            done = subprocess.run(
                host.argv(command, cwd),
                capture_output=True,
                text=True,
                env=self.env(env),
                timeout=timeout,
                stdin=subprocess.DEVNULL,
            )
        except subprocess.TimeoutExpired as error:
            raise RigError(
                f"on {host.name}: {shlex.join(command)} did not end within {timeout:g} s\n"
                f"{_text(error.stdout)}{_text(error.stderr)}"
            ) from None
        if check and done.returncode != 0:
            raise RigError(
                f"on {host.name}: {shlex.join(command)} exited {done.returncode}\n"
                f"{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )
        return done

    def python(
        self, host: Host, code: str, *args: str, timeout: float = 180.0
    ) -> subprocess.CompletedProcess[str]:
        """Run Python ``code`` with ``args`` on ``host`` (this environment's interpreter)."""
        return self.run(host, [sys.executable, "-c", code, *args], timeout=timeout)

    def log(self, name: str, tail: int = 3000) -> str:
        path = self.folder / name
        return path.read_text(errors="replace")[-tail:] if path.exists() else ""

    # building and tearing down -----------------------------------------------------------------
    def build(self, count: int) -> None:
        """The bridge's namespace and ``count`` hosts on it: ``air-head``, ``air-w1``…"""
        names = ["air-head", *[f"air-w{k}" for k in range(1, count)]]
        try:
            ip("netns", "add", self.bridge_namespace)
        except RigError as error:
            raise RigError(
                "this machine cannot make network namespaces, which the rig of hosts that "
                f"share nothing needs (root, or CAP_SYS_ADMIN and CAP_NET_ADMIN): {error}"
            ) from None
        ip("-n", self.bridge_namespace, "link", "add", "br0", "type", "bridge")
        ip("-n", self.bridge_namespace, "link", "set", "br0", "up")
        Path("/tmp/ray").mkdir(exist_ok=True)  # the mount point of each host's own /tmp/ray
        for index, name in enumerate(names, start=1):
            host = Host(name, f"{self.tag}-{name.removeprefix('air-')}", f"{SUBNET}.{index}")
            self.hosts.append(host)
            ip("netns", "add", host.namespace)
            link = f"v{index}"
            ip(
                "-n", self.bridge_namespace, "link", "add", link, "type", "veth",
                "peer", "name", "eth0", "netns", host.namespace,
            )  # fmt: skip
            ip("-n", self.bridge_namespace, "link", "set", link, "master", "br0", "up")
            ip("-n", host.namespace, "link", "set", "lo", "up")
            ip("-n", host.namespace, "addr", "add", f"{host.address}/24", "dev", "eth0")
            ip("-n", host.namespace, "link", "set", "eth0", "up")
            # a default route: Ray finds a host's address by the route a packet would take
            ip("-n", host.namespace, "route", "add", "default", "dev", "eth0")
            self._hold(host, hide=self.hidden if index > 1 else [])

    def _hold(self, host: Host, hide: list[str]) -> None:
        mounts = ["mount -t tmpfs -o size=1g tmpfs /tmp/ray"]
        mounts += [f"mount -t tmpfs -o size=64m tmpfs {shlex.quote(f)}" for f in hide]
        token = f'(umask 077; printf %s "$AIR_RIG_TOKEN" > {TOKEN_PATH})'  # never on a command line
        script = "; ".join(
            ["set -e", f"hostname {host.name}", *mounts, token, "echo ready",
             "exec sleep infinity"]
        )  # fmt: skip
        host.holder = subprocess.Popen(
            ["ip", "netns", "exec", host.namespace, "unshare", "-m", "-u",
             "--propagation", "private", "sh", "-c", script],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
            env={**os.environ, "AIR_RIG_TOKEN": self.token},
        )  # fmt: skip
        assert host.holder.stdout is not None
        line = host.holder.stdout.readline()  # the holder prints it once its mounts are made
        if line.strip() != "ready":
            why = host.holder.stderr.read() if host.holder.stderr else ""
            raise RigError(f"host {host.name} did not start: {line}{why}")

    def start_ray(self) -> None:
        """The cluster: the head (no CPU for work), then the workers."""
        start = [sys.executable, "-c", RAY_START.format(tests=str(Path(__file__).parent))]
        self.spawn(
            self.head,
            [*start, *RAY_START_ARGS, "--head", f"--node-ip-address={HEAD_IP}",
             f"--port={RAY_PORT}", "--num-cpus=0", "--num-gpus=0", "--include-dashboard=false"],
            log="ray-head.log",
        )  # fmt: skip
        self.wait_for_nodes(1)
        self.start_workers(self.workers)

    def start_workers(self, hosts: list[Host]) -> None:
        """``ray start --address`` on ``hosts``, until the cluster has all the rig's nodes. A
        raylet that dies while starting is started again on a clean /tmp/ray: on a loaded
        machine its node's agents can take longer to start than it waits for their ports
        ("Timed out waiting for file …/dashboard_agent_listen_port_…", seen at about 15 s)."""
        started = {host.name: self.start_worker(host) for host in hosts}
        restarts = dict.fromkeys(started, 0)
        code = WAIT_FOR_NODES.format(count=len(self.hosts), timeout=START_TIMEOUT_S)
        waiter = self.spawn(self.head, [sys.executable, "-c", code], log="wait-for-nodes.log")
        seen: set[str] = set()  # hosts whose raylet was seen running
        while waiter.poll() is None:
            for host in hosts:
                running = "raylet" in process_names(host.namespace)
                if running:
                    seen.add(host.name)
                ended = started[host.name].poll() is not None
                died = ended or (host.name in seen and not running)
                if died and restarts[host.name] < MAX_RESTARTS:
                    restarts[host.name] += 1
                    seen.discard(host.name)
                    self.reset(host)
                    started[host.name] = self.start_worker(host)
            time.sleep(1)
        if waiter.returncode != 0:
            raise RigError(f"the rig's Ray cluster did not reach {len(self.hosts)} nodes (workers "
                           f"started again: {restarts})\n{self.diagnosis()}")  # fmt: skip

    def start_worker(self, host: Host) -> subprocess.Popen[bytes]:
        """``ray start --address`` on worker ``host`` (2 CPUs, 2 fake GPUs)."""
        return self.spawn(
            host,
            [sys.executable, "-c", RAY_START.format(tests=str(Path(__file__).parent)),
             *RAY_START_ARGS, f"--address={self.address}", f"--node-ip-address={host.address}",
             *WORKER_RESOURCES],
            log=f"ray-{host.name}.log",
        )  # fmt: skip

    # faults ------------------------------------------------------------------------------------
    def cut(self, host: Host) -> None:
        """Cut ``host`` off the network (its link on the bridge down): its processes go on,
        unreachable, as on a machine whose network failed."""
        ip("-n", self.bridge_namespace, "link", "set", f"v{self.hosts.index(host) + 1}", "down")

    def reconnect(self, host: Host) -> None:
        """Bring ``host``'s link back after a short ``cut``: what runs there goes on."""
        ip("-n", self.bridge_namespace, "link", "set", f"v{self.hosts.index(host) + 1}", "up")

    def mend(self, host: Host) -> None:
        """Bring a cut worker back as a new Ray node (what ran there is stopped, as a rebooted
        machine's), and wait until the cluster has all its nodes again."""
        self.reconnect(host)
        self.reset(host)
        self.start_workers([host])

    def reset(self, host: Host) -> None:
        """Stop every process of ``host`` but its holder, and empty its /tmp/ray (but the
        cluster's token)."""
        deadline = time.monotonic() + 30
        while others := [p for p in namespace_pids(host.namespace) if p != host.pid]:
            for pid in others:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if time.monotonic() > deadline:
                raise RigError(f"host {host.name}: pids {others} did not end")
            time.sleep(0.1)
        keep = f"find /tmp/ray -mindepth 1 -maxdepth 1 ! -path {TOKEN_PATH} -exec rm -rf {{}} +"
        self.run(host, ["sh", "-c", keep], timeout=30)

    def nodes(self) -> list[dict[str, object]]:
        """The cluster's alive nodes as Ray knows them (address, resources), asked on the head."""
        done = self.python(self.head, NODES, timeout=120)
        return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]

    def wait_for_nodes(self, count: int, timeout: float = START_TIMEOUT_S) -> None:
        """Until the cluster has ``count`` alive nodes, asked by one driver on the head."""
        code = WAIT_FOR_NODES.format(count=count, timeout=timeout)
        try:
            self.python(self.head, code, timeout=timeout + 60)
        except RigError as error:
            raise RigError(
                f"the rig's Ray cluster did not reach {count} nodes: {error}\n{self.diagnosis()}"
            ) from None

    def diagnosis(self) -> str:
        """The rig's logs and each host's raylet's (in its own /tmp/ray), for a failed start."""
        logs = "\n".join(
            f"--- {p.name}:\n{self.log(p.name, 2000)}" for p in sorted(self.folder.glob("*.log"))
        )
        for host in self.hosts:
            tail = "cd /tmp/ray/session_latest/logs; head -c 1500 raylet.err; tail -n 5 raylet.out"
            done = self.run(host, ["sh", "-c", tail], check=False, timeout=30)
            logs += f"\n--- raylet of {host.name}:\n{done.stdout[-3000:]}{done.stderr[-500:]}"
        return logs

    def tear_down(self) -> list[str]:
        """Kill every process of every namespace the rig made, wait for them, delete the
        namespaces; what could not be cleaned (empty when all was)."""
        problems = []
        namespaces = [h.namespace for h in self.hosts] + [self.bridge_namespace]
        for namespace in namespaces:
            problems += kill_namespace(namespace)
        for process in [*self.started, *[h.holder for h in self.hosts if h.holder]]:
            try:
                process.wait(timeout=30)  # our own children: reaped
            except subprocess.TimeoutExpired:
                problems.append(f"pid {process.pid} did not end")
        for namespace in namespaces:
            done = ip("netns", "del", namespace, check=False)
            if done.returncode != 0 and namespace in namespace_names():
                problems.append(f"namespace {namespace} not deleted: {done.stderr.strip()}")
        return problems


def _text(data: object) -> str:
    if isinstance(data, bytes):
        return data.decode(errors="replace")[-3000:]
    return str(data or "")[-3000:]


def namespace_names() -> set[str]:
    done = ip("netns", "list", check=False)
    return {line.split()[0] for line in done.stdout.splitlines() if line.strip()}


def namespace_pids(namespace: str) -> list[int]:
    done = ip("netns", "pids", namespace, check=False)
    return [int(p) for p in done.stdout.split() if p.isdigit()]


def process_names(namespace: str) -> set[str]:
    import psutil

    names = set()
    for pid in namespace_pids(namespace):
        with contextlib.suppress(psutil.Error):
            names.add(psutil.Process(pid).name())
    return names


def kill_namespace(namespace: str, timeout: float = 30.0) -> list[str]:
    """SIGKILL every process in ``namespace`` and wait until none is left (they are not all
    this process's children: each is watched until it is gone)."""
    if namespace not in namespace_names():
        return []
    deadline = time.monotonic() + timeout
    while True:
        pids = namespace_pids(namespace)
        if not pids:
            return []
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                continue
        if time.monotonic() > deadline:
            return [f"pids {pids} of namespace {namespace} still there after {timeout:g} s"]
        time.sleep(0.1)


NODES = """
import json, ray
ray.init(address="auto", log_to_driver=False, logging_level="ERROR")
for n in ray.nodes():
    if n["Alive"]:
        print(json.dumps({"ip": n["NodeManagerAddress"], "host": n["NodeManagerHostname"],
                          "node_id": n["NodeID"], "resources": n["Resources"]}))
"""

WAIT_FOR_NODES = """
import time, ray
deadline = time.monotonic() + {timeout}
while True:  # the head's GCS may answer before its raylet is known: no node to connect to yet
    try:
        ray.init(address="auto", log_to_driver=False, logging_level="ERROR")
        break
    except (ConnectionError, RuntimeError):
        ray.shutdown()
        if time.monotonic() > deadline:
            raise
        time.sleep(1)
while True:
    alive = [n["NodeManagerAddress"] for n in ray.nodes() if n["Alive"]]
    if len(alive) >= {count}:
        break
    if time.monotonic() > deadline:
        raise SystemExit(f"{{len(alive)}} alive nodes of {count} after {timeout} s: {{alive}}")
    time.sleep(0.5)
"""


@pytest.fixture(scope="session")
def netns_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """Three hosts that share nothing but a network (a Ray head with no CPU, two workers with
    2 CPUs and 2 fake GPUs each), for the session; everything stopped and deleted at its end."""
    base = tmp_path_factory.getbasetemp()
    rig = Rig(
        tag=f"air{os.getpid()}",
        token=secrets.token_hex(32),
        folder=tmp_path_factory.mktemp("netns-rig"),
        hidden=[str(base), str(REPO / ".jupyter-test")],
    )
    (REPO / ".jupyter-test").mkdir(exist_ok=True)
    began = time.monotonic()
    try:
        rig.build(3)
        rig.start_ray()
        rig.start_s = time.monotonic() - began
        print(f"\nthe rig of hosts that share nothing started in {rig.start_s:.1f} s")
        yield rig
    except RigError as error:
        pytest.fail(str(error), pytrace=False)
    finally:
        problems = rig.tear_down()
        if problems:
            pytest.fail("the rig was not cleaned up: " + "; ".join(problems), pytrace=False)
