"""One node of a workload on a Ray node: the actor that runs it there, for one attempt at a time
(ray_runners.py: it outlives an attempt whose nodes were released cleanly).

It runs on the Ray node (its module is imported there, not on the Jupyter host's event loop) and
does what the local backend does on the Jupyter host: starts the command in a session of its own
— under ``keeper``, so the command dies with the actor when the supervisor that owns it is gone —
with the environment contract and the GPUs Ray gave the node's bundle, captures its output line
by line with the node's own timestamps into a log file on the node, samples the node's system
metrics into the attempt's MLflow run (``system/node_k/…`` describe this machine), and stops
the command's whole process group when asked. The supervisor reads the log file from an offset
(``tick``): lines written while it could not ask stay on the node until it does.

Methods return plain values; nothing here imports Ray at module level, so the class can be
inspected and tested without a cluster.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..config import GROUP, NODE_IP
from .base import node_environment

SETTLE_S = 10.0  # how long what a clean command's ranks started may take to end by itself
STAND_BY_STEP_S = 0.05  # a cancelled ``stand_by`` ends within this


def _described(pid: int) -> str:
    """``1234 (python -m …)``: a process as a person can tell what it is."""
    import psutil

    with contextlib.suppress(psutil.Error):
        return f"{pid} ({' '.join(psutil.Process(pid).cmdline())[:80]})"
    return str(pid)


def _in_group(pid: int, group: int) -> bool:
    """Whether ``pid`` is still in the process group ``group``."""
    try:
        return os.getpgid(pid) == group
    except OSError:
        return False


def interpreter_first(path: str | None, python: str = sys.executable) -> str:
    """``PATH`` with the folder of this node's Python first, so that a command's ``python``,
    ``torchrun`` and the like are those of the Ray environment that runs it, however its raylet
    was started (``.venv/bin/ray start`` without the venv active finds the system Python) and
    whatever ``PATH`` the workload sets."""
    here = os.path.dirname(python)
    rest = [p for p in (path or os.defpath).split(os.pathsep) if p and p != here]
    return os.pathsep.join([here, *rest])


def code_cache() -> Path:
    """Where this node keeps the code snapshots it was sent, one folder per digest: in the Ray
    node's own temporary folder (``/tmp/ray`` unless its ``ray start`` said otherwise), else the
    system's."""
    temp = None
    with contextlib.suppress(Exception):  # outside a Ray worker (a test of the class)
        import ray

        node: Any = ray._private.worker.global_worker.node
        temp = node.get_temp_dir_path()
    return Path(temp or tempfile.gettempdir()) / "jupyter-air-code"


SOCKET_INTERFACES = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME")


def cluster_interface(env: Mapping[str, str], ip: str) -> dict[str, str]:
    """Gloo's and NCCL's socket interface: the one that has ``ip`` (the address Ray knows for
    this node), so that ranks meet on the cluster's network whatever this host's name resolves
    to (gloo binds to that name's address: loopback where it resolves to nothing, and ranks on
    other hosts never reach it). A name the user (or the node) set is kept."""
    import psutil

    if all(name in env for name in SOCKET_INTERFACES):
        return {}
    for interface, addresses in psutil.net_if_addrs().items():
        if any(a.address == ip for a in addresses) and not ip.startswith("127."):
            return {name: interface for name in SOCKET_INTERFACES if name not in env}
    return {}


READ_LIMIT = 4 << 20  # bytes of log per tick at most
GROUP_ENV = GROUP.name  # on every command a runner starts: what is left is found by it
NODE_IP_ENV = NODE_IP.name


def gpu_text(ids: list[Any]) -> str:
    """Ray's GPU ids as ``CUDA_VISIBLE_DEVICES`` has them: ``"0,1"``."""
    return ",".join(str(int(g)) if float(g).is_integer() else str(g) for g in ids)


def bundle_gpus() -> str:
    """Run in a bundle of an attempt's placement group (ray_runners.py): the GPUs Ray gave
    the bundle."""
    import ray

    return gpu_text(ray.get_gpu_ids())


def stand_by(seconds: float) -> None:
    """Run on a Ray node, holding nothing (ray_runners.py): keep this Ray worker busy for
    ``seconds`` or until ``ray.cancel``, which interrupts it between two short sleeps, so that
    Ray neither ends it nor gives it to other work meanwhile."""
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        time.sleep(STAND_BY_STEP_S)


class NodeRunner:
    """Made idle; ``begin`` readies it for an attempt's node, again for each attempt it serves
    (ray_runners.py)."""

    def __init__(self) -> None:
        self.begun = False  # between ``begin`` and ``close``: an attempt's folder is here
        self.gpus = ""  # its attempt's (``begin``)
        self.handle: Any = None
        self.monitor: Any = None
        self._tracking: dict[str, str | None] = {}  # this actor's environment before metrics

    def begin(self, job_id: str, attempt: int, node: int, uses_gpus: bool, gpus: str) -> None:
        """Ready for node ``node`` of ``job_id``'s ``attempt``, with the GPUs ``gpus`` that its
        bundle holds."""
        from ..logs.logfile import LogWriter

        if self.begun:  # an attempt before that was not closed: what it left goes first
            self.close()
        self.job_id = job_id
        self.attempt = attempt
        self.node = node
        self.uses_gpus = uses_gpus
        self.gpus = gpus if uses_gpus else ""
        self.folder = Path(tempfile.mkdtemp(prefix=f"jupyter-air-{job_id}-a{attempt}-n{node}-"))
        self.files = self.folder / "files"  # what the command needs here, and leaves
        self.files.mkdir()
        self.group = f"{job_id}/{attempt}"
        self.writer = LogWriter(self.folder / f"node_{node}.log")
        self.handle = None
        self.monitor = None
        self.begun = True

    # where -------------------------------------------------------------------------------------
    def where(self, folder: str | None = None) -> dict[str, Any]:
        """This node: its address, host, Ray node, GPUs, and whether it sees ``folder``."""
        import ray

        return {
            "ip": ray.util.get_node_ip_address(),
            "host": socket.gethostname(),
            "node_id": ray.get_runtime_context().get_node_id(),
            "gpus": self.gpus,
            "pid": os.getpid(),
            "sees": folder is not None and os.path.isdir(folder),
        }

    # the code -----------------------------------------------------------------------------------
    def has_code(self, digest: str) -> bool:
        """Whether the snapshot ``digest`` is in this node's cache already (nothing to send)."""
        from .code_shipping import used

        entry = code_cache() / digest
        if not entry.is_dir():
            return False
        used(entry)  # kept by the cache's pruning while the attempt starts
        return True

    def receive_code(self, digest: str, data: bytes) -> int:
        """The packed snapshot ``digest`` into this node's cache (made whole aside, then renamed:
        a node never runs half a snapshot); the bytes received."""
        from .code_shipping import prune_cache, unpack_snapshot, used

        cache = code_cache()
        cache.mkdir(parents=True, exist_ok=True)
        if (cache / digest).is_dir():
            return 0
        aside = Path(tempfile.mkdtemp(prefix=f".{digest[:12]}-", dir=cache))
        try:
            unpack_snapshot(data, aside / "code")
            with contextlib.suppress(OSError):  # another attempt on this host was first
                os.rename(aside / "code", cache / digest)
        finally:
            shutil.rmtree(aside, ignore_errors=True)
        used(cache / digest)
        prune_cache(cache)
        return len(data)

    # a folder of the node: a job run's checkpoints (node_folders.py) ---------------------------
    def checkpoint_folder(self, job_id: str) -> str:
        """This node's checkpoint folder for ``job_id`` (made): the same path in every attempt
        that runs here, in the Ray node's temporary folder."""
        folder = code_cache().parent / "jupyter-air-checkpoints" / job_id / f"node_{self.node}"
        folder.mkdir(parents=True, exist_ok=True)
        return str(folder)

    def remove_checkpoint_folder(self, job_id: str) -> None:
        """Remove ``job_id``'s checkpoint folders of this node (what they held is home)."""
        import shutil

        root = code_cache().parent / "jupyter-air-checkpoints"
        folder = root / job_id
        if folder.resolve().parent == root.resolve():
            shutil.rmtree(folder, ignore_errors=True)

    def scan_folder(self, path: str) -> dict[str, tuple[int, int]]:
        from ..files import scan_folder

        return scan_folder(path)

    def read_chunk(self, path: str, rel: str, offset: int) -> bytes:
        from .node_folders import read_chunk

        return read_chunk(path, rel, offset)

    def write_chunk(
        self, path: str, rel: str, offset: int, data: bytes, last: bool
    ) -> tuple[int, int]:
        from .node_folders import write_chunk

        return write_chunk(path, rel, offset, data, last)

    def free_port(self) -> int:
        from .local import free_port

        return free_port("0.0.0.0")

    # the command -------------------------------------------------------------------------------
    def start(
        self,
        argv: list[str],
        owned: Mapping[str, str],
        cwd: str,
        *,
        num_nodes: int,
        master_addr: str,
        master_port: int,
        gpus: str,
        files: Mapping[str, Any] | None = None,
        code: str | None = None,
    ) -> dict[str, Any]:
        """Start the command; with ``code`` (a snapshot's digest, in this node's cache) in a copy
        of that snapshot of its own instead of ``cwd``."""
        import ray

        from ..pids import process_start_time
        from . import keeper
        from .local import start_node

        for name, value in (files or {}).items():
            data = ray.get(value) if isinstance(value, ray.ObjectRef) else value
            target = self.files / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        argv = [arg.replace("{folder}", str(self.files)) for arg in argv]
        if code is not None:
            cached = code_cache() / code
            if not cached.is_dir():
                raise FileNotFoundError(f"the code snapshot {code[:12]} was not sent to this node")
            cwd = str(self.folder / "code")
            shutil.copytree(cached, cwd, symlinks=True)  # the command may write in its folder
        if not os.path.isdir(cwd):
            raise FileNotFoundError(
                f"the working folder {cwd} does not exist on this node ({socket.gethostname()}): "
                "every node needs the workload's files at the same path (docs/clusters.md)"
            )
        base = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env = node_environment(
            base,
            node=self.node,
            num_nodes=num_nodes,
            master_addr=master_addr,
            master_port=master_port,
            owned=owned,
            cuda_visible_devices=gpus,
            uses_gpus=self.uses_gpus,
        )
        env["PATH"] = interpreter_first(env.get("PATH"))
        env[GROUP_ENV] = self.group
        env[NODE_IP_ENV] = ray.util.get_node_ip_address()
        env.update(cluster_interface(env, env[NODE_IP_ENV]))
        status = self.folder / "status.json"
        kept = keeper.command(os.getpid(), process_start_time(os.getpid()) or 0.0, status, argv)
        self.handle = start_node(self.node, kept, env=env, cwd=cwd, writer=self.writer)
        self.handle.process = keeper.KeptProcess(self.handle.process, status)
        return {"pid": self.handle.pid, "started": self.handle.started}

    def tick(self, offset: int, limit: int = READ_LIMIT) -> tuple[int | None, bytes]:
        """The command's exit code (None while it runs) and the complete log lines after
        ``offset``. The code is read first: lines read after it are all there is when it is set."""
        code = self.handle.poll() if self.handle is not None else None
        return code, self.read(offset, limit)

    def read(self, offset: int, limit: int = READ_LIMIT) -> bytes:
        path = self.writer.path
        with open(path, "rb") as file:
            file.seek(offset)
            data = file.read(limit)
        end = data.rfind(b"\n")
        return data[: end + 1] if end >= 0 else b""

    def read_files(
        self, offsets: Mapping[str, int], limit: int = READ_LIMIT
    ) -> dict[str, tuple[bytes, int]]:
        """What changed in the command's folder since ``offsets`` (path → bytes already seen):
        for each file that grew, the bytes after its offset (at most ``limit`` in all) and its
        size, so the caller knows when it has the whole of it."""
        changed: dict[str, tuple[bytes, int]] = {}
        budget = limit
        for path in sorted(p for p in self.files.rglob("*") if p.is_file()):
            name = str(path.relative_to(self.files))
            seen = int(offsets.get(name, 0))
            try:
                size = path.stat().st_size
                if size <= seen or budget <= 0:
                    continue
                with open(path, "rb") as file:
                    file.seek(seen)
                    data = file.read(min(size - seen, budget))
            except OSError:
                continue
            changed[name] = (data, size)
            budget -= len(data)
        return changed

    def finish_capture(self) -> None:
        """Wait for the output of a command that ended to be read to its end."""
        if self.handle is not None:
            for capture in self.handle.captures:
                capture.join(timeout=10)

    # system metrics ---------------------------------------------------------------------------
    def start_metrics(
        self,
        run_id: str,
        tracking_env: Mapping[str, str],
        interval_s: float | None,
        gpus: str,
    ) -> str:
        from ..tracking.system_metrics import start_system_metrics

        # this actor's own MLflow client (URI and token) reads them; put back at the end, so
        # that nothing of this run reaches the next attempt this runner serves
        self._tracking = {name: os.environ.get(name) for name in tracking_env}
        os.environ.update(tracking_env)
        self.monitor = start_system_metrics(
            run_id,
            node_id=f"node_{self.node}",
            sampling_interval_s=interval_s,
            tracking_uri=tracking_env.get("MLFLOW_TRACKING_URI"),
            visible_gpus=gpus if self.uses_gpus else "",
        )
        return str(self.monitor.summary)

    def finish_metrics(self) -> None:
        monitor, self.monitor = self.monitor, None
        if monitor is not None:
            monitor.finish()
        saved, self._tracking = self._tracking, {}
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    # stopping ---------------------------------------------------------------------------------
    def stop(self, grace_s: float) -> None:
        """SIGTERM to the command's process group, SIGKILL after ``grace_s``; reaped. Then, as on
        the local backend, SIGKILL to what the command left in its group after its end."""
        from ..pids import kill_group
        from .local import stop_nodes

        if self.handle is not None:
            if self.handle.poll() is None:
                stop_nodes([self.handle], grace_s)
            if self.handle.poll() is not None:  # how it ended is known: what is left of its
                kill_group(self.handle.pid)  # what is left of its group goes, its pipes close
        self.finish_capture()

    def leftovers(self, grace_s: float) -> list[str]:
        """Stop what still runs on this node for this attempt and left the command's process
        group; the pids. Once the command ended, what is still in its group only exits (the
        keeper after writing how the command ended): the group is stopped, and that is no
        leftover. What a rank started in its own session may still be on its way out
        (multiprocessing's resource tracker follows its rank a moment later, slowly on a loaded
        machine): what ends by itself within ``SETTLE_S`` is no leftover either."""
        import time

        from ..pids import job_processes, kill_group, process_start_time, stop_processes

        handle = self.handle
        ended = handle is not None and handle.poll() is not None
        if ended:
            kill_group(handle.pid)

        def left() -> list[int]:
            pids = job_processes(self.group, GROUP_ENV)
            return [pid for pid in pids if not (ended and _in_group(pid, handle.pid))]

        pids = left()
        deadline = time.monotonic() + SETTLE_S
        while pids and ended and time.monotonic() < deadline:
            time.sleep(0.1)
            pids = left()
        what = [_described(pid) for pid in pids]
        stop_processes(pids, grace_s, {pid: process_start_time(pid) for pid in pids})
        return what

    def close(self) -> None:
        """What this attempt left here goes (its folder, its log); the actor may serve another
        (``begin``) or be killed."""
        if self.handle is not None and self.handle.poll() is None:
            self.stop(0.0)
        self.handle = None
        self.finish_metrics()
        if self.begun:
            with contextlib.suppress(Exception):
                self.writer.close()
            shutil.rmtree(self.folder, ignore_errors=True)
            self.begun = False
