"""``.distributed(remote=True)``: the call as a job run, and ``jupyter_air.job(ID)``.

The call is submitted like a workload (the same job store, supervisor, retries, per-node logs,
panels, ``air get/logs/cancel``; one MLflow run per attempt) whose every node runs the
launcher agent on the cloudpickled call (launch/node_output.py; workloads/calls.py says where
it is kept). Where it runs is chosen as for workloads (backends/choice.py): this machine, or the Ray
cluster when one is configured. The cell follows it as ``%%air_run`` does and returns the ranks'
results in global rank order, or raises the failing rank's own exception from the last
attempt. The job does not depend on the kernel: interrupting the cell stops following (unless
the user says to cancel), and ``jupyter_air.job(ID).result()`` in any kernel reads the same
results later.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import DistributedError

if TYPE_CHECKING:
    from ..workloads.store import JobRun, JobStore
    from .options import LaunchOptions


class JobRunFailed(DistributedError):
    """The job run of a remote call ended without results (failed without a rank's exception,
    cancelled, or its results are gone)."""


class ResultsTooLarge(DistributedError):
    """The ranks' return values are over the size kept with a job run."""


def submit_call(
    name: str, options: LaunchOptions, payload: bytes, *, max_retries: int = 0
) -> JobRun:
    """Submit the call; its job run (PENDING, supervisor started). Refused at once — nothing
    created — when it cannot run where it would (GPUs, the cluster's shape, tracking)."""
    from ..backends.choice import choose
    from ..config import FORK_RANKS
    from ..tracking.context import kernel_context
    from ..workloads import calls
    from ..workloads.jobs import open_store, submit
    from ..workloads.paths import job_dir, new_job_id
    from ..workloads.spec import Compute, WorkloadSpec

    store = open_store()
    nproc, kind = _ranks(options, choose(None))
    limits = {"timeout_minutes": options.timeout / 60} if options.timeout is not None else {}
    spec = WorkloadSpec(
        **limits,
        experiment_name=options.experiment or _notebook_experiment(),
        mlflow_run_name=options.run_name,
        compute=Compute(
            num_accelerators=nproc,
            accelerator_type="GPU" if kind == "gpu" else "CPU",
            num_nodes=options.nodes,
        ),
        command=calls.node_command(),
        max_retries=max_retries,
        working_dir=os.getcwd(),
        code_source="live",  # what runs is in the job's folder already
        env_variables={"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1"), **options.env},
    )
    job_id = new_job_id()
    folder = calls.call_dir(store.data_dir, job_id)
    folder.mkdir(parents=True)
    (folder / "payload.pkl").write_bytes(payload)
    call = {
        "function": name,
        "nproc": nproc,
        "nnodes": options.nodes,
        "grace_period": options.grace_period,
        "max_restarts": options.max_restarts,  # the call's agent restarts its ranks itself
        "fork_ranks": FORK_RANKS.text() != "0",
    }
    (folder / "call.json").write_text(json.dumps(call), encoding="utf-8")
    try:
        return submit(
            spec,
            store=store,
            source=calls.SOURCE,
            notebook=kernel_context().notebook_path,
            job_id=job_id,
            report=lambda message: print(message, file=sys.stderr),
        )
    except BaseException:
        import shutil

        shutil.rmtree(job_dir(store.data_dir, job_id), ignore_errors=True)
        raise


def _ranks(options: LaunchOptions, choice: Any) -> tuple[int, str]:
    """Ranks per node and their kind, from where the job will run."""
    if choice.backend == "ray":
        from ..backends.ray_backend import RayBackend
        from .cluster_plan import plan_cluster

        backend = RayBackend(choice.address)
        try:
            cluster = plan_cluster(options.gpus, options.nodes, backend)
        finally:
            backend.close()
        return cluster.nproc, cluster.kind
    if options.nodes > 1:
        from .cluster_plan import HOW_TO_CONNECT

        raise DistributedError(f"nodes={options.nodes} needs a cluster: {HOW_TO_CONNECT}")
    from .devices import plan_devices

    plan = plan_devices(options.gpus, 1)
    return plan.nproc, "gpu" if plan.cuda_visible_devices is not None else "cpu"


def _notebook_experiment() -> str:
    from ..tracking.experiments import resolve_experiment

    return resolve_experiment().name


def run_remote(name: str, options: LaunchOptions, payload: bytes, max_retries: int) -> list[Any]:
    """Submit the call and follow it in the cell: its results, or the failing rank's error."""
    __tracebackhide__ = True
    from ..notebook.magics import _show_job, _stream
    from ..workloads.jobs import cancel, open_store

    job = submit_call(name, options, payload, max_retries=max_retries)
    store = open_store()
    _show_job(job)
    try:
        final = _stream(store, job)
    except KeyboardInterrupt:
        if _ask_cancel(job.id):
            ended = cancel(store, job.id)
            print(f"Job run {job.id} {ended.status} (interrupted).", file=sys.stderr, flush=True)
        else:
            print(
                f"Stopped following job run {job.id}; it goes on. "
                f"jupyter_air.job({job.id!r}).result() waits for its results, "
                ".cancel() cancels it.",
                file=sys.stderr,
                flush=True,
            )
        raise
    return JobHandle(job.id, store).result_of(final)


def _ask_cancel(job_id: str) -> bool:
    """Whether to cancel the job too; no answer possible (no stdin) or none given: no."""
    try:
        answer = input(f"Cancel job run {job_id} too? [y/N] ")
    except BaseException:  # no stdin here (nbclient, a console without one), or interrupted
        return False
    return answer.strip().lower() in ("y", "yes")


class JobHandle:
    """A job run from any kernel: ``jupyter_air.job(ID)``. ``.status``, ``.result()`` (the
    ranks' return values of a ``.distributed(remote=True)`` call), ``.logs()``, ``.cancel()``."""

    def __init__(self, job_id: str, store: JobStore | None = None) -> None:
        from ..workloads.jobs import get_job, open_store

        self.store = store or open_store()
        self.id = get_job(self.store, job_id).id  # JobNotFound when there is none

    def __repr__(self) -> str:
        return f"<job run {self.id} {self.status}>"

    @property
    def job(self) -> JobRun:
        from ..workloads.jobs import get_job

        return get_job(self.store, self.id)

    @property
    def status(self) -> str:
        return self.job.status

    def wait(self, timeout: float | None = None) -> JobRun:
        """Block until the job run ends (TimeoutError after ``timeout`` seconds)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.job
            if job.finished:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job run {self.id} is still {job.status} after {timeout:g} s")
            time.sleep(0.5)

    def result(self, timeout: float | None = None) -> list[Any]:
        """The ranks' return values (rank 0 first) once the job run succeeded; the failing
        rank's exception when its last attempt failed."""
        __tracebackhide__ = True
        return self.result_of(self.wait(timeout))

    def result_of(self, job: JobRun) -> list[Any]:
        __tracebackhide__ = True
        from ..workloads import calls

        if job.source != calls.SOURCE:
            raise JobRunFailed(
                f"job run {job.id} is a workload, not a .distributed(remote=True) call: it has "
                f"no results (air logs {job.id})"
            )
        attempt = job.attempts[-1].attempt if job.attempts else None
        if attempt is None:
            raise JobRunFailed(
                f"job run {job.id} {job.status} before its first attempt: {job.reason}"
            )
        call = json.loads((calls.call_dir(self.store.data_dir, job.id) / "call.json").read_text())
        folders = [
            calls.node_dir(self.store.data_dir, job.id, attempt, n) for n in range(job.num_nodes)
        ]
        if job.status == "SUCCEEDED":
            return _results(job, folders, int(call["nproc"]))
        _raise_rank_error(job, folders, call)
        raise JobRunFailed(f"job run {job.id} {job.status}: {job.reason}. Logs: air logs {job.id}")

    def logs(self, node: int = 0, attempt: int | None = None) -> str:
        """The text of a node's log (the last attempt's unless ``attempt``)."""
        from ..workloads.paths import log_path

        job = self.job
        number = attempt or (job.attempts[-1].attempt if job.attempts else 1)
        path = log_path(self.store.data_dir, job.id, number, node)
        return path.read_text(errors="replace") if path.exists() else ""

    def cancel(self) -> JobRun:
        from ..workloads.jobs import cancel

        return cancel(self.store, self.id)


def job(job_id: str) -> JobHandle:
    """The job run ``job_id`` (a workload's or a ``.distributed(remote=True)`` call's)."""
    return JobHandle(job_id)


def _results(job: JobRun, folders: list[Path], nproc: int) -> list[Any]:
    import cloudpickle

    from ..workloads.calls import MAX_RESULTS_BYTES

    paths = [folders[r // nproc] / f"result-{r}.pkl" for r in range(nproc * len(folders))]
    missing = [r for r, p in enumerate(paths) if not p.exists()]
    if missing:
        raise JobRunFailed(
            f"job run {job.id} succeeded but the results of rank(s) "
            f"{', '.join(map(str, missing))} are not in {folders[0].parent}"
        )
    size = sum(p.stat().st_size for p in paths)
    if size > MAX_RESULTS_BYTES:
        raise ResultsTooLarge(
            f"the ranks of job run {job.id} returned {size / 2**20:.0f} MiB in all, over the "
            f"{MAX_RESULTS_BYTES >> 20} MiB a job run keeps: save large values to a file and "
            "return its path"
        )
    return [cloudpickle.loads(p.read_bytes()) for p in paths]


def _raise_rank_error(job: JobRun, folders: list[Path], call: dict[str, Any]) -> None:
    """Raise the cause among the last attempt's failed ranks, as the in-kernel call would."""
    __tracebackhide__ = True
    from .failures import cause_order, collect_failures, rank_error
    from .rundir import RunDir

    total = int(call["nproc"]) * len(folders)
    found = []
    for node, folder in enumerate(folders):
        run_dir = RunDir(str(folder))
        for failure in collect_failures(run_dir, total, run_dir.read_json(run_dir.outcome)):
            found.append((failure, node, run_dir))
    found.sort(key=lambda item: cause_order(item[0]))
    if not found:
        return
    failure, node, run_dir = found[0]
    hosts = {n.node: n.host for n in job.attempts[-1].nodes} if job.attempts else {}
    where = (node, hosts.get(node) or "?") if len(folders) > 1 else None
    error, remote = rank_error(
        failure, function_name=call["function"], nproc=total, run_dir=run_dir, node=where
    )
    raise error from remote
