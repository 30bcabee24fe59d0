"""The local backend: every node of an attempt is a process group on this machine.

Node ``k`` runs the workload's command in its own session (so its process group — torchrun and
its ranks — is stopped as one), with ``NODE_RANK=k``, ``NNODES``, ``MASTER_ADDR=127.0.0.1`` and
``MASTER_PORT``, and torchrun's ``PET_*`` variables for the same values, so a plain
``torchrun --nproc_per_node=N train.py`` joins the others without rendezvous flags. Its stdout and
stderr are captured line by line into the node's log file; its system metrics are sampled here
(``system/node_k/…`` each describe this machine, the GPU metrics only the node's GPUs).
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import GROUP, JOB_ID
from ..pids import kill_group, process_start_time, stop_groups
from .base import (
    GroupLaunch,
    Metrics,
    NodeInfo,
    NodeLaunch,
    NodeState,
    Shaped,
    ShapeError,
    node_environment,
)

if TYPE_CHECKING:
    from ..logs.capture import StreamCapture
    from ..logs.logfile import LogWriter

# every node is a process group on this machine, with a log capture and a metrics monitor:
# more than this is not a workload for one machine
LOCAL_MAX_NODES = 16


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


@dataclass
class NodeProcess:
    node: int
    process: subprocess.Popen[bytes]
    writer: LogWriter
    captures: list[StreamCapture] = field(default_factory=list)
    started: float | None = None

    @property
    def pid(self) -> int:
        return self.process.pid

    def poll(self) -> int | None:
        return self.process.poll()


def start_node(
    node: int,
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    writer: LogWriter,
) -> NodeProcess:
    """Start one node's command in a session of its own, its output captured into ``writer``."""
    from ..logs.capture import StreamCapture

    process = subprocess.Popen(
        argv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
        env=dict(env),
        cwd=cwd,
    )
    handle = NodeProcess(node, process, writer, started=process_start_time(process.pid))
    assert process.stdout is not None and process.stderr is not None
    out_fd = os.dup(process.stdout.fileno())
    err_fd = os.dup(process.stderr.fileno())
    process.stdout.close()
    process.stderr.close()
    handle.captures = [
        StreamCapture(out_fd, writer, "stdout").start(),
        StreamCapture(err_fd, writer, "stderr").start(),
    ]
    return handle


def stop_nodes(nodes: list[NodeProcess], grace_s: float) -> None:
    """SIGTERM to each node's process group, SIGKILL after ``grace_s``; reaped."""
    stop_groups([n.pid for n in nodes], grace_s, [n.process for n in nodes])
    for n in nodes:
        with contextlib.suppress(subprocess.TimeoutExpired):
            n.process.wait(timeout=max(1.0, grace_s))


def node_state(node: int, code: int | None) -> NodeState:
    if code is None:
        return NodeState(node)
    if code < 0:
        return NodeState(node, signal=-code)
    return NodeState(node, exit_code=code)


class LocalBackend:
    name = "local"

    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        self.environ = dict(os.environ if environ is None else environ)  # what nodes start from

    def check(self, spec: Shaped) -> None:
        """Refuse what one machine cannot mean to run (ShapeError)."""
        nodes = spec.compute.num_nodes
        if nodes > LOCAL_MAX_NODES:
            raise ShapeError(
                "compute.num_nodes",
                f"is {nodes}; the local backend runs at most {LOCAL_MAX_NODES} nodes, "
                "all on this machine",
                hint="to run on several machines, connect a Ray cluster (docs/clusters.md)",
            )

    def start(self, launch: GroupLaunch) -> LocalGroup:
        group = LocalGroup(launch)
        port = free_port()
        try:
            for spec in launch.nodes:
                visible = None if spec.gpus is None else ",".join(str(i) for i in spec.gpus)
                env = node_environment(
                    self.environ,
                    node=spec.node,
                    num_nodes=launch.num_nodes,
                    master_addr="127.0.0.1",
                    master_port=port,
                    owned=spec.env,
                    cuda_visible_devices=visible,
                    uses_gpus=launch.uses_gpus,
                )
                env[GROUP.name] = group.marker  # what the node leaves is found by it
                argv = _in_folder(spec)
                handle = start_node(spec.node, argv, env=env, cwd=spec.cwd, writer=spec.writer)
                group.processes.append(handle)
                group.nodes.append(
                    NodeInfo(
                        spec.node,
                        host=socket.gethostname(),
                        pid=handle.pid,
                        started=handle.started,
                        gpus=env.get("CUDA_VISIBLE_DEVICES", ""),
                    )
                )
        except BaseException:
            group.stop(launch.grace_s)
            raise
        return group

    def close(self) -> None:
        return None


def _in_folder(spec: NodeLaunch) -> list[str]:
    """The node's files put in its folder (here, the job's own), ``{folder}`` in argv replaced."""
    if spec.folder is None:
        if spec.files:
            raise ValueError(f"node {spec.node}: files to give the command but no folder for them")
        return list(spec.argv)
    folder = Path(spec.folder)
    folder.mkdir(parents=True, exist_ok=True)
    for name, data in spec.files.items():
        target = folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    return [arg.replace("{folder}", str(folder)) for arg in spec.argv]


class LocalGroup:
    backend = "local"

    def __init__(self, launch: GroupLaunch) -> None:
        self.launch = launch
        self.marker = f"{launch.job_id}/{launch.attempt}"  # config.GROUP of every node
        self.nodes: list[NodeInfo] = []
        self.processes: list[NodeProcess] = []
        self.monitors: list[Any] = []

    def poll(self) -> list[NodeState]:
        return [node_state(p.node, p.poll()) for p in self.processes]

    def sync_logs(self, *, final: bool = False) -> None:
        """The captures write into the host's log files directly; at the end, wait for them to
        read their pipes to the end."""
        if not final:
            return
        for handle in self.processes:
            for capture in handle.captures:
                capture.join(timeout=10)

    def start_metrics(self, metrics: Metrics) -> Metrics:
        from ..tracking.system_metrics import start_system_metrics

        for info in self.nodes:
            node_id = f"node_{info.node}"
            monitor = start_system_metrics(
                metrics.run_id,
                node_id=node_id,
                sampling_interval_s=metrics.interval_s,
                tracking_uri=metrics.tracking_env.get("MLFLOW_TRACKING_URI"),
                visible_gpus=info.gpus,
            )
            self.monitors.append(monitor)
            metrics.summaries[info.node] = monitor.summary
        return metrics

    def finish_metrics(self) -> None:
        monitors, self.monitors = self.monitors, []
        for monitor in monitors:
            monitor.finish()

    def stop(self, grace_s: float) -> None:
        running = [p for p in self.processes if p.poll() is None]
        if running:
            stop_nodes(running, grace_s)
        for handle in self.processes:  # what is left in a node's process group after its end
            kill_group(handle.pid)

    def leftovers(self, grace_s: float) -> list[str]:
        from ..pids import kill_job_processes

        pids = kill_job_processes(self.marker, GROUP.name, grace_s=grace_s)
        # a job run's: also what carries its id with another group's mark (a `.distributed()`
        # call made in one of its nodes marks its own ranks)
        job = next((n.env[JOB_ID.name] for n in self.launch.nodes if JOB_ID.name in n.env), None)
        if job is not None:
            pids += kill_job_processes(job, JOB_ID.name, grace_s=grace_s)
        return [f"pid {pid} on this machine" for pid in pids]

    def forget_checkpoints(self) -> None:
        return None  # the nodes' folders are this machine's, removed with the job run's logs

    def close(self) -> None:
        return None
