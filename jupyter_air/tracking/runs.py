"""Runs jupyter-air creates and owns: the driver (a kernel running ``@distributed``, a workload's
supervisor) starts one, hands ``env()`` to its worker processes, and alone ends it.

- Inside an active run of this process (``with mlflow.start_run(): ...``) the run is a nested
  child (``mlflow.parentRunId``), in the parent's experiment.
- With ``MLFLOW_RUN_ID`` set (or ``run_id=`` given), that run is resumed: status back to RUNNING,
  and ended again at the end.
- Otherwise a new run, in the experiment ``experiments.resolve_experiment`` picks.

Everything goes through ``MlflowClient``: the kernel's own fluent run stack
(``mlflow.active_run()``) is never touched, so a user's ``mlflow.log_metric`` keeps logging where
it did. Workers get ``MLFLOW_RUN_ID`` and must not end the run (mlflow #4696, #5817, #8494).
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..api.enums import RUN_TERMINAL, RunStatus
from .context import KernelContext, kernel_context
from .display import RunDisplay, run_payload, starting_reporter
from .experiments import resolve_experiment
from .links import is_loopback_http
from .naming import TAG_KERNEL_ID, TAG_LAUNCHER, TAG_NOTEBOOK
from .readiness import wait_for_tracking_server
from .system_metrics import TAG_SYSTEM_METRICS, SystemMetrics, start_system_metrics

if TYPE_CHECKING:
    from mlflow.entities import Run
    from mlflow.tracking import MlflowClient

log = logging.getLogger(__name__)

END_STATUSES = tuple(s.value for s in RunStatus if s in RUN_TERMINAL)

_open_runs: dict[int, ManagedRun] = {}  # id(run) → run, until it ends
_open_lock = threading.Lock()
_atexit_registered = False


@dataclass(eq=False, kw_only=True)
class ManagedRun:
    """An MLflow run owned by this process. Create with ``ManagedRun.start(...)``."""

    client: MlflowClient
    run: Run
    experiment_name: str
    launcher: str
    resumed: bool
    context: KernelContext
    system_metrics: SystemMetrics | None = None
    _display: RunDisplay | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)
    _ended: bool = field(default=False, init=False)

    # start ---------------------------------------------------------------------------------
    @classmethod
    def start(
        cls,
        launcher: str = "distributed",
        *,
        run_name: str | None = None,
        tags: Mapping[str, Any] | None = None,
        experiment: str | None = None,
        artifact_location: str | None = None,
        run_id: str | None = None,
        resume_from_env: bool = True,
        nested: bool = True,
        system_metrics: bool = True,
        node_id: str = "node_0",
        sampling_interval_s: float | None = None,
        tracking_uri: str | None = None,
        client: Any = None,
        wait_timeout_s: float = 180.0,
    ) -> ManagedRun:
        """Create (or resume) the run of one launch and start its system metrics.

        ``experiment``: an experiment name that wins over the rule (workloads'
        ``experiment_name``); ``artifact_location`` is used if it gets created.
        ``run_id``: resume this run; else ``MLFLOW_RUN_ID`` unless ``resume_from_env=False``.
        ``nested``: become a child of this process's active fluent run, if there is one.
        ``tags``: extra tags; they win over ours.
        ``client``: the tracking client to use (``rest.client_for``), else MLflow's, for
        ``tracking_uri`` or MLflow's current tracking URI.
        """
        if client is None:
            import mlflow

            uri = tracking_uri or mlflow.get_tracking_uri()
            client = mlflow.MlflowClient(tracking_uri=uri)
        uri = client.tracking_uri
        context = kernel_context()
        wait_until_answering(uri, context, wait_timeout_s)
        resume_id = run_id or (os.environ.get("MLFLOW_RUN_ID") if resume_from_env else None)
        if resume_id:
            run = _resume(client, resume_id)
            experiment_name = client.get_experiment(run.info.experiment_id).name
            our_tags = _tags(context, launcher, parent_run_id=None)
            missing = {k: v for k, v in our_tags.items() if k not in run.data.tags}
            _set_tags(client, run.info.run_id, {**missing, **dict(tags or {})})
            resumed = True
        else:
            parent = _active_run() if nested else None
            if parent is not None and experiment is None:
                experiment_id = parent.info.experiment_id
                experiment_name = client.get_experiment(experiment_id).name
            else:
                resolved = resolve_experiment(
                    experiment, artifact_location=artifact_location, client=client, context=context
                )
                experiment_id, experiment_name = resolved.experiment_id, resolved.name
            parent_id = parent.info.run_id if parent is not None else None
            all_tags = {**_tags(context, launcher, parent_id), **dict(tags or {})}
            run = client.create_run(
                experiment_id, tags={k: str(v) for k, v in all_tags.items()}, run_name=run_name
            )
            resumed = False
        managed = cls(
            client=client,
            run=run,
            experiment_name=experiment_name,
            launcher=launcher,
            resumed=resumed,
            context=context,
        )
        if system_metrics:
            managed._start_system_metrics(node_id, sampling_interval_s, uri)
        _track(managed)
        return managed

    def _start_system_metrics(
        self, node_id: str, sampling_interval_s: float | None, tracking_uri: str
    ) -> None:
        try:
            self.system_metrics = start_system_metrics(
                self.run_id,
                node_id=node_id,
                sampling_interval_s=sampling_interval_s,
                resume=self.resumed,
                tracking_uri=tracking_uri,
            )
            self.client.set_tag(
                self.run_id, f"{TAG_SYSTEM_METRICS}.{node_id}", self.system_metrics.summary
            )
        except Exception as error:
            log.warning("jupyter-air: system metrics for run %s are off: %s", self.run_id, error)

    # what callers read ---------------------------------------------------------------------
    @property
    def run_id(self) -> str:
        return self.run.info.run_id

    @property
    def experiment_id(self) -> str:
        return self.run.info.experiment_id

    @property
    def run_name(self) -> str:
        return self.run.info.run_name

    @property
    def parent_run_id(self) -> str | None:
        return self.run.data.tags.get("mlflow.parentRunId")

    @property
    def status(self) -> str:
        return self.run.info.status

    @property
    def tracking_uri(self) -> str:
        return self.client.tracking_uri

    @property
    def ended(self) -> bool:
        return self._ended

    def env(self) -> dict[str, str]:
        """What worker processes need to log into this run (and must not end it)."""
        return {
            "MLFLOW_TRACKING_URI": self.tracking_uri,
            "MLFLOW_EXPERIMENT_ID": self.experiment_id,
            # consistent with the id: MLflow refuses a name and an id that disagree
            "MLFLOW_EXPERIMENT_NAME": self.experiment_name,
            "MLFLOW_RUN_ID": self.run_id,
        }

    def payload(self) -> dict[str, Any]:
        """The JSON of the run's cell-output bundle (docs/mlflow.md)."""
        return run_payload(
            self.run,
            experiment_name=self.experiment_name,
            resumed=self.resumed,
            tracking_uri=self.tracking_uri,
            context=self.context,
        )

    def show(self) -> RunDisplay:
        """Show the run in the cell output; ``end()`` updates it in place."""
        if self._display is None:
            self._display = RunDisplay(self.run_id, server_url=self.context.server_url)
        self._display.show(self.payload())
        return self._display

    # end -----------------------------------------------------------------------------------
    def end(self, status: str = "FINISHED") -> None:
        """End the run FINISHED, FAILED or KILLED (once; later calls do nothing)."""
        if status not in END_STATUSES:
            raise ValueError(f"A run ends {', '.join(END_STATUSES)}, not {status!r}")
        with self._lock:
            if self._ended:
                return
            self._ended = True
        with _open_lock:
            _open_runs.pop(id(self), None)
        if self.system_metrics is not None:
            self.system_metrics.finish()
        self.client.set_terminated(self.run_id, status)
        try:
            self.run = self.client.get_run(self.run_id)
        except Exception as error:  # the run did end; only the refreshed view is missing
            log.debug("jupyter-air: could not read run %s back: %s", self.run_id, error)
        if self._display is not None:
            try:
                self._display.update(self.payload())
            except Exception as error:
                log.warning("jupyter-air: could not update the run's output: %s", error)

    def __enter__(self) -> ManagedRun:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.end("FINISHED")
        elif issubclass(exc_type, KeyboardInterrupt):
            self.end("KILLED")
        else:
            self.end("FAILED")

    def __repr__(self) -> str:
        return (
            f"<ManagedRun {self.run_id} {self.status} experiment={self.experiment_name!r} "
            f"launcher={self.launcher!r}>"
        )


def wait_until_answering(uri: str, context: KernelContext, timeout_s: float = 180.0) -> float:
    """Wait (saying so) for a local tracking server that is still starting; on a team server,
    check once that it knows this user (``readiness.check_user``)."""
    if not is_loopback_http(uri):
        return wait_for_tracking_server(uri)
    embedded = context.under_jupyter_air and (uri or "").rstrip("/") == (
        context.tracking_uri or ""
    ).rstrip("/")
    return wait_for_tracking_server(
        uri, timeout_s=timeout_s, report=starting_reporter(embedded=embedded)
    )


def _tags(context: KernelContext, launcher: str, parent_run_id: str | None) -> dict[str, str]:
    tags = {TAG_LAUNCHER: launcher, "mlflow.user": context.user}
    if context.notebook_path:
        tags[TAG_NOTEBOOK] = context.notebook_path
        tags["mlflow.source.name"] = context.notebook_path
        tags["mlflow.source.type"] = "NOTEBOOK"
    else:
        tags["mlflow.source.name"] = os.path.basename(sys.argv[0]) if sys.argv[0] else "python"
        tags["mlflow.source.type"] = "LOCAL"
    if context.kernel_id:
        tags[TAG_KERNEL_ID] = context.kernel_id
    if parent_run_id:
        tags["mlflow.parentRunId"] = parent_run_id
    return tags


def _resume(client: MlflowClient, run_id: str) -> Run:
    run = client.get_run(run_id)
    if run.info.lifecycle_stage != "active":
        raise ValueError(
            f"Cannot resume run {run_id} (MLFLOW_RUN_ID): it is deleted. Restore it in the "
            "MLflow UI, or unset MLFLOW_RUN_ID to start a new run."
        )
    client.update_run(run_id, status="RUNNING")
    return client.get_run(run_id)


def _set_tags(client: MlflowClient, run_id: str, tags: Mapping[str, Any]) -> None:
    if not tags:
        return
    from mlflow.entities import RunTag

    client.log_batch(run_id, tags=[RunTag(k, str(v)) for k, v in tags.items()])


def _active_run() -> Any:
    """This process's active fluent run (``with mlflow.start_run()``): none when it never
    imported mlflow (nothing is imported for this)."""
    mlflow = sys.modules.get("mlflow")
    return mlflow.active_run() if mlflow is not None else None


def _track(run: ManagedRun) -> None:
    """Runs still open when the process exits (kernel shut down) end KILLED, not RUNNING forever."""
    global _atexit_registered
    with _open_lock:
        _open_runs[id(run)] = run
        if not _atexit_registered:
            atexit.register(_end_open_runs)
            _atexit_registered = True


def _end_open_runs() -> None:
    with _open_lock:
        runs = list(_open_runs.values())
    for run in runs:
        with contextlib.suppress(Exception):
            run.end("KILLED")
