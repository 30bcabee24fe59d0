"""The supervisor of one job run: ``python -m jupyter_air.workloads.supervisor <job id>``.

Started detached (its own session, no inherited stdio, output in ``<job folder>/supervisor.log``)
by the submission, it outlives the CLI or kernel that submitted the job. For each attempt — the
first, then each retry up to ``max_retries`` after a non-zero exit, a signal or a timeout — it
creates a new MLflow run in the experiment, starts every node (local backend), records system
metrics per node, captures the logs, uploads them to the run, and ends the run FINISHED, FAILED
or KILLED. The job run ends SUCCEEDED, FAILED or CANCELLED with the reason. SIGTERM (what
``air cancel`` sends) cancels: every node's process group gets SIGTERM, then SIGKILL after a grace
period. GPU sampling in the Jupyter server is held awake for the job's duration.
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
from dataclasses import dataclass
from typing import Any

from ..tracking.naming import TAG_ATTEMPT, TAG_JOB
from .paths import data_dir, log_path
from .store import CANCELLED, FAILED, SUCCEEDED, TERMINAL, JobRun, JobStore
from .tracking_calls import JobTracking, bound_mlflow_calls

log = logging.getLogger("jupyter_air.workloads.supervisor")

GRACE_ENV = "JUPYTER_AIR_KILL_GRACE_S"
DEFAULT_GRACE_S = 10.0
INDEX_EVERY_S = 2.0

TAG_ATTEMPTS = "jupyter_air.workload.max_attempts"


@dataclass
class Outcome:
    status: str  # SUCCEEDED | FAILED | CANCELLED
    reason: str
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False


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
        # what nodes start from: the supervisor's environment before its MLflow calls were
        # bounded (the command keeps MLflow's own retries)
        self.node_env = dict(node_env if node_env is not None else os.environ)
        self.tracking: JobTracking | None = None

    # signals ---------------------------------------------------------------------------------
    def install_signal_handlers(self) -> None:
        def on_signal(signum: int, frame: Any) -> None:
            self.cancel.set()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    def _check_cancel(self) -> bool:
        if not self.cancel.is_set() and self.store.cancel_requested(self.job_id):
            self.cancel.set()
        return self.cancel.is_set()

    # the job ---------------------------------------------------------------------------------
    def run(self) -> int:
        from ..pids import process_start_time as start_time
        from ..telemetry.hold_files import HoldFile

        job = self.store.get_job(self.job_id)
        if job.status in TERMINAL:
            log.info("job run %s already ended %s", self.job_id, job.status)
            return 0
        self.store.set_supervisor(self.job_id, os.getpid(), start_time(os.getpid()))
        if not self.store.mark_running(self.job_id) or self._check_cancel():
            self.store.finish_job(self.job_id, CANCELLED, "cancelled before it started")
            return 0
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
        return 0

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
        total = job.max_retries + 1
        last: Outcome | None = None
        for attempt in range(1, total + 1):
            if self._check_cancel():
                return Outcome(CANCELLED, self.cancel_reason)
            outcome = self._attempt(job, attempt, total)
            log.info("attempt %d of %d: %s (%s)", attempt, total, outcome.status, outcome.reason)
            if outcome.status == SUCCEEDED:
                if attempt == 1:
                    return Outcome(SUCCEEDED, "the command succeeded")
                return Outcome(SUCCEEDED, f"the command succeeded on attempt {attempt}")
            if outcome.status == CANCELLED:
                return outcome
            last = outcome
        assert last is not None
        tries = f"{total} attempt{'s' if total != 1 else ''}"
        return Outcome(FAILED, f"{last.reason} (failed {tries})", last.exit_code, last.signal)

    # one attempt -----------------------------------------------------------------------------
    def _attempt(self, job: JobRun, attempt: int, total: int) -> Outcome:
        from .local_backend import free_port

        assert self.tracking is not None
        try:
            run = self._start_run(job, attempt, total)
        except Exception as error:
            # the attempt runs all the same; its run is created when MLflow answers again
            log.error("MLflow run of attempt %d:\n%s", attempt, traceback.format_exc())
            self.tracking.failed(f"creating the run of attempt {attempt}", error)
            run = None
        self.store.start_attempt(job.id, attempt, mlflow_run_id=run.run_id if run else None)
        metrics = self._start_metrics(job, run) if run is not None else []
        port = free_port()
        outcome = Outcome(FAILED, "did not start")
        nodes: list[Any] = []
        writers: dict[int, Any] = {}
        uploader = None
        try:
            from .artifacts import LogUploader
            from .logfile import LogWriter

            for node in range(job.num_nodes):
                path = log_path(self.store.data_dir, job.id, attempt, node)
                writers[node] = LogWriter(path)
                self.store.index_log_file(job.id, attempt, node, str(path))
            if run is not None:
                uploader = LogUploader(
                    run.client,
                    run.run_id,
                    attempt,
                    {n: w.path for n, w in writers.items()},
                    lambda: {n: w.stats.bytes for n, w in writers.items()},
                ).start()
            nodes = self._start_nodes(job, attempt, run, port, writers)
            outcome = self._wait(job, nodes, writers, attempt)
        except Exception as error:
            log.error("attempt %d:\n%s", attempt, traceback.format_exc())
            outcome = Outcome(FAILED, f"could not run the command: {error}")
        finally:
            self._wind_down(job, attempt, nodes, writers, outcome)
            for monitor in metrics:
                self.tracking.call("system metrics", monitor.finish)
            if uploader is not None:
                uploader.finish()
                self._mark_uploaded(job.id, attempt, uploader, writers)
            if run is not None:
                run_status = {SUCCEEDED: "FINISHED", CANCELLED: "KILLED"}.get(
                    outcome.status, "FAILED"
                )
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
        return outcome

    def _mark_uploaded(
        self, job_id: str, attempt: int, uploader: Any, writers: dict[int, Any]
    ) -> None:
        """Log files whose last upload went through; the others are uploaded by reconcile."""
        for node, writer in writers.items():
            if uploader.uploaded.get(node) == writer.stats.bytes and writer.path.exists():
                self.store.index_log_file(
                    job_id, attempt, node, str(writer.path), uploaded_at=time.time()
                )
        if uploader.last_error:
            assert self.tracking is not None
            self.tracking.failed(
                f"uploading the logs of attempt {attempt}", RuntimeError(uploader.last_error)
            )

    def _start_run(self, job: JobRun, attempt: int, total: int) -> Any:
        from ..tracking.runs import ManagedRun

        source = job.spec_path or ("%%air_run" if job.source == "magic" else "air run")
        tags = {
            TAG_JOB: job.id,
            TAG_ATTEMPT: str(attempt),
            TAG_ATTEMPTS: str(total),
            "mlflow.source.type": "JOB",
        }
        tags["mlflow.source.name"] = job.notebook or source
        if job.user:
            tags["mlflow.user"] = job.user
        return ManagedRun.start(
            "workload",
            run_name=job.run_name,
            tags=tags,
            experiment=job.experiment_name,
            artifact_location=job.spec.get("mlflow_artifact_location"),
            resume_from_env=False,
            nested=False,
            system_metrics=False,
            tracking_uri=self.tracking.uri if self.tracking else job.tracking_uri,
            wait_timeout_s=60.0,  # the embedded server may be starting
        )

    def _start_metrics(self, job: JobRun, run: Any) -> list[Any]:
        from ..tracking.system_metrics import TAG_SYSTEM_METRICS, start_system_metrics
        from .capacity import Gpu, cuda_visible_devices

        interval = os.environ.get("JUPYTER_AIR_SYSTEM_METRICS_INTERVAL_S")
        monitors = []
        for node in range(job.num_nodes):
            gpus = job.gpus[node] if node < len(job.gpus) else []
            visible = cuda_visible_devices([Gpu(i, "") for i in gpus])
            node_id = f"node_{node}"
            try:
                monitor = start_system_metrics(
                    run.run_id,
                    node_id=node_id,
                    sampling_interval_s=float(interval) if interval else None,
                    tracking_uri=run.tracking_uri,
                    visible_gpus=visible,
                )
                monitors.append(monitor)
                assert self.tracking is not None
                self.tracking.call(
                    "tagging the run",
                    run.client.set_tag,
                    run.run_id,
                    f"{TAG_SYSTEM_METRICS}.{node_id}",
                    monitor.summary,
                )
            except Exception as error:
                log.warning("system metrics of %s are off: %s", node_id, error)
        return monitors

    def _start_nodes(
        self, job: JobRun, attempt: int, run: Any, port: int, writers: dict[int, Any]
    ) -> list[Any]:
        from .capacity import Gpu, cuda_visible_devices
        from .local_backend import argv_for, node_environment, start_node
        from .processes import JOB_ENV

        spec = job.spec
        argv = argv_for(spec["command"])
        nodes = []
        for node in range(job.num_nodes):
            gpus = job.gpus[node] if node < len(job.gpus) else []
            visible = cuda_visible_devices([Gpu(i, "") for i in gpus])
            assert self.tracking is not None
            env = node_environment(
                self.node_env,
                node=node,
                num_nodes=job.num_nodes,
                master_port=port,
                user_env=spec.get("env_variables") or {},
                owned={
                    **self.tracking.env(),
                    **(run.env() if run is not None else {}),
                    JOB_ENV: job.id,
                    "JUPYTER_AIR_ATTEMPT": str(attempt),
                },
                cuda_visible_devices=visible,
                uses_gpus=job.compute.get("accelerator_type", "GPU") != "CPU",
            )
            handle = start_node(
                node, argv, env=env, cwd=job.working_dir or os.getcwd(), writer=writers[node]
            )
            nodes.append(handle)
            self.store.set_node(
                job.id, attempt, node, pid=handle.pid, started=handle.started, gpus=visible
            )
            log.info("attempt %d node %d: pid %d, GPUs %r", attempt, node, handle.pid, visible)
        return nodes

    def _wait(
        self, job: JobRun, nodes: list[Any], writers: dict[int, Any], attempt: int
    ) -> Outcome:
        from .local_backend import stop_nodes

        deadline = None
        if job.timeout_minutes:
            deadline = time.monotonic() + job.timeout_minutes * 60
        next_index = time.monotonic() + INDEX_EVERY_S
        while True:
            codes = [n.poll() for n in nodes]
            failed = [(n, c) for n, c in zip(nodes, codes, strict=True) if c not in (None, 0)]
            if failed:
                node, code = failed[0]
                outcome = _failure(node.node, code)
                if any(c is None for c in codes):
                    stop_nodes([n for n in nodes if n.poll() is None], self.grace_s)
                return outcome
            if all(c == 0 for c in codes):
                return Outcome(SUCCEEDED, "exit code 0", exit_code=0)
            if self.cancel.wait(0.1) or self._check_cancel_every(1.0):
                stop_nodes(nodes, self.grace_s)
                return Outcome(CANCELLED, self.cancel_reason)
            if deadline is not None and time.monotonic() > deadline:
                stop_nodes(nodes, self.grace_s)
                minutes = f"{job.timeout_minutes:g}"
                return Outcome(
                    FAILED, f"timed out after {minutes} min (timeout_minutes)", timed_out=True
                )
            if time.monotonic() > next_index:
                self._index(job.id, attempt, writers, complete=False)
                next_index = time.monotonic() + INDEX_EVERY_S

    _last_cancel_check = 0.0

    def _check_cancel_every(self, seconds: float) -> bool:
        now = time.monotonic()
        if now - self._last_cancel_check < seconds:
            return False
        self._last_cancel_check = now
        return self._check_cancel()

    def _wind_down(
        self,
        job: JobRun,
        attempt: int,
        nodes: list[Any],
        writers: dict[int, Any],
        outcome: Outcome,
    ) -> None:
        """After the nodes' main processes ended: stop what they left behind, let the captures
        read to the end, close and index the log files."""
        from .local_backend import stop_nodes
        from .processes import kill_job_processes, signal_group

        running = [n for n in nodes if n.poll() is None]
        if running:  # the attempt ended by an error of ours: stop them properly
            stop_nodes(running, self.grace_s)
        for node in nodes:
            signal_group(node.pid, signal.SIGKILL)  # leftovers in the node's process group
        for node in nodes:
            for capture in node.captures:
                if not capture.join(timeout=10):
                    log.warning("node %d: output still open after the end", node.node)
        kill_job_processes(self.job_id, grace_s=1.0)  # anything that left its group
        for node in nodes:
            code = node.poll()
            self.store.finish_node(
                job.id,
                attempt,
                node.node,
                code if code is None or code >= 0 else None,
                -code if code is not None and code < 0 else None,
            )
        for writer in writers.values():
            writer.close()
        self._index(job.id, attempt, writers, complete=True)

    def _index(self, job_id: str, attempt: int, writers: dict[int, Any], *, complete: bool) -> None:
        for node, writer in writers.items():
            stats = writer.stats
            self.store.index_log_file(
                job_id,
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


def _failure(node: int, code: int) -> Outcome:
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        return Outcome(FAILED, f"node {node} was killed by {name}", signal=-code)
    return Outcome(FAILED, f"node {node} exited with code {code}", exit_code=code)


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
