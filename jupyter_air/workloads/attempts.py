"""What an attempt of a job run is beyond its processes: its MLflow run (tags, code artifact,
system metrics, the reason it ended), its log files and their index, its rows in the job store.
The supervision core (``backends.supervision``) calls these hooks; the supervisor
(``supervisor.py``) owns the job run around them. Records written while the disk is full wait
for room (``disk.DiskWatch``): an attempt's end is never dropped for want of space.
"""

from __future__ import annotations

import logging
import tempfile
import time
import traceback
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api.enums import run_status_of
from ..backends.base import GroupLaunch, Metrics, NodeGroup, NodeLaunch, argv_for
from ..backends.supervision import Outcome
from ..config import ATTEMPT, CHECKPOINT_DIR, JOB_ID, SYSTEM_METRICS_INTERVAL_S
from ..tracking.naming import TAG_ATTEMPT, TAG_ATTEMPTS, TAG_JOB, TAG_REASON, TAG_RESTARTS
from .checkpoints import CheckpointSync, Home, LocalFolder, NodeFolder, count_restarts
from .paths import checkpoint_home, checkpoint_node_dir, log_path
from .snapshot import (
    CODE_FOLDER,
    SNAPSHOT,
    WORKING_DIR_ENV,
    CodeRecord,
    artifact_folder,
    artifact_sized,
    attempt_cwd,
    run_tags,
)
from .store import JobRun
from .tracking_calls import JobTracking

if TYPE_CHECKING:
    from .supervisor import Supervisor

log = logging.getLogger("jupyter_air.workloads.supervisor")

TAG_BACKEND = "jupyter_air.workload.backend"
TAG_SCHEDULE_ID = "jupyter_air.schedule_id"
TAG_SCHEDULE = "jupyter_air.schedule"
MAX_REASON_TAG = 5000  # MLflow's limit for a tag's value is larger; a reason is a sentence
TAG_DESCRIPTION = "mlflow.note.content"  # the run page's description (Markdown)
TAG_RESUMED_FROM = "jupyter_air.resumed_from_attempt"
TAG_RESUMED_RUN = "jupyter_air.resumed_from_run"
TAG_CHECKPOINT = "jupyter_air.checkpoint"


def logs_note(job: JobRun, attempt: int) -> str:
    """The run's description: where its logs are, so that any MLflow UI (a team's own server
    too) leads to them."""
    from .connection import Connection

    command = f"`air logs {job.id} --attempt {attempt}`"
    link = Connection(tracking_uri="", server_url=job.server_url).job_link(job.id)
    where = f"[in JupyterLab]({link}) or with {command}" if link else f"with {command}"
    return f"Logs of this attempt (job run {job.id}): {where}."


class JobAttempts:
    """What an attempt of a job run is beyond its processes: its MLflow run, its log files and
    their index, its row in the job store (the supervision core calls these)."""

    def __init__(self, supervisor: Supervisor, job: JobRun, tracking: JobTracking) -> None:
        self.supervisor = supervisor
        self.store = supervisor.store
        self.disk = supervisor.disk
        self.out_of_space: str | None = None  # why the job run stopped: a full disk
        self.job = job
        self.tracking = tracking
        self.total = job.max_retries + 1
        self.run: Any = None
        self.writers: dict[int, Any] = {}
        self.uploader: Any = None
        location = job.spec.get("checkpoint_location")
        home = location or str(checkpoint_home(self.store.data_dir, job.id))
        self.checkpoints = CheckpointSync(Home(home))
        self.checkpoint: dict[str, Any] = {}  # this attempt's: restored, saved, restarts

    # before ----------------------------------------------------------------------------------
    def prepare(self, attempt: int) -> GroupLaunch:
        from ..logs.logfile import LogWriter

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
        restarts = int(spec.get("max_restarts") or 0)
        owned = {
            **({"PET_MAX_RESTARTS": str(restarts)} if restarts else {}),
            **(spec.get("env_variables") or {}),
            **self.tracking.env(),
            **(run.env() if run is not None else {}),
            JOB_ID.name: job.id,
            ATTEMPT.name: str(attempt),
            WORKING_DIR_ENV: job.working_dir or "",  # the folder submitted (not the snapshot)
        }
        argv = argv_for(spec["command"])
        code = CodeRecord.from_dict(spec.get("code"))
        cwd = attempt_cwd(job.working_dir, code)
        files, folders = self._call_files(attempt)
        # on Ray each node's folder is on its node (its host may share no disk with this one):
        # the backend makes them and hands them to ``_restore`` before the commands start
        on_ray = job.backend == "ray"
        checkpoints = {} if on_ray else self._local_folders()
        if on_ray:  # nothing of the attempt before stays, should this one not start
            self.checkpoints.restore(attempt, {})
            self.checkpoint = {"restored": None}
        else:
            self._restore(attempt, checkpoints)
        nodes = [
            NodeLaunch(
                node=node,
                argv=argv,
                env={**owned, **({} if on_ray else {CHECKPOINT_DIR.name: checkpoints[node].path})},
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
            code=cwd if code is not None and code.source == SNAPSHOT and code.path else None,
            relay_tracking=self.tracking.embedded,
            checkpoints=(lambda nodes: self._restore(attempt, nodes)) if on_ray else None,
        )

    def _local_folders(self) -> dict[int, LocalFolder]:
        """Every node's checkpoint folder on this machine (made)."""
        data, job = self.store.data_dir, self.job
        folders = {
            n: LocalFolder(str(checkpoint_node_dir(data, job.id, n))) for n in range(job.num_nodes)
        }
        for folder in folders.values():
            Path(folder.path).mkdir(parents=True, exist_ok=True)
        return folders

    def _restore(self, attempt: int, folders: Mapping[int, NodeFolder]) -> None:
        """The latest checkpoint put back in every node's folder; the run of a resumed attempt
        says which attempt it resumed from."""
        job = self.job
        sync = self.checkpoints
        sync.run_id = self.run.run_id if self.run is not None else None
        restored = None
        try:
            restored = sync.restore(attempt, folders)
        except Exception as error:
            log.error("putting the checkpoint back:\n%s", traceback.format_exc())
            note = f"attempt {attempt} started without its checkpoint: {error}"
            self.disk.tolerate("a warning", self.store.add_warning, job.id, note)
        self.checkpoint = {"restored": restored}
        self._record_checkpoint(attempt)
        run = self.run
        if run is not None and restored is not None:
            tags = {
                TAG_RESUMED_FROM: str(restored.get("attempt")),
                TAG_RESUMED_RUN: str(restored.get("run_id") or ""),
            }
            for name, value in tags.items():
                self.tracking.call("tagging the run", run.client.set_tag, run.run_id, name, value)

    def _record_checkpoint(self, attempt: int) -> None:
        import json

        self.disk.tolerate(
            "recording the checkpoint",
            self.store.update_attempt,
            *(self.job.id, attempt),
            checkpoint=json.dumps(self.checkpoint),
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
        from ..tracking.rest import client_for
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
        tags[TAG_DESCRIPTION] = logs_note(job, attempt)
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
            client=client_for(self.tracking.uri or job.tracking_uri or ""),
            wait_timeout_s=60.0,  # the embedded server may be starting
        )

    # while -----------------------------------------------------------------------------------
    def started(self, attempt: int, group: NodeGroup) -> None:
        self.disk.tolerate("recording the nodes", self._record_nodes, attempt, group)
        self.checkpoints.start()
        if self.run is not None:
            self._start_metrics(group)

    def _record_nodes(self, attempt: int, group: NodeGroup) -> None:
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

    def _start_metrics(self, group: NodeGroup) -> None:
        from ..tracking.system_metrics import TAG_SYSTEM_METRICS

        run = self.run
        metrics = Metrics(
            run_id=run.run_id,
            tracking_env=self.tracking.env(),
            interval_s=SYSTEM_METRICS_INTERVAL_S.number(),
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
        for writer in self.writers.values():
            if not writer.flush():
                self.disk.saw()
        self.disk.tolerate("indexing the logs", self._index, attempt, complete=False)

    def failing(self) -> str | None:
        """Lines are being lost for want of space (the memory they wait in is full too): the
        attempt stops, and the job run is not retried (once said, it stays said)."""
        if self.out_of_space is None and any(w.overflowing for w in self.writers.values()):
            self.out_of_space = self.disk.saw()
        return self.out_of_space or self.checkpoints.over

    # after -----------------------------------------------------------------------------------
    def ended(self, attempt: int, group: NodeGroup | None, outcome: Outcome) -> None:
        job = self.job
        disk = self.disk
        if group is not None:
            for state in _final_states(group):
                disk.until_written(
                    "recording a node's end",
                    self.store.finish_node,
                    *(job.id, attempt, state.node, state.exit_code, state.signal),
                )
            self.tracking.call("system metrics", group.finish_metrics)
        writers = self.writers.values()
        for writer in writers:
            if writer.full_since is not None:
                disk.saw(writer.full_since)
        if any(w.full for w in writers):
            disk.wait_for_room("writing the logs", lambda: all([w.flush() for w in writers]))
        for writer in writers:
            writer.close()
            if writer.lost_total:
                note = f"{writer.lost_total} lines of {writer.path.name} lost: {disk.saw()}"
                disk.tolerate("a warning", self.store.add_warning, job.id, note)
        disk.until_written("indexing the logs", self._index, attempt, complete=True)
        self._keep_checkpoint(attempt, outcome)
        saved = self.checkpoint.get("saved") or {}
        if group is not None and "error" not in saved and self.checkpoints.over is None:
            self.tracking.call("removing the nodes' checkpoint folders", group.forget_checkpoints)
        if self.uploader is not None:
            self.uploader.finish()
            disk.tolerate("marking the logs uploaded", self._mark_uploaded, attempt)
            self.uploader = None
        run = self.run
        if run is not None:
            reason = outcome.reason[:MAX_REASON_TAG]
            tag = (run.run_id, TAG_REASON, reason)
            self.tracking.call("tagging the run", run.client.set_tag, *tag)
            run_status = run_status_of(outcome.status).value
            self.tracking.call(f"ending the run of attempt {attempt}", run.end, run_status)
        disk.until_written(
            "recording the attempt's end",
            self.store.finish_attempt,
            job.id,
            attempt,
            outcome.status,
            outcome.reason,
            exit_code=outcome.exit_code,
            signal=outcome.signal,
            timed_out=outcome.timed_out,
        )

    def _keep_checkpoint(self, attempt: int, outcome: Outcome) -> None:
        """Bring home what the nodes wrote last; record it, and torch elastic's restarts."""
        try:
            saved = self.checkpoints.finish()
        except Exception as error:
            log.error("bringing the checkpoint home:\n%s", traceback.format_exc())
            saved = {"error": str(error)}
        self.checkpoint["saved"] = saved or None
        most = int(self.job.spec.get("max_restarts") or 0)
        logs = {n: w.path for n, w in self.writers.items()}
        failed = outcome.status != "SUCCEEDED"
        restarts = count_restarts(logs, most=most, ended_failed=failed) if most else 0
        self.checkpoint["restarts"] = restarts
        self._record_checkpoint(attempt)
        run = self.run
        if run is None:
            return
        tags: dict[str, str] = {}
        if most:
            tags[TAG_RESTARTS] = str(restarts)
        if saved.get("files"):
            tags[TAG_CHECKPOINT] = f"{saved['files']} files saved, {saved['bytes']} bytes"
        for name, value in tags.items():
            self.tracking.call("tagging the run", run.client.set_tag, run.run_id, name, value)

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
