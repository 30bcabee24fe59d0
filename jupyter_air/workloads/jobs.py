"""Submitting, cancelling and checking on job runs: what the CLI, the magics and the Jupyter
server call.

``submit`` checks everything before it creates anything — the spec is already valid; then the
GPUs (capacity.py), the tracking server, and the experiment (created with its artifact location,
or found; a different artifact location is an error) — then records the job run and starts its
supervisor, detached. ``request_cancel`` asks the supervisor to stop (SIGTERM) and returns;
``cancel`` then waits and makes sure, whatever happens to it, that no process of the job is left.
``refresh`` notices a supervisor that died (machine restart, OOM killer) and ends its job run
FAILED instead of leaving it RUNNING forever, and finishes a cancellation left undone.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import DATA_DIR, JOB_ID, data_dir
from ..pids import is_running, kill_job_processes, spawn_detached, stop_process
from ..pids import process_start_time as start_time
from ..private import private_folder
from ..tracking.identity import NAMES as IDENTITY_NAMES
from .capacity import GpuInventory, assign_gpus, gpu_inventory, matching_gpus
from .connection import Connection, find_connection
from .paths import job_dir, new_job_id
from .retention import purge_logs
from .store import (
    ACTIVE,
    CANCELLED,
    FAILED,
    TERMINAL,
    AlreadySubmitted,
    JobRun,
    JobStore,
    Schedule,
)

if TYPE_CHECKING:
    from ..backends.base import Backend
    from ..backends.choice import Choice
    from ..backends.ray_backend import RayBackend
    from .snapshot import Listing
    from .spec import WorkloadSpec

log = logging.getLogger(__name__)

START_GRACE_S = 60.0  # a job run whose supervisor has not started after this is failed


def open_store(data: str | os.PathLike[str] | None = None) -> JobStore:
    """The job store of jupyter-air's data folder (``config.DATA_DIR`` or the default)."""
    return JobStore.for_data_dir(data_dir(data))


def submit(
    spec: WorkloadSpec,
    *,
    store: JobStore | None = None,
    spec_yaml: str | None = None,
    spec_path: str | None = None,
    source: str = "cli",
    notebook: str | None = None,
    connection: Connection | Callable[[], Connection] | None = None,
    inventory: GpuInventory | Callable[[], GpuInventory] | None = None,
    job_id: str | None = None,
    environ: Mapping[str, str] | None = None,
    report: Callable[[str], None] | None = None,
    idempotency_key: str | None = None,
    schedule: Schedule | None = None,
) -> JobRun:
    """Submit a validated workload; returns its job run (PENDING, supervisor started), tagged
    with the ``schedule`` that fired it, if any.

    With an ``idempotency_key`` another job run has, raises AlreadySubmitted with that one:
    before any check when it is in the store already, else when the store refuses the second
    job run (two submissions at once: one job run; the other's folder is removed).

    In this order — the workload's own problems first: where it runs (the backend, see
    backends/choice.py: the local machine's GPUs, or the Ray cluster's nodes), then the tracking
    server (``connection``, or a function giving it, called after those checks; by default found
    by ``find_connection``, which starts the data folder's embedded server when nothing else is
    there), then the experiment. Raises SpecError (a shape the backend cannot run),
    CapacityError (not enough GPUs or nodes), NoTrackingServer, ExperimentError (artifact
    location differs, experiment deleted) or an MLflow error — having created nothing."""
    from ..backends.choice import choose
    from ..tracking.naming import current_user

    store = store or open_store()
    existing = store.job_by_idempotency_key(idempotency_key)
    if existing is not None:
        raise AlreadySubmitted(existing)
    choice = choose(spec.compute.backend, environ)
    gpus, ray, pool = place(spec, choice, inventory, store.data_dir)
    try:
        listing = code_listing(spec, store.data_dir)
    except BaseException:
        if ray is not None:
            ray.close()
        raise
    try:
        if connection is None:
            connection = find_connection(start_embedded=True, data=store.data_dir)
            assert connection is not None
        elif callable(connection):
            connection = connection()
        if ray is not None:
            ray.check_reachable(connection.tracking_uri, embedded=connection.embedded)
    finally:
        if ray is not None:
            ray.close()
    try:
        return _submit(
            spec, store, connection, gpus, spec_yaml, spec_path, source, notebook, job_id,
            environ, report, current_user(), choice, idempotency_key, listing, schedule, pool,
        )  # fmt: skip
    finally:
        if connection.lease is not None:  # the supervisor holds its own from now on
            connection.lease.release()
            connection.lease = None


def place(
    spec: WorkloadSpec,
    choice: Choice,
    inventory: GpuInventory | Callable[[], GpuInventory] | None,
    data: Path | None = None,
) -> tuple[list[Any], RayBackend | None, list[int]]:
    """Check the workload fits where it runs: the GPUs of each node on this machine (local),
    or the Ray cluster's shape (ray; the backend is returned, connected, for one more check;
    the nodes as a standby supervisor of the data folder ``data`` sees them when one is there,
    ray_standby.py). Also the GPUs of this machine the workload accepts (local): its attempts'
    pool."""
    if choice.backend == "ray":
        from ..backends.choice import require_ray
        from ..backends.ray_backend import RayBackend
        from .ray_standby import standby_nodes

        require_ray(choice.why)
        address = choice.address
        ray = RayBackend(address, ask=(lambda: standby_nodes(data, address)) if data else None)
        try:
            check_shape(ray, spec)
        except BaseException:
            ray.close()
            raise
        return [[] for _ in range(spec.compute.num_nodes)], ray, []
    from ..backends.local import LocalBackend

    check_shape(LocalBackend(), spec)
    if callable(inventory):
        inventory = inventory()
    inventory = inventory if inventory is not None else gpu_inventory()
    gpus = assign_gpus(spec.compute, inventory)
    return gpus, None, [g.index for g in matching_gpus(spec.compute, inventory)]


def check_shape(backend: Backend, spec: WorkloadSpec) -> None:
    """``backend.check``, a shape it never runs told as a SpecError: the field's line in the
    workload file, or the override that set it."""
    from ..backends.base import ShapeError
    from .spec import SpecError

    try:
        backend.check(spec)
    except ShapeError as error:
        raise SpecError([spec.problem(error.field, error.message, hint=error.hint)]) from None


def code_listing(spec: WorkloadSpec, data: str | os.PathLike[str] | None = None) -> Listing | None:
    """What the submission snapshots of ``working_dir`` (None: the job runs it live), without
    the data folder ``data``. Raises SpecError when it is over a snapshot's limits or a link
    points outside the folder."""
    from .snapshot import LIVE, SnapshotRefused, list_snapshot, resolve_source
    from .spec import SpecError

    if resolve_source(spec.code_source) == LIVE:
        return None
    try:
        return list_snapshot(spec.working_dir or os.getcwd(), data=data_dir(data))
    except SnapshotRefused as error:
        field = "code_source" if spec.code_source else "working_dir"
        raise SpecError([spec.problem(field, str(error), hint=error.hint)]) from None


def _submit(
    spec: WorkloadSpec,
    store: JobStore,
    connection: Connection,
    gpus: list[Any],
    spec_yaml: str | None,
    spec_path: str | None,
    source: str,
    notebook: str | None,
    job_id: str | None,
    environ: Mapping[str, str] | None,
    report: Callable[[str], None] | None,
    user: str,
    choice: Choice,
    idempotency_key: str | None,
    listing: Listing | None,
    schedule: Schedule | None = None,
    pool: list[int] | None = None,
) -> JobRun:
    from ..mlflow_server.records import Lease, ServerFiles, mlflow_folder
    from .snapshot import CODE_FOLDER, copy_snapshot, live_record
    from .tracking_calls import EMBEDDED, EXTERNAL

    experiment_id = _experiment(spec, connection, report)
    with contextlib.suppress(Exception):
        purge_logs(store)
    job_id = job_id or new_job_id()
    folder = private_folder(job_dir(store.data_dir, job_id))
    try:
        if spec_yaml is not None:
            (folder / "workload.yaml").write_text(spec_yaml, encoding="utf-8")
        working = spec.working_dir or os.getcwd()
        code = copy_snapshot(listing, folder / CODE_FOLDER) if listing else live_record(working)
        job = store.create_job(
            id=job_id,
            experiment_name=spec.experiment_name,
            experiment_id=experiment_id,
            run_name=spec.run_name,
            command=spec.command_text(),
            compute=spec.compute.model_dump(),
            gpus=[[g.index for g in node] for node in gpus],
            max_retries=spec.max_retries,
            timeout_minutes=spec.timeout_minutes,
            working_dir=spec.working_dir,
            # gpu_pool: the GPUs its attempts may get (local_queue.py)
            spec={**spec.model_dump(), "code": code.to_dict(), "gpu_pool": pool or []},
            spec_yaml=spec_yaml,
            spec_path=str(Path(spec_path).resolve()) if spec_path else None,
            source=source,
            notebook=notebook,
            user=user,
            tracking_uri=connection.tracking_uri,
            tracking=EMBEDDED if connection.embedded else EXTERNAL,
            backend=choice.backend,
            cluster=choice.address,
            server_url=connection.server_url,
            mlflow_ui=connection.mlflow_ui,
            idempotency_key=idempotency_key,
            schedule_id=schedule.id if schedule else None,
            schedule_name=schedule.name if schedule else None,
        )
    except BaseException:  # nothing half-created (another submission with the key was first)
        shutil.rmtree(folder, ignore_errors=True)
        raise
    env = _supervisor_environment(environ or os.environ, connection, store.data_dir)
    # a Ray job run goes to a supervisor made ready ahead when there is one (ray_standby.py)
    ready = None
    if job.backend == "ray":
        from .ray_standby import hand_over

        ready = hand_over(store.data_dir, job.id, env, working, job.cluster)
    if ready is not None:
        pid, started = ready
    else:
        try:
            pid = spawn_detached(
                [sys.executable, "-m", "jupyter_air.workloads.supervisor", job.id],
                log_file=folder / "supervisor.log",
                env=env,
                cwd=working,
            )
        except OSError as error:
            store.finish_job(job.id, FAILED, f"could not start the supervisor: {error}")
            raise
        started = start_time(pid)
    store.set_supervisor(job.id, pid, started)
    # a jupyter-air server (this data folder's, or the Jupyter server's of another data folder)
    # runs for as long as the job needs it
    held = connection.server_folder or (
        mlflow_folder(store.data_dir) if connection.embedded else None
    )
    if held is not None:
        Lease.take(ServerFiles(held), "supervisor", pid=pid)
    return store.get_job(job.id)


def _experiment(
    spec: WorkloadSpec, connection: Connection, report: Callable[[str], None] | None
) -> str:
    from ..tracking.experiments import get_or_create_experiment
    from ..tracking.links import is_loopback_http
    from ..tracking.readiness import starting_message, wait_for_tracking_server
    from ..tracking.rest import client_for

    if connection.token or connection.identity is not None:
        connection.activate()  # this process's MLflow client sends the token or the user's

    def said(elapsed: float, done: bool) -> None:
        if report is not None and is_loopback_http(connection.tracking_uri):
            report(starting_message(elapsed, done))

    # a local server still starting is waited for; a team server refusing the user's password
    # is said at once, in a sentence
    wait_for_tracking_server(
        connection.tracking_uri,
        report=said,
        token=connection.token,
        credentials=connection.credentials,
    )
    client = client_for(connection.tracking_uri)
    experiment = get_or_create_experiment(
        spec.experiment_name, artifact_location=spec.mlflow_artifact_location, client=client
    )
    return str(experiment.experiment_id)


def _supervisor_environment(
    environ: Mapping[str, str], connection: Connection, data: Path
) -> dict[str, str]:
    env = {
        k: v
        for k, v in environ.items()
        if k not in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME")
    }
    if connection.ours:  # jupyter-air's server answers its token: MLflow's client would send
        for name in IDENTITY_NAMES:  # a user's name and password instead
            env.pop(name, None)
    env.update(connection.environment())
    env["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
    env[DATA_DIR.name] = str(data)
    return env


# liveness -----------------------------------------------------------------------------------
def supervisor_alive(job: JobRun) -> bool:
    return is_running(job.supervisor_pid, job.supervisor_started)


def refresh(store: JobStore, job: JobRun) -> JobRun:
    """The job run, ended FAILED (or CANCELLED when asked) if its supervisor is gone; a
    cancellation its supervisor did not carry out in time is finished here. Looks at processes
    and signals them: for the CLI's commands and the Jupyter server's background task, never a
    read (``views`` tells a stale job run from its heartbeat)."""
    if job.status in TERMINAL:
        return job
    if job.supervisor_pid is None:
        if time.time() - job.submitted_at < START_GRACE_S:
            return job
        reason = "its supervisor never started (see supervisor.log in the job's folder)"
    elif supervisor_alive(job):
        return _cancel_if_overdue(store, job)
    else:
        reason = (
            f"its supervisor (pid {job.supervisor_pid}) stopped unexpectedly "
            "(machine restart, out of memory?)"
        )
    kill_job_processes(job.id, JOB_ID.name, grace_s=2.0)
    status = CANCELLED if job.cancel_requested else FAILED
    if status == CANCELLED:
        reason = "cancelled (air cancel); " + reason
    _end_open_attempts(store, job, status, reason)
    store.finish_job(job.id, status, reason)  # its MLflow runs are ended by reconcile
    return store.get_job(job.id)


def get_job(store: JobStore, job_id: str) -> JobRun:
    """A job run by id or unique prefix, its state checked (``refresh``)."""
    return refresh(store, store.get_job(store.resolve_id(job_id)))


def list_jobs(store: JobStore, **filters: Any) -> list[JobRun]:
    """``JobStore.list_jobs`` with the state of unfinished job runs checked."""
    return [refresh(store, job) for job in store.list_jobs(**filters)]


def check_active(store: JobStore, limit: int = 1000) -> list[JobRun]:
    """``refresh`` every active job run; returns the ones that ended by it."""
    ended = []
    for job in store.list_jobs(status=sorted(ACTIVE), limit=limit):
        checked = refresh(store, job)
        if checked.status in TERMINAL:
            ended.append(checked)
    return ended


# cancel -------------------------------------------------------------------------------------
def cancel_wait_s() -> float:
    """How long a supervisor may take to stop its job after SIGTERM before it is killed."""
    from .supervisor import kill_grace_s

    return kill_grace_s() + 30.0


def request_cancel(store: JobStore, job_id: str) -> JobRun:
    """Ask for a job run's cancellation (recorded, and SIGTERM to its supervisor) and return at
    once: the supervisor stops every node and ends the job run CANCELLED; ``refresh`` kills it
    and ends the job run itself when it has not after ``cancel_wait_s``. A job run that already
    ended is returned as it is."""
    job = store.request_cancel(store.resolve_id(job_id))
    if job.status not in TERMINAL and supervisor_alive(job):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(job.supervisor_pid or 0, signal.SIGTERM)
    return job


def cancel(store: JobStore, job_id: str, *, wait_s: float | None = None) -> JobRun:
    """Cancel a job run and wait until none of its processes is left (``request_cancel``, then
    up to ``wait_s``, by default ``cancel_wait_s``). A job run that already ended is returned as
    it is."""
    return wait_cancelled(store, request_cancel(store, job_id), wait_s=wait_s)


def cancel_many(
    store: JobStore, job_ids: list[str], *, wait_s: float | None = None
) -> list[JobRun]:
    """Cancel several job runs at once: every one asked first, then each waited for (as
    ``cancel``), so they stop side by side."""
    asked = [request_cancel(store, job_id) for job_id in job_ids]
    return [wait_cancelled(store, job, wait_s=wait_s) for job in asked]


def wait_cancelled(store: JobStore, job: JobRun, *, wait_s: float | None = None) -> JobRun:
    """After ``request_cancel``: wait until none of the job run's processes is left (up to
    ``wait_s``, by default ``cancel_wait_s``, then it is made sure of)."""
    if job.status in TERMINAL:
        return job
    wait_s = wait_s if wait_s is not None else cancel_wait_s()
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        job = store.get_job(job.id)
        if job.status in TERMINAL and not supervisor_alive(job):
            break
        if job.supervisor_pid is not None and not supervisor_alive(job):
            break
        time.sleep(0.1)
    return _stop_cancelled(store, store.get_job(job.id))


def _cancel_if_overdue(store: JobStore, job: JobRun) -> JobRun:
    """A job run whose supervisor, asked to cancel it, is still at it after ``cancel_wait_s``."""
    if job.cancel_requested is None or time.time() - job.cancel_requested < cancel_wait_s():
        return job
    return _stop_cancelled(store, job)


def _stop_cancelled(store: JobStore, job: JobRun) -> JobRun:
    """Make sure nothing of a cancelled job run is left, ending it ourselves if need be."""
    if supervisor_alive(job):  # it did not stop in time: stop it and end the job ourselves
        stop_process(job.supervisor_pid, job.supervisor_started, grace_s=0.0)
    kill_job_processes(job.id, JOB_ID.name, grace_s=2.0)
    job = store.get_job(job.id)
    if job.status not in TERMINAL:
        reason = "cancelled (air cancel); the supervisor did not stop in time and was killed"
        _end_open_attempts(store, job, CANCELLED, reason)
        store.finish_job(job.id, CANCELLED, reason)  # its MLflow runs are ended by reconcile
    return store.get_job(job.id)


def _end_open_attempts(store: JobStore, job: JobRun, status: str, reason: str) -> None:
    for attempt in job.attempts:
        if attempt.ended_at is None:
            store.finish_attempt(job.id, attempt.attempt, status, reason)
