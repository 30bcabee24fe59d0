"""The supervisor of one job run: ``python -m jupyter_air.workloads.supervisor <job id>``.

Started detached (its own session, no inherited stdio, output in ``<job
folder>/supervisor.log``) by the submission, it outlives the CLI or kernel that submitted the
job. Its attempts run through the supervision core (``backends.supervision``) on the job's
backend — every node on this machine, or each on its own Ray node. For each attempt — the first,
then each retry up to ``max_retries`` after a non-zero exit, a signal, a lost node or a timeout
— it creates a new MLflow run in the experiment, starts every node, records system metrics per
node (sampled on the node), keeps the logs (on the Jupyter host, whatever ran them), uploads
them to the run, and ends the run FINISHED, FAILED or KILLED. The job run ends SUCCEEDED, FAILED
or CANCELLED with the reason. SIGTERM (what ``air cancel`` sends) cancels: every node's process
group gets SIGTERM, then SIGKILL after a grace period. GPU sampling in the Jupyter server is
held awake for the job's duration.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Mapping
from typing import Any

from ..backends.base import Backend, Waiter
from ..backends.supervision import CANCELLED, FAILED, GroupSupervisor, Outcome
from ..config import KILL_GRACE_S, data_dir
from ..disk import DiskWatch, no_space
from ..tracking.naming import TAG_ATTEMPT, TAG_ATTEMPTS, TAG_JOB
from .attempts import JobAttempts
from .heartbeat import Heartbeat
from .local_queue import LocalQueue
from .paths import job_dir
from .reconcile import reconcile
from .store import TERMINAL, JobRun, JobStore
from .tracking_calls import JobTracking, bound_mlflow_calls

log = logging.getLogger("jupyter_air.workloads.supervisor")


__all__ = [
    "TAG_ATTEMPT",
    "TAG_ATTEMPTS",
    "TAG_JOB",
    "Outcome",
    "Supervisor",
    "kill_grace_s",
    "main",
]


def kill_grace_s() -> float:
    return KILL_GRACE_S.get()


class Supervisor:
    def __init__(
        self,
        store: JobStore,
        job_id: str,
        *,
        node_env: Mapping[str, str] | None = None,
        backend: Backend | None = None,
    ) -> None:
        self.store = store
        self.backend = backend  # made ready ahead (a standby's, ray_standby.py), else made here
        self.job_id = job_id
        self.cancel = threading.Event()
        self.cancel_reason = "cancelled (air cancel)"
        self.grace_s = kill_grace_s()
        # what nodes on this machine start from: the supervisor's environment before its MLflow
        # calls were bounded (the command keeps MLflow's own retries)
        self.node_env = dict(node_env if node_env is not None else os.environ)
        self.tracking: JobTracking | None = None
        self.core: GroupSupervisor | None = None
        self.disk = DiskWatch(job_dir(store.data_dir, job_id), shown=store.data_dir)

    # signals ---------------------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        def on_signal(signum: int, frame: Any) -> None:
            self.cancel.set()
            if self.core is not None:
                self.core.wake.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    _last_cancel_check = 0.0

    def _check_cancel(self, every_s: float = 0.0) -> bool:
        """Cancelled by a signal, or asked in the job store (looked at every ``every_s``)."""
        if self.cancel.is_set():
            return True
        now = time.monotonic()
        if now - self._last_cancel_check >= every_s:
            self._last_cancel_check = now
            asked = self.disk.tolerate("a cancel", self.store.cancel_requested, self.job_id)
            if asked:
                self.cancel.set()
        return self.cancel.is_set()

    # the job ---------------------------------------------------------------------------------
    def run(self) -> int:
        from ..pids import process_start_time

        job = self.store.get_job(self.job_id)
        if job.status in TERMINAL:
            log.info("job run %s already ended %s", self.job_id, job.status)
            return 0
        self.store.set_supervisor(self.job_id, os.getpid(), process_start_time(os.getpid()))
        if not self.store.mark_running(self.job_id) or self._check_cancel():
            self.store.finish_job(self.job_id, CANCELLED, "cancelled before it started")
            return 0
        heartbeat = Heartbeat(self.store, self.job_id).start()
        try:
            self._run_job(job)
        finally:
            heartbeat.stop()
            self.disk.close()
        return 0

    def _run_job(self, job: JobRun) -> None:
        from ..telemetry.hold_files import HoldFile

        hold = HoldFile.create(f"workload {self.job_id}", data_dir=self.store.data_dir)
        self.tracking = JobTracking(self.store, job)
        try:
            self.tracking.start()
        except Exception as error:
            self.tracking.failed("joining jupyter-air's MLflow server", error)
        try:
            outcome = self._attempts(self.store.get_job(self.job_id))
        except BaseException as error:
            log.error("supervisor error:\n%s", traceback.format_exc())
            outcome = Outcome(FAILED, f"jupyter-air supervisor error: {error}")
            if no_space(error, self.store.data_dir):
                outcome = Outcome(FAILED, self.disk.saw())
        finally:
            hold.release()
        disk = self.disk
        disk.until_written(
            "recording the job's end",
            self.store.finish_job,
            self.job_id,
            outcome.status,
            outcome.reason,
        )
        if disk.reason is not None and disk.reason not in outcome.reason:
            when = time.strftime("%H:%M:%S", time.localtime(disk.since))
            note = f"{disk.reason} from {when}: what the job printed waited in memory for room"
            disk.tolerate("a warning", self.store.add_warning, self.job_id, note)
        log.info("job run %s %s: %s", self.job_id, outcome.status, outcome.reason)
        self._close_runs()

    def _close_runs(self) -> None:
        """What MLflow did not get during the job (runs left RUNNING, logs), now if it answers;
        else later, by the Jupyter server or ``air get run``. The job itself has ended."""
        try:
            report = reconcile(self.store, [self.job_id], budget_s=10.0)
            if report.failed:
                log.warning("MLflow runs left to close later: %s", report)
        except Exception:
            log.warning("closing the MLflow runs failed:\n%s", traceback.format_exc())
        finally:
            if self.tracking is not None:
                self.tracking.finish()

    def _attempts(self, job: JobRun) -> Outcome:
        from ..backends.choice import backend_for

        assert self.tracking is not None
        backend = self.backend or backend_for(job.backend, job.cluster, environ=self.node_env)
        attempts = JobAttempts(self, job, self.tracking)
        queue = getattr(backend, "wait_for_room", None) or LocalQueue(self.store, job).wait
        self.core = GroupSupervisor(
            backend,
            attempts,
            max_restarts=job.max_retries,
            grace_s=self.grace_s,
            cancelled=lambda: self._check_cancel(every_s=1.0),
            cancel_reason=lambda: self.cancel_reason,
            timeout_s=job.timeout_minutes * 60 if job.timeout_minutes else None,
            failing=attempts.failing,
            wait_for_room=lambda attempt: queue(self._waiter(job, attempt)),
        )
        return self.core.run()

    # the cluster's queue -----------------------------------------------------------------------
    def _waiter(self, job: JobRun, attempt: int) -> Waiter:
        """How attempt ``attempt`` waits in its cluster's queue (a backend that has one)."""
        compute = job.compute
        uses_gpus = compute.get("accelerator_type", "GPU") != "CPU"
        minutes = job.spec.get("queue_timeout_minutes")
        return Waiter(
            job_id=job.id,
            attempt=attempt,
            since=job.submitted_at,
            user=job.user or "",
            nodes=job.num_nodes,
            accelerators=int(compute.get("num_accelerators", 1)) if uses_gpus else 0,
            queued=self._queued,
            placed=self._placed,
            cancelled=lambda: self._check_cancel(every_s=1.0),
            pause=self.cancel.wait,
            timeout_s=float(minutes) * 60 if minutes else None,
        )

    def _queued(self, place: dict[str, Any]) -> None:
        log.info("queued: %s", place["reason"])
        self.disk.tolerate("the place in the queue", self.store.mark_queued, self.job_id, place)

    def _placed(self) -> None:
        log.info("out of the queue: the resources are held")
        self.disk.until_written("leaving the queue", self.store.mark_dequeued, self.job_id)


def main(argv: list[str] | None = None) -> int:
    from ..backends.ray_import import without_slow_optional_imports

    without_slow_optional_imports()
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_air.workloads.supervisor",
        description="Run one job run's attempts (started by `air run` / %%air_run).",
    )
    parser.add_argument("job_id")
    parser.add_argument("--data-dir", default=None)
    args = parser.parse_args(argv)
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    spawned = dict(os.environ)  # as the submission started it: a standby's too (below)
    node_env = bound_mlflow_calls()
    store = JobStore.for_data_dir(data_dir(args.data_dir))
    return serve(store, args.job_id, node_env, spawned=spawned)


def serve(
    store: JobStore,
    job_id: str,
    node_env: Mapping[str, str],
    *,
    spawned: Mapping[str, str],
    backend: Backend | None = None,
) -> int:
    """Job run ``job_id`` run to its end by this process (``backend``: one made ready ahead).
    A Ray job run's supervisor then leaves a standby for the next one (ray_standby.py), in the
    environment it was started with (``spawned``)."""
    supervisor = Supervisor(store, job_id, node_env=node_env, backend=backend)
    supervisor.install_signal_handlers()
    try:
        return supervisor.run()
    except Exception:
        log.error("supervisor failed:\n%s", traceback.format_exc())
        job = store.get_job(job_id)
        if job.status not in TERMINAL:
            store.finish_job(job_id, FAILED, "jupyter-air supervisor error (supervisor.log)")
        return 1
    finally:
        _leave_standby(store, job_id, spawned)


def _leave_standby(store: JobStore, job_id: str, spawned: Mapping[str, str]) -> None:
    try:
        job = store.get_job(job_id)
        if job.backend == "ray":
            from ..mlflow_server.records import mlflow_folder
            from .ray_standby import start_standby
            from .tracking_calls import EMBEDDED

            held = mlflow_folder(store.data_dir) if job.tracking == EMBEDDED else None
            start_standby(store.data_dir, spawned, job.cluster, os.getcwd(), mlflow=held)
    except Exception:
        log.warning("no standby supervisor left:\n%s", traceback.format_exc())


if __name__ == "__main__":
    sys.exit(main())
