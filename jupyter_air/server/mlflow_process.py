"""The embedded MLflow tracking server: start it, watch it, restart it, stop it.

``mlflow server`` runs in its own process group (it starts uvicorn as a child), so stopping it
stops the whole group. A watcher thread checks ``/health``: the state goes starting → ready,
and a server that dies is restarted with a growing delay. A record of each running server is kept
next to its store so that one left behind by a Jupyter server that crashed is stopped the next
time a Jupyter server starts on the same data folder.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

from ..pids import pid_alive
from ..tracking.readiness import healthy

log = logging.getLogger(__name__)

STARTING, READY, FAILED, STOPPED = "starting", "ready", "failed", "stopped"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


class EmbeddedMlflow:
    """One ``mlflow server`` on 127.0.0.1 with a SQLite store under ``data_dir``."""

    def __init__(
        self,
        data_dir: Path,
        *,
        port: int | None = None,
        start_timeout_s: float = 180.0,
        python: str = sys.executable,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.port = port or free_port()
        self.start_timeout_s = start_timeout_s
        self.python = python
        self.state = STOPPED
        self.error: str | None = None
        self.restarts = 0
        self.started_at: float | None = None  # monotonic time the current start began
        self.ready_after_s: float | None = None  # how long the last start took
        self._process: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None

    # paths ---------------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def store(self) -> Path:
        return self.data_dir / "mlflow.db"

    @property
    def artifacts(self) -> Path:
        return self.data_dir / "artifacts"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "server.log"

    def _record_file(self) -> Path:
        return self.data_dir / f"server-{os.getpid()}.json"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def command(self) -> list[str]:
        """``mlflow server …`` under a guard that stops it if this process dies unannounced."""
        return [
            self.python, "-m", "jupyter_air.server.process_guard", str(os.getpid()),
            self.python, "-m", "mlflow", "server",
            "--backend-store-uri", f"sqlite:///{self.store}",
            "--artifacts-destination", str(self.artifacts),
            "--host", "127.0.0.1",
            "--port", str(self.port),
            "--workers", "1",
        ]  # fmt: skip

    # lifecycle -----------------------------------------------------------------------------
    def start(self) -> None:
        """Start the server and its watcher thread; returns at once (the start takes 15 to 55 s)."""
        if self._watcher is not None:
            return
        self.data_dir.mkdir(parents=True, exist_ok=True)
        self.artifacts.mkdir(parents=True, exist_ok=True)
        self.stop_leftovers()
        self._stop.clear()
        self._spawn()
        self._watcher = threading.Thread(target=self._watch, name="air-mlflow-watcher", daemon=True)
        self._watcher.start()

    def _spawn(self) -> None:
        env = dict(os.environ)
        env.pop("MLFLOW_TRACKING_URI", None)
        env["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] = "true"
        env["PYTHONUNBUFFERED"] = "1"
        # MLflow's job runner (GenAI evaluation jobs) adds 8 processes we have no use for
        env.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
        with self._lock:
            self.state = STARTING
            self.error = None
            self.started_at = time.monotonic()
            with open(self.log_file, "ab") as out:
                out.write(f"\n--- starting: {' '.join(self.command())}\n".encode())
                out.flush()
                self._process = subprocess.Popen(
                    self.command(),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    cwd=str(self.data_dir),
                    start_new_session=True,  # its own process group: stopped as a whole
                )
            self._record_file().write_text(
                json.dumps(
                    {"owner": os.getpid(), "pid": self._process.pid, "port": self.port,
                     "store": str(self.store)}
                )
            )  # fmt: skip
        log.info("jupyter-air: starting MLflow at %s (store %s)", self.url, self.store)

    def _watch(self) -> None:
        delay = 1.0
        while not self._stop.is_set():
            process = self._process
            if process is None:
                return
            code = process.poll()
            if code is not None:
                if self._stop.is_set():
                    return
                self.error = f"MLflow exited with code {code}; see {self.log_file}"
                log.warning("jupyter-air: %s; restarting in %.0f s", self.error, delay)
                with self._lock:
                    self.state = FAILED
                if self._stop.wait(delay):
                    return
                delay = min(delay * 2, 60.0)
                self.restarts += 1
                self._spawn()
                continue
            if healthy(self.url, timeout=2.0):
                if self.state != READY:
                    assert self.started_at is not None
                    self.ready_after_s = time.monotonic() - self.started_at
                    log.info("jupyter-air: MLflow ready in %.1f s", self.ready_after_s)
                with self._lock:
                    self.state = READY
                    self.error = None
                delay = 1.0
                self._stop.wait(5.0)
                continue
            if self.state == READY:
                # was up and stopped answering while its process lives: give it a moment
                self._stop.wait(2.0)
                if not healthy(self.url, timeout=5.0) and not self._stop.is_set():
                    with self._lock:
                        self.state = STARTING
                        self.started_at = time.monotonic()
                continue
            assert self.started_at is not None
            if time.monotonic() - self.started_at > self.start_timeout_s:
                self.error = (
                    f"MLflow did not answer within {self.start_timeout_s:.0f} s; "
                    f"see {self.log_file}"
                )
                log.warning("jupyter-air: %s; restarting it", self.error)
                self._terminate(process)
                continue  # the exit is noticed above and restarted
            self._stop.wait(0.5)

    def stop(self, timeout_s: float = 10.0) -> None:
        """Stop the server's whole process group (SIGTERM, then SIGKILL) and the watcher."""
        self._stop.set()
        process = self._process
        if process is not None:
            self._terminate(process, timeout_s)
        if self._watcher is not None:
            self._watcher.join(timeout=timeout_s)
            self._watcher = None
        with contextlib.suppress(FileNotFoundError):
            self._record_file().unlink()
        with self._lock:
            self.state = STOPPED

    @staticmethod
    def _terminate(process: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
        if process.poll() is None:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=timeout_s)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=5)
        # children that outlived their parent in the group
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)

    def stop_leftovers(self) -> None:
        """Stop servers on this store left behind by Jupyter servers that no longer run."""
        for record in self.data_dir.glob("server-*.json"):
            try:
                info = json.loads(record.read_text())
                owner, pid = int(info["owner"]), int(info["pid"])
            except (ValueError, KeyError, OSError):
                record.unlink(missing_ok=True)
                continue
            if owner == os.getpid() or pid_alive(owner):
                continue
            if pid_alive(pid):
                log.info("jupyter-air: stopping a leftover MLflow server (pid %d)", pid)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(pid, signal.SIGKILL)
            record.unlink(missing_ok=True)

    def status(self) -> dict:
        with self._lock:
            elapsed = (
                round(time.monotonic() - self.started_at, 1)
                if self.state == STARTING and self.started_at is not None
                else None
            )
            return {
                "state": self.state,
                "elapsed_s": elapsed,
                "error": self.error,
                "restarts": self.restarts,
                "ready_after_s": round(self.ready_after_s, 1) if self.ready_after_s else None,
            }
