"""The embedded MLflow tracking server as the Jupyter server uses it.

The server itself belongs to the data folder (``jupyter_air.mlflow_server``): this Jupyter server
takes a lease on it at start — starting it, or joining the one a job's supervisor keeps running —
and leaves it at stop (the last user to leave stops it). A watcher thread reads the guard's
status for the panels every half second and, if the guard itself died (SIGKILL, a crash),
starts a new one: the leftover MLflow is stopped first and the same port is used again when it
is free. Ready is what the guard's last check said only while MLflow's process lives: a dead one
reads as failed at once, before the guard notices and starts it again.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ..mlflow_server.control import ensure_running, leave
from ..mlflow_server.guard import mlflow_command
from ..mlflow_server.records import (
    FAILED,
    READY,
    STARTING,
    STOPPED,
    Endpoint,
    Lease,
    ServerFiles,
    free_port,
)
from ..pids import is_running
from ..tracking.readiness import healthy

log = logging.getLogger(__name__)

__all__ = [
    "FAILED",
    "READY",
    "STARTING",
    "STOPPED",
    "EmbeddedMlflow",
    "free_port",
    "healthy",
]


class EmbeddedMlflow:
    """This process's use of the embedded MLflow server of ``data_dir`` (``<data>/mlflow``)."""

    def __init__(
        self,
        data_dir: Path,
        *,
        start_timeout_s: float = 180.0,
        python: str = sys.executable,
        what: str = "jupyter server",
        watch_s: float = 0.5,
    ) -> None:
        self.files = ServerFiles(data_dir)
        self.data_dir = Path(data_dir)
        self.start_timeout_s = start_timeout_s
        self.python = python
        self.what = what
        self.watch_s = watch_s
        self.endpoint: Endpoint | None = None
        self.guard_restarts = 0  # guards this process had to start again (the guard died)
        self._status: dict[str, Any] = {"state": STOPPED}
        self._lease: Lease | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    # where it is ---------------------------------------------------------------------------
    @property
    def url(self) -> str | None:
        return self.endpoint.url if self.endpoint is not None else None

    @property
    def port(self) -> int | None:
        return self.endpoint.port if self.endpoint is not None else None

    @property
    def token(self) -> str | None:
        return self.endpoint.token if self.endpoint is not None else None

    @property
    def store(self) -> Path:
        return self.files.store

    @property
    def artifacts(self) -> Path:
        return self.files.artifacts

    @property
    def log_file(self) -> Path:
        return self.files.log_file

    @property
    def pid(self) -> int | None:
        """MLflow's process (the leader of its process group), while it runs."""
        pid = self._status.get("mlflow_pid")
        return pid if isinstance(pid, int) else None

    @property
    def state(self) -> str:
        return str(self._current().get("state", STOPPED))

    def _current(self) -> dict[str, Any]:
        """The guard's last status, unless it says ready and MLflow's process is gone."""
        with self._lock:
            status = dict(self._status)
        pid = status.get("mlflow_pid")
        if status.get("state") == READY and not (
            isinstance(pid, int) and is_running(pid, status.get("mlflow_started"))
        ):
            status["state"] = FAILED
            status["error"] = (
                f"MLflow (pid {pid}) exited; its guard starts it again (see {self.log_file})"
            )
        return status

    @property
    def restarts(self) -> int:
        return int(self._status.get("restarts") or 0) + self.guard_restarts

    def env(self) -> dict[str, str]:
        """``MLFLOW_TRACKING_URI`` and ``MLFLOW_TRACKING_TOKEN`` for MLflow's client."""
        return self.endpoint.env() if self.endpoint is not None else {}

    def command(self) -> list[str]:
        """The ``mlflow server`` command the guard runs."""
        return mlflow_command(self.files, self.port or 0, self.python)

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start or join the server and watch it; returns at once (MLflow takes 5 to 55 s)."""
        if self._watcher is not None:
            return
        self._stop.clear()
        self._join()
        self._watcher = threading.Thread(target=self._watch, name="air-mlflow-watcher", daemon=True)
        self._watcher.start()

    def _join(self) -> None:
        endpoint, lease = ensure_running(
            self.files.folder, self.what, start_timeout_s=self.start_timeout_s, python=self.python
        )
        with self._lock:
            self.endpoint, self._lease = endpoint, lease
        self._read()
        log.info("jupyter-air: MLflow at %s (store %s)", endpoint.url, self.store)

    def _read(self) -> None:
        status = self.files.read_status()
        record = self.files.read_endpoint()
        with self._lock:
            if record is not None and self.endpoint is not None:
                self.endpoint = record.endpoint  # the guard may have moved to another port
            if status.get("guard_pid") != (record.guard_pid if record else None):
                status = {"state": STARTING, "restarts": status.get("restarts", 0)}
            self._status = status

    def _watch(self) -> None:
        while not self._stop.wait(self.watch_s):
            try:
                record = self.files.read_endpoint()
                if record is None or not record.guard_alive():
                    if self._stop.is_set():
                        return
                    log.warning("jupyter-air: MLflow's guard is gone; starting it again")
                    self.guard_restarts += 1
                    self._join()
                    continue
                self._read()
            except Exception:  # keep watching whatever happens
                log.exception("jupyter-air: watching the MLflow server failed")

    def stop(self, timeout_s: float = 20.0) -> None:
        """Leave the server: the last user stops it (and waits until its processes are gone)."""
        self._stop.set()
        if self._watcher is not None:
            self._watcher.join(timeout=timeout_s)
            self._watcher = None
        lease, self._lease = self._lease, None
        if lease is not None:
            leave(self.files.folder, lease, timeout_s=timeout_s)
        with self._lock:
            self._status = {"state": STOPPED, "restarts": self._status.get("restarts", 0)}

    def status(self) -> dict[str, Any]:
        status = self._current()
        state = status.get("state", STOPPED)
        started = status.get("started_at")
        elapsed = (
            round(max(0.0, time.time() - started), 1)
            if state == STARTING and isinstance(started, (int, float))
            else (0.0 if state == STARTING else None)
        )
        return {
            "state": state,
            "elapsed_s": elapsed,
            "error": status.get("error"),
            "restarts": self.restarts,
            "ready_after_s": status.get("ready_after_s"),
            "next_start_at": status.get("next_start_at"),
        }
