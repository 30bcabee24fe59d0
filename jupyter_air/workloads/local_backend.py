"""The local backend: every node of an attempt is a process on this machine.

Node ``k`` runs the workload's command in its own session (so its process group — torchrun and
its ranks — is stopped as one), with ``NODE_RANK=k``, ``NNODES``, ``MASTER_ADDR=127.0.0.1`` and
``MASTER_PORT``, and torchrun's ``PET_*`` variables for the same values, so a plain
``torchrun --nproc_per_node=N train.py`` joins the others without rendezvous flags. Its stdout and
stderr are captured line by line into the node's log file.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from ..pids import process_start_time as start_time
from .capture import StreamCapture
from .logfile import LogWriter
from .processes import stop_groups

if TYPE_CHECKING:
    from .spec import WorkloadSpec


# every node is a process group on this machine, with a log capture and a metrics monitor:
# more than this is not a workload for one machine
LOCAL_MAX_NODES = 16


def check_shape(spec: WorkloadSpec) -> None:
    """Refuse what one machine cannot mean to run (SpecError with the field's line)."""
    from .spec import SpecError

    nodes = spec.compute.num_nodes
    if nodes > LOCAL_MAX_NODES:
        raise SpecError(
            [
                spec.problem(
                    "compute.num_nodes",
                    f"is {nodes}; the local backend runs at most {LOCAL_MAX_NODES} nodes, all "
                    "on this machine",
                    hint="to run on several machines, connect a Ray cluster (docs/clusters.md)",
                )
            ]
        )


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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def node_environment(
    base: Mapping[str, str],
    *,
    node: int,
    num_nodes: int,
    master_port: int,
    user_env: Mapping[str, str],
    owned: Mapping[str, str],
    cuda_visible_devices: str,
    uses_gpus: bool,
) -> dict[str, str]:
    """The environment of node ``node``: the submitter's, our defaults, the spec's
    ``env_variables``, then what jupyter-air owns (MLflow run, node rank, GPUs, job id)."""
    env = {
        k: v
        for k, v in base.items()
        if k not in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME")
    }
    defaults = {
        "PYTHONUNBUFFERED": "1",
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(master_port),
        "PET_NNODES": str(num_nodes),
        "PET_NODE_RANK": str(node),
        "PET_MASTER_ADDR": "127.0.0.1",
        "PET_MASTER_PORT": str(master_port),
        "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
    }
    if uses_gpus:
        defaults["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"  # NVML's numbering, which assigned the GPUs
    env.update(defaults)
    env.update(user_env)
    env.update(owned)
    env.update(
        {
            "NODE_RANK": str(node),
            "NNODES": str(num_nodes),
            "CUDA_VISIBLE_DEVICES": cuda_visible_devices,
        }
    )
    return env


def start_node(
    node: int,
    argv: list[str],
    *,
    env: Mapping[str, str],
    cwd: str,
    writer: LogWriter,
) -> NodeProcess:
    """Start one node's command, its output captured into ``writer``."""
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
    handle = NodeProcess(node, process, writer, started=start_time(process.pid))
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
    """SIGTERM to each node's process group, SIGKILL after ``grace_s``."""
    stop_groups([n.pid for n in nodes], grace_s)
    for n in nodes:
        try:
            n.process.wait(timeout=max(1.0, grace_s))
        except subprocess.TimeoutExpired:
            os.kill(n.pid, signal.SIGKILL)
            n.process.wait()


def argv_for(command: str | list[str]) -> list[str]:
    """How a spec's command runs: a string through ``/bin/sh -c``, a list as it is."""
    if isinstance(command, str):
        return ["/bin/sh", "-c", command]
    return list(command)
