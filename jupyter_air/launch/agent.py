"""The launcher agent: ``python -m jupyter_air.launch.agent <run dir>``, one per ``.distributed()``
call, started by the kernel in its own session.

It runs torch elastic's ``elastic_launch`` (c10d rendezvous on loopback, restarts as the
call's ``max_restarts`` says), which starts the ranks with their stdout/stderr in files of the
run folder, and writes ``outcome.json`` for the kernel: succeeded, failed (per-rank exit codes
and signals), stopped by a signal, or a launcher error. When elastic stops the ranks still
running (after the first failure, or when the agent is signalled) it notes which in the run
folder first, so that none of them is taken for the cause.

On Linux the ranks are forks of this agent (elastic's ``fork`` start method, entry point
``worker.run_forked``): the agent has imported torch for elastic already, so a rank starts
without an interpreter's start and a second ``import torch`` (about a second each call;
bench/README.md). The agent never initialises CUDA (elastic's question whether CUDA is there is
answered through NVML). Should the CUDA driver be loaded in it all the same, elsewhere than
Linux, or where the kernel's ``JUPYTER_AIR_FORK_RANKS`` is ``0``, each rank is
``python -m jupyter_air.launch.worker <run dir>``.

The same agent is the command of each node of a ``.distributed(remote=True)`` job run: given a
folder with the call and no settings, it takes them from the call and prints the ranks' output
as the node's log (launch/node_output.py).

Why a process and not a thread of the kernel: elastic installs signal handlers (SIGTERM, SIGINT,
…) to stop its ranks, which Python allows only in a main thread; and a process of its own can be
stopped, and outlive nothing: it dies with the kernel (parent watch) and ranks die with it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
import traceback
import uuid
import warnings
from collections.abc import Iterator
from typing import Any

from ..config import NODE_IP, RESTARTED_RANKS_ENV
from ..files import write_json
from .processes import AGENT_PID_ENV, signal_name, watch_parent
from .rundir import RunDir, record_stops

FORKS_POSSIBLE = sys.platform == "linux"
NVML_CUDA_CHECK = "PYTORCH_NVML_BASED_CUDA_CHECK"
WORKER_MODULE = "jupyter_air.launch.worker"


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m jupyter_air.launch.agent <run dir>", file=sys.stderr)
        return 2
    run_dir = RunDir(argv[0])
    settings = run_dir.read_json(run_dir.launch)
    node_output = None
    if settings is None:  # a node of a job run: the call's settings, its output our own
        from .node_output import NodeOutput, job_settings

        settings = job_settings(run_dir)
        if settings is not None:
            write_json(run_dir.launch, settings)
            node_output = NodeOutput(run_dir, settings).start()
    if settings is None:
        print(f"jupyter-air agent: no launch settings or call in {run_dir}", file=sys.stderr)
        return 2
    parent_lost = _watch_driver(settings)
    started = time.time()
    outcome: dict[str, Any] = {"started": started, "agent_pid": os.getpid()}
    try:
        _launch(run_dir, settings)
        outcome["state"] = "succeeded"
    except BaseException as error:  # every ending is reported to the kernel
        outcome.update(_describe_failure(error))
    outcome["ended"] = time.time()
    outcome["parent_lost"] = parent_lost["lost"]
    write_json(run_dir.outcome, outcome)
    if node_output is not None:
        node_output.finish(outcome)
    if parent_lost["lost"]:
        _end_orphaned_run(settings)
    return 0 if outcome["state"] == "succeeded" else 1


def _exit(code: int) -> None:
    """Exit at once: the ranks are gone and the outcome is written; the interpreter's teardown
    (torch's included) would only delay the kernel."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _launch(run_dir: RunDir, settings: dict[str, Any]) -> None:
    from torch.distributed.launcher.api import LaunchConfig, elastic_launch

    from .logs_spec import RunDirLogsSpecs

    nproc = int(settings["nproc"])
    nnodes = int(settings.get("nnodes", 1))
    os.environ[AGENT_PID_ENV] = str(os.getpid())
    grace = float(settings.get("grace_period", 5.0))
    if settings.get("max_restarts"):
        os.environ.update(RESTARTED_RANKS_ENV)
    _record_elastic_stops(run_dir, grace)
    rdzv: dict[str, Any] = {"timeout": int(settings.get("rdzv_timeout", 300))}
    local_addr: str | None
    if nnodes == 1:
        # port 0: the rendezvous store binds a free port itself (no race for a port chosen
        # here), as `torchrun --standalone` does; MASTER_PORT is the same store, shared
        backend, endpoint, local_addr = "c10d", "127.0.0.1:0", "127.0.0.1"
    else:
        # one agent per node, the store on node 0's address (set by the backend), node k with
        # ranks k*nproc … (k+1)*nproc-1: what `torchrun --node-rank=k` does
        backend = "static"
        endpoint = f"{os.environ['MASTER_ADDR']}:{os.environ['MASTER_PORT']}"
        local_addr = NODE_IP.text()
        rdzv["rank"] = int(os.environ["NODE_RANK"])
    with _cuda_counted_by_nvml():  # elastic asks whether CUDA is there
        config = LaunchConfig(
            min_nodes=nnodes,
            max_nodes=nnodes,
            nproc_per_node=nproc,
            run_id=settings.get("rdzv_id") or uuid.uuid4().hex,
            rdzv_backend=backend,
            rdzv_endpoint=endpoint,
            rdzv_configs=rdzv,
            local_addr=local_addr,
            max_restarts=int(settings.get("max_restarts", 0)),
            monitor_interval=float(settings.get("monitor_interval", 0.1)),
            logs_specs=RunDirLogsSpecs(run_dir, nproc),
            shutdown_timeout=grace,
        )
    if FORKS_POSSIBLE and settings.get("fork_ranks", True) and not _cuda_loaded():
        from .worker import run_forked

        config.start_method = "fork"
        # the agent's own threads (the kernel watch, the rendezvous store's) are not the ranks'
        # business: a rank touches none of their state
        warnings.filterwarnings("ignore", message=r".*fork\(\) may lead to deadlocks")
        elastic_launch(config, run_forked)(str(run_dir.path))
    else:
        elastic_launch(config, sys.executable)("-m", WORKER_MODULE, str(run_dir.path))


@contextlib.contextmanager
def _cuda_counted_by_nvml() -> Iterator[None]:
    """torch asks NVML whether CUDA is there, not the CUDA runtime, which would initialise CUDA
    in this agent: a forked rank could not use it then."""
    before = os.environ.get(NVML_CUDA_CHECK)
    os.environ[NVML_CUDA_CHECK] = "1"
    try:
        yield
    finally:
        if before is None:
            os.environ.pop(NVML_CUDA_CHECK, None)
        else:
            os.environ[NVML_CUDA_CHECK] = before


def _cuda_loaded() -> bool:
    """Whether this process has loaded the CUDA driver (the runtime loads it when it starts,
    NVML never does): its ranks are then interpreters of their own, as elsewhere."""
    try:
        with open("/proc/self/maps") as maps:
            return any("libcuda.so" in line for line in maps)
    except OSError:
        return True


def _record_elastic_stops(run_dir: RunDir, grace: float) -> None:
    """Before elastic's process context stops its ranks (``PContext.close``: SIGTERM, then
    SIGKILL after its timeout), record those still running as stopped by the launch, by global
    rank, and how each rank that already ended did (``_ENDED``): elastic names one failure of
    forked ranks, the first it notices, which may be a rank that only saw its peer die. The
    timeout is the call's ``grace_period`` (elastic's restart waits 30 s)."""
    import psutil
    from torch.distributed.elastic.multiprocessing import api

    original = api.PContext.close

    def running(pid: int) -> bool:
        try:
            return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            return False

    def close(pcontext: Any, death_sig: Any = None, timeout: float = 30) -> None:
        with contextlib.suppress(Exception):  # a record not written must not keep ranks running
            global_rank = _global_ranks(run_dir)
            pids, ended = pcontext.pids(), _exit_codes(pcontext)
            _ENDED.clear()
            for local, code in ended.items():
                _ENDED[global_rank.get(pids.get(local), local)] = (local, pids.get(local), code)
            ranks = [
                global_rank.get(pid, local)
                for local, pid in pids.items()
                if local not in ended and running(pid)
            ]
            record_stops(run_dir, "agent", ranks, signal_name(int(death_sig or signal.SIGTERM)))
        return original(pcontext, death_sig, min(timeout, grace))

    api.PContext.close = close


_ENDED: dict[int, tuple[int, int | None, int]] = {}  # global rank → local rank, pid, exit code


def _exit_codes(pcontext: Any) -> dict[int, int]:
    """Local rank → exit code (minus the signal) of the ranks of ``pcontext`` that have ended."""
    forked = getattr(pcontext, "_pc", None)
    if forked is not None:
        processes = enumerate(forked.processes)
        return {local: p.exitcode for local, p in processes if p.exitcode is not None}
    handlers = getattr(pcontext, "subprocess_handlers", {})
    codes = {local: handler.proc.poll() for local, handler in handlers.items()}
    return {local: code for local, code in codes.items() if code is not None}


def _global_ranks(run_dir: RunDir) -> dict[int, int]:
    """pid → global rank, from the pid files the ranks wrote (on several nodes a local rank is
    not the rank)."""
    return {info["pid"]: rank for rank, info in run_dir.rank_pids().items()}


def _describe_failure(error: BaseException) -> dict[str, Any]:
    from torch.distributed.elastic.multiprocessing.api import SignalException
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

    if isinstance(error, ChildFailedError):
        failures = {}
        for rank, failure in error.failures.items():
            failures[str(rank)] = _failure(
                int(rank), failure.local_rank, failure.pid, failure.exitcode, failure.timestamp
            )
        for rank, (local, pid, code) in _ENDED.items():
            if code != 0 and str(rank) not in failures:
                failures[str(rank)] = _failure(rank, local, pid, code, time.time())
        return {"state": "failed", "failures": failures}
    if isinstance(error, SignalException):
        return {"state": "stopped", "signal": signal_name(int(error.sigval))}
    if isinstance(error, KeyboardInterrupt):
        return {"state": "stopped", "signal": "SIGINT"}
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
    print(text, file=sys.stderr, flush=True)
    return {"state": "error", "error": f"{type(error).__name__}: {error}", "traceback": text}


def _failure(rank: int, local: int, pid: int | None, code: int, when: float) -> dict[str, Any]:
    return {
        "rank": rank,
        "local_rank": local,
        "pid": pid,
        "exitcode": code,
        "signal": signal_name(-code) if code < 0 else None,
        "timestamp": when,
    }


def _watch_driver(settings: dict[str, Any]) -> dict[str, bool]:
    """When the kernel dies (shut down, crashed, killed), stop the ranks as an interrupt would."""
    state = {"lost": False}
    driver = settings.get("driver_pid")
    if driver is None or os.getppid() != int(driver):
        return state

    def lost() -> None:
        state["lost"] = True
        os.kill(os.getpid(), signal.SIGTERM)

    watch_parent(int(driver), lost)
    return state


def _end_orphaned_run(settings: dict[str, Any]) -> None:
    """The kernel died: no one else can mark its run, so end it KILLED here."""
    run_id, uri = settings.get("mlflow_run_id"), settings.get("mlflow_tracking_uri")
    if not run_id:
        return
    try:
        from ..tracking.rest import client_for

        client = client_for(uri or os.environ.get("MLFLOW_TRACKING_URI") or "")
        if client.get_run(run_id).info.status == "RUNNING":
            client.set_terminated(run_id, "KILLED")
    except Exception as error:
        print(f"jupyter-air agent: could not end run {run_id}: {error}", file=sys.stderr)


if __name__ == "__main__":
    _exit(main(sys.argv[1:]))
