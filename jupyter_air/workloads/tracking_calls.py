"""A supervisor's MLflow calls: bounded, re-resolved when they fail, and never the job's delay.

MLflow's client retries a failing call for about four minutes (7 retries, doubling backoff, a
120 s timeout each). A supervisor whose tracking server went away must not spend the job's time
on it, so in the supervisor's own process each call gets one retry and a 5 s timeout (the nodes
keep MLflow's defaults: their environment is taken before). When a call fails anyway:

- the address is looked up again: the embedded server of the data folder may have moved to
  another port, or its guard may need starting again (``ensure_running``);
- the failure is recorded on the job run as a warning (``air get run``, the job page);
- what must still happen — ending each attempt's run with the attempt's status, the last upload
  of its logs, even creating the run of an attempt that started while MLflow was down — is
  already written down in the job store (attempts, their status and end, the log files and
  their upload time) and is done by ``reconcile`` as soon as MLflow answers: by the supervisor
  at the end of the job (a few seconds at most), then by the Jupyter server's background task
  and by ``air get run``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any, TypeVar

from ..mlflow_server.records import Lease, ServerFiles, mlflow_folder
from ..tracking.identity import credentials_env, hide_secrets
from ..tracking.links import redacted
from .store import JobRun, JobStore

log = logging.getLogger(__name__)

T = TypeVar("T")

# MLflow's client reads these at each call
BOUNDED_ENV = {
    "MLFLOW_HTTP_REQUEST_MAX_RETRIES": "1",
    "MLFLOW_HTTP_REQUEST_BACKOFF_FACTOR": "1",
    "MLFLOW_HTTP_REQUEST_TIMEOUT": "5",
}
EMBEDDED, EXTERNAL = "embedded", "external"


def bound_mlflow_calls(environ: MutableMapping[str, str] | None = None) -> dict[str, str]:
    """Bound this process's MLflow calls; returns the environment as it was (for children)."""
    env = os.environ if environ is None else environ
    before = dict(env)
    env.update(BOUNDED_ENV)
    return before


class JobTracking:
    """The tracking server of one job run, as its supervisor uses it."""

    def __init__(self, store: JobStore, job: JobRun) -> None:
        self.store = store
        self.job = job
        self.uri: str = job.tracking_uri or ""
        self.token: str | None = os.environ.get("MLFLOW_TRACKING_TOKEN") or None
        self.lease: Lease | None = None
        self.failures = 0

    @property
    def embedded(self) -> bool:
        return self.job.tracking == EMBEDDED

    def start(self) -> None:
        """Join (or start) the data folder's embedded server, for as long as the job runs."""
        if not self.embedded:
            self._activate()
            return
        self._join()

    def _join(self) -> None:
        from ..mlflow_server.control import ensure_running

        endpoint, self.lease = ensure_running(
            mlflow_folder(self.store.data_dir), f"supervisor of job run {self.job.id}"
        )
        self.uri, self.token = endpoint.url, endpoint.token
        self._activate()

    def _activate(self) -> None:
        if self.uri:
            os.environ["MLFLOW_TRACKING_URI"] = self.uri
        if self.token:
            os.environ["MLFLOW_TRACKING_TOKEN"] = self.token

    def env(self) -> dict[str, str]:
        """What the job's nodes need to reach the server."""
        env = {"MLFLOW_TRACKING_URI": self.uri}
        if self.token:
            env["MLFLOW_TRACKING_TOKEN"] = self.token
        if not self.embedded:  # a team server: the user's name and password, as MLflow reads them
            env.update(credentials_env())
        return env

    def call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T | None:
        """``fn(*args)``; on failure a warning on the job run, the address looked up again, and
        None (the caller carries on: what matters is redone by ``reconcile``)."""
        try:
            return fn(*args, **kwargs)
        except Exception as error:
            self.failed(what, error)
            return None

    def failed(self, what: str, error: BaseException) -> None:
        self.failures += 1
        message = (
            f"MLflow at {redacted(self.uri)} did not answer ({what}): {_short(error)}. "
            "jupyter-air records it when MLflow answers again."
        )
        message = hide_secrets(message)  # an error's text may quote a request
        log.warning("%s", message)
        self.store.add_warning(self.job.id, message)
        self.refresh()

    def refresh(self) -> None:
        """Look the embedded server's address up again (it may have moved or need a start)."""
        if not self.embedded:
            return
        record = ServerFiles(mlflow_folder(self.store.data_dir)).read_endpoint()
        try:
            if record is None or not record.guard_alive():
                self._join()
            elif record.endpoint.url != self.uri:
                self.uri, self.token = record.endpoint.url, record.endpoint.token
                self._activate()
        except Exception as error:  # the next call says it again
            log.warning("could not reach jupyter-air's MLflow server: %s", error)

    def finish(self) -> None:
        """Leave the embedded server (the last user stops it)."""
        lease, self.lease = self.lease, None
        if lease is not None:
            from ..mlflow_server.control import leave

            try:
                leave(mlflow_folder(self.store.data_dir), lease)
            except Exception as error:
                log.warning("could not leave jupyter-air's MLflow server: %s", error)


def node_base_environment(before: Mapping[str, str]) -> dict[str, str]:
    """The environment nodes start from: the supervisor's before its calls were bounded."""
    return dict(before)


def _short(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    return first[:300]
