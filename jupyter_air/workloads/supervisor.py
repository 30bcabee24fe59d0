"""The supervisor of one job run: ``python -m jupyter_air.workloads.supervisor <job id>``.

Started detached (its own session, no inherited stdio, output in ``<job folder>/supervisor.log``)
by the submission, it outlives the CLI or kernel that submitted the job. Its attempts run through
the supervision core (``backends.agent``) on the job's backend — every node on this machine, or
each on its own Ray node. For each attempt — the first, then each retry up to ``max_retries``
after a non-zero exit, a signal, a lost node or a timeout — it creates a new MLflow run in the
experiment, starts every node, records system metrics per node (sampled on the node), keeps the
logs (on the Jupyter host, whatever ran them), uploads them to the run, and ends the run FINISHED,
FAILED or KILLED. The job run ends SUCCEEDED, FAILED or CANCELLED with the reason. SIGTERM (what
``air cancel`` sends) cancels: every node's process group gets SIGTERM, then SIGKILL after a
grace period. GPU sampling in the Jupyter server is held awake for the job's duration.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..api.enums import run_status_of
from ..backends.agent import CANCELLED, FAILED, GroupAgent, Outcome
from ..backends.base import GroupLaunch, Metrics, NodeGroup, NodeLaunch, argv_for
from ..tracking.naming import TAG_ATTEMPT, TAG_JOB
from .heartbeat import Heartbeat
from .paths import data_dir, log_path
from .snapshot import (
    CODE_FOLDER,
    WORKING_DIR_ENV,
    CodeRecord,
    artifact_folder,
    artifact_sized,
    attempt_cwd,
    run_tags,
)
from .store import TERMINAL, JobRun, JobStore
from .tracking_calls import JobTracking, bound_mlflow_calls

log = logging.getLogger("jupyter_air.workloads.supervisor")

GRACE_ENV = "JUPYTER_AIR_KILL_GRACE_S"
DEFAULT_GRACE_S = 10.0

TAG_ATTEMPTS = "jupyter_air.workload.max_attempts"
TAG_BACKEND = "jupyter_air.workload.backend"
TAG_SCHEDULE_ID = "jupyter_air.schedule_id"
TAG_SCHEDULE = "jupyter_air.schedule"

__all__ = ["Outcome", "Supervisor", "kill_grace_s", "main"]


def kill_grace_s() -> float:
    try:
        return max(0.0, float(os.environ.get(GRACE_ENV, DEFAULT_GRACE_S)))
    except ValueError:
        return DEFAULT_GRACE_S


class Supervisor:
    def __init__(
        self, store: JobStore, job_id: str, *, node_env: Mapping[str, str] | None = None
    ) -> None:
        self.store = store
        self.job_id = job_id
        self.cancel = threading.Event()
        self.cancel_reason = "cancelled (air cancel)"
        self.grace_s = kill_grace_s()
        # what nodes on this machine start from: the supervisor's environment before its MLflow
        # calls were bounded (the command keeps MLflow's own retries)
        self.node_env = dict(node_env if node_env is not None else os.environ)
        self.tracking: JobTracking | None = None
        self.agent: GroupAgent | None = None

    # signals ---------------------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        def on_signal(signum: int, frame: Any) -> None:
            self.cancel.set()
            if self.agent is not None:
                self.agent.wake.set()

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
            if self.store.cancel_requested(self.job_id):
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
        finally:
            hold.release()
        self.store.finish_job(self.job_id, outcome.status, outcome.reason)
        log.info("job run %s %s: %s", self.job_id, outcome.status, outcome.reason)
        self._close_runs()

    def _close_runs(self) -> None:
        """What MLflow did not get during the job (runs left RUNNING, logs), now if it answers;
        else later, by the Jupyter server or ``air get run``. The job itself has ended."""
        from .reconcile import reconcile

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
        backend = backend_for(job.backend, job.cluster, environ=self.node_env)
        self.agent = GroupAgent(
            backend,
            JobAttempts(self, job, self.tracking),
            max_restarts=job.max_retries,
            grace_s=self.grace_s,
            cancelled=lambda: self._check_cancel(every_s=1.0),
            cancel_reason=lambda: self.cancel_reason,
            timeout_s=job.timeout_minutes * 60 if job.timeout_minutes else None,
        )
        return self.agent.run()


class JobAttempts:
    """What an attempt of a job run is beyond its processes: its MLflow run, its log files and
    their index, its row in the job store (the supervision core calls these)."""

    def __init__(self, supervisor: Supervisor, job: JobRun, tracking: JobTracking) -> None:
        self.supervisor = supervisor
        self.store = supervisor.store
        self.job = job
        self.tracking = tracking
        self.total = job.max_retries + 1
        self.run: Any = None
        self.writers: dict[int, Any] = {}
        self.uploader: Any = None

    # before ----------------------------------------------------------------------------------
    def prepare(self, attempt: int) -> GroupLaunch:
        from .logfile import LogWriter
        from .processes import JOB_ENV

        job = self.job
        try:
            self.run = self._start_run(attempt)
        except Exception as error:
            # the attempt runs all the same; its run is created when MLflow answers again
            log.error("MLflow run of attempt %d:\n%s", attempt, traceback.format_exc())
            self.tracking.failed(f"creating the run of attempt {attempt}", error)
            self.run = None
        run = self.run
        self.store.start_attempt(job.id, attempt, mlflow_run_id=run.run_id if run else None)
        self.store.update_attempt(job.id, attempt, backend=job.backend or "local")
        self.writers = {}
        for node in range(job.num_nodes):
            path = log_path(self.store.data_dir, job.id, attempt, node)
            self.writers[node] = LogWriter(path)
            self.store.index_log_file(job.id, attempt, node, str(path))
        if run is not None:
            from .artifacts import LogUploader

            self._log_code(run)

            writers = self.writers
            self.uploader = LogUploader(
                run.client,
                run.run_id,
                attempt,
                {n: w.path for n, w in writers.items()},
                lambda: {n: w.stats.bytes for n, w in writers.items()},
            ).start()
        spec = job.spec
        owned = {
            **(spec.get("env_variables") or {}),
            **self.tracking.env(),
            **(run.env() if run is not None else {}),
            JOB_ENV: job.id,
            "JUPYTER_AIR_ATTEMPT": str(attempt),
            WORKING_DIR_ENV: job.working_dir or "",  # the folder submitted (not the snapshot)
        }
        argv = argv_for(spec["command"])
        cwd = attempt_cwd(job.working_dir, CodeRecord.from_dict(spec.get("code")))
        files, folders = self._call_files(attempt)
        nodes = [
            NodeLaunch(
                node=node,
                argv=argv,
                env=owned,
                cwd=cwd,
                writer=self.writers[node],
                gpus=tuple(job.gpus[node]) if node < len(job.gpus) else (),
                files=files,
                folder=folders[node] if folders else None,
            )
            for node in range(job.num_nodes)
        ]
        compute = job.compute
        uses_gpus = compute.get("accelerator_type", "GPU") != "CPU"
        return GroupLaunch(
            job_id=job.id,
            attempt=attempt,
            nodes=nodes,
            accelerators=int(compute.get("num_accelerators", 1)) if uses_gpus else 0,
            accelerator_type=str(compute.get("accelerator_type", "GPU")),
            grace_s=self.supervisor.grace_s,
        )

    def _log_code(self, run: Any) -> None:
        """The snapshot as the run's artifact ``code/``, when it is small (else its path is a
        tag of the run, ``run_tags``)."""
        code = CodeRecord.from_dict(self.job.spec.get("code"))
        if code is None or not code.path or not artifact_sized(code):
            return
        beside = Path(code.path).parent  # hard links need the same filesystem
        with tempfile.TemporaryDirectory(prefix=".code-artifact-", dir=beside) as tmp:
            folder = str(artifact_folder(code.path, Path(tmp)))
            self.tracking.call(
                "logging the code", run.client.log_artifacts, run.run_id, folder, CODE_FOLDER
            )

    def _call_files(self, attempt: int) -> tuple[dict[str, bytes], list[str]]:
        """A ``.distributed(remote=True)`` job: the call every node gets, and each node's run
        folder for this attempt (see workloads/calls.py); nothing for other jobs."""
        from . import calls

        job = self.job
        if job.source != calls.SOURCE:
            return {}, []
        data = self.store.data_dir
        source = calls.call_dir(data, job.id)
        files = {name: (source / name).read_bytes() for name in calls.CALL_FILES}
        folders = [str(calls.node_dir(data, job.id, attempt, n)) for n in range(job.num_nodes)]
        return files, folders

    def _call_function(self) -> str | None:
        """The function of a ``.distributed(remote=True)`` job."""
        import json

        from . import calls

        if self.job.source != calls.SOURCE:
            return None
        try:
            path = calls.call_dir(self.store.data_dir, self.job.id) / "call.json"
            return str(json.loads(path.read_text())["function"])
        except (OSError, ValueError, KeyError):
            return None

    def _start_run(self, attempt: int) -> Any:
        from ..tracking.runs import ManagedRun

        job = self.job
        source = job.spec_path or ("%%air_run" if job.source == "magic" else "air run")
        tags = {
            TAG_JOB: job.id,
            TAG_ATTEMPT: str(attempt),
            TAG_ATTEMPTS: str(self.total),
            TAG_BACKEND: job.backend or "local",
            "mlflow.source.type": "JOB",
        }
        tags["mlflow.source.name"] = job.notebook or source
        tags.update(run_tags(CodeRecord.from_dict(job.spec.get("code"))))
        function = self._call_function()
        if function:
            tags["jupyter_air.function"] = function
        if job.user:
            tags["mlflow.user"] = job.user
        if job.schedule_id:
            tags[TAG_SCHEDULE_ID] = job.schedule_id
            tags[TAG_SCHEDULE] = job.schedule_name or ""
        return ManagedRun.start(
            "workload",
            run_name=job.run_name,
            tags=tags,
            experiment=job.experiment_name,
            artifact_location=job.spec.get("mlflow_artifact_location"),
            resume_from_env=False,
            nested=False,
            system_metrics=False,
            tracking_uri=self.tracking.uri or job.tracking_uri,
            wait_timeout_s=60.0,  # the embedded server may be starting
        )

    # while -----------------------------------------------------------------------------------
    def started(self, attempt: int, group: NodeGroup) -> None:
        job = self.job
        for info in group.nodes:
            self.store.set_node(
                job.id,
                attempt,
                info.node,
                pid=info.pid,
                started=info.started,
                gpus=info.gpus,
                host=info.host,
                machine=info.machine,
            )
            log.info(
                "attempt %d node %d: %s pid %s, GPUs %r",
                attempt, info.node, info.host, info.pid, info.gpus,
            )  # fmt: skip
        self.store.update_attempt(
            job.id, attempt, hosts=",".join(info.host for info in group.nodes)
        )
        if self.run is not None:
            self._start_metrics(group)

    def _start_metrics(self, group: NodeGroup) -> None:
        from ..tracking.system_metrics import TAG_SYSTEM_METRICS

        run = self.run
        interval = os.environ.get("JUPYTER_AIR_SYSTEM_METRICS_INTERVAL_S")
        metrics = Metrics(
            run_id=run.run_id,
            tracking_env=self.tracking.env(),
            interval_s=float(interval) if interval else None,
        )
        try:
            group.start_metrics(metrics)
        except Exception as error:
            log.warning("system metrics are off: %s", error)
        for node, summary in metrics.summaries.items():
            self.tracking.call(
                "tagging the run",
                run.client.set_tag,
                run.run_id,
                f"{TAG_SYSTEM_METRICS}.node_{node}",
                summary,
            )

    def tick(self, attempt: int, group: NodeGroup) -> None:
        self._index(attempt, complete=False)

    # after -----------------------------------------------------------------------------------
    def ended(self, attempt: int, group: NodeGroup | None, outcome: Outcome) -> None:
        job = self.job
        if group is not None:
            for state in _final_states(group):
                self.store.finish_node(job.id, attempt, state.node, state.exit_code, state.signal)
            self.tracking.call("system metrics", group.finish_metrics)
        for writer in self.writers.values():
            writer.close()
        self._index(attempt, complete=True)
        if self.uploader is not None:
            self.uploader.finish()
            self._mark_uploaded(attempt)
            self.uploader = None
        run = self.run
        if run is not None:
            run_status = run_status_of(outcome.status).value
            self.tracking.call(f"ending the run of attempt {attempt}", run.end, run_status)
        self.store.finish_attempt(
            job.id,
            attempt,
            outcome.status,
            outcome.reason,
            exit_code=outcome.exit_code,
            signal=outcome.signal,
            timed_out=outcome.timed_out,
        )

    def _mark_uploaded(self, attempt: int) -> None:
        """Log files whose last upload went through; the others are uploaded by reconcile."""
        uploader = self.uploader
        for node, writer in self.writers.items():
            if uploader.uploaded.get(node) == writer.stats.bytes and writer.path.exists():
                self.store.index_log_file(
                    self.job.id, attempt, node, str(writer.path), uploaded_at=time.time()
                )
        if uploader.last_error:
            self.tracking.failed(
                f"uploading the logs of attempt {attempt}", RuntimeError(uploader.last_error)
            )

    def _index(self, attempt: int, *, complete: bool) -> None:
        for node, writer in self.writers.items():
            stats = writer.stats
            self.store.index_log_file(
                self.job.id,
                attempt,
                node,
                str(writer.path),
                bytes=stats.bytes,
                lines=stats.lines,
                errors=stats.errors,
                warnings=stats.warnings,
                first_t=stats.first_t,
                last_t=stats.last_t,
                complete=int(complete),
            )


def _final_states(group: NodeGroup) -> list[Any]:
    try:
        return group.poll()
    except Exception:
        return []


def main(argv: list[str] | None = None) -> int:
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
    node_env = bound_mlflow_calls()
    store = JobStore.for_data_dir(data_dir(args.data_dir))
    supervisor = Supervisor(store, args.job_id, node_env=node_env)
    supervisor.install_signal_handlers()
    try:
        return supervisor.run()
    except Exception:
        log.error("supervisor failed:\n%s", traceback.format_exc())
        job = store.get_job(args.job_id)
        if job.status not in TERMINAL:
            store.finish_job(args.job_id, FAILED, "jupyter-air supervisor error (supervisor.log)")
        return 1


if __name__ == "__main__":
    sys.exit(main())
