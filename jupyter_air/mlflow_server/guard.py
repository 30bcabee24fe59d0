"""The guard of an embedded MLflow server: ``python -m jupyter_air.mlflow_server.guard FOLDER``.

Started (detached, in its own session) by ``control.ensure_running``, it runs ``mlflow server
--app-name jupyter-air`` in a process group of its own — MLflow starts uvicorn as a child, and
stopping the group stops both, so no child is left holding the port. It watches the server:

- ``/health`` (with the token) answering: ready;
- MLflow exited or did not answer within the start timeout: its whole group is stopped, the
  port waited for, and MLflow started again after a delay that doubles up to a minute (the reason
  and the time of the next start are in ``status.json`` for the panels);
- the port taken by another program: the next free port is recorded in ``endpoint.json``, where
  clients look when a call fails;
- no live lease left (every process that used the server is gone) or SIGTERM: MLflow's group is
  stopped (SIGTERM, SIGKILL after 10 s) and the guard exits.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from typing import Any

from ..config import MLFLOW_SERVER_TOKEN
from ..pids import process_start_time, stop_group
from ..private import UMASK, open_private
from ..tracking.readiness import healthy
from .records import (
    FAILED,
    READY,
    STARTING,
    STOPPED,
    EndpointRecord,
    ServerFiles,
    free_port,
    live_leases,
    port_free,
)

log = logging.getLogger("jupyter_air.mlflow_server.guard")

MAX_DELAY_S = 60.0
STOP_GRACE_S = 10.0
PORT_WAIT_S = 10.0


def mlflow_command(files: ServerFiles, port: int, python: str = sys.executable) -> list[str]:
    return [
        python, "-m", "mlflow", "server",
        "--app-name", "jupyter-air",
        "--backend-store-uri", f"sqlite:///{files.store}",
        "--artifacts-destination", str(files.artifacts),
        "--host", "127.0.0.1",
        "--port", str(port),
        "--workers", "1",
    ]  # fmt: skip


class Guard:
    def __init__(
        self,
        files: ServerFiles,
        *,
        start_timeout_s: float = 180.0,
        python: str = sys.executable,
        lease_check_s: float = 1.0,
    ) -> None:
        self.files = files
        self.start_timeout_s = start_timeout_s
        self.python = python
        self.lease_check_s = lease_check_s
        self.stopping = threading.Event()
        self.process: subprocess.Popen[bytes] | None = None
        self.restarts = 0
        self.status: dict[str, Any] = {"state": STARTING, "restarts": 0, "guard_pid": os.getpid()}
        self._next_lease_check = 0.0

    # status ------------------------------------------------------------------------------------
    def _set(self, **fields: Any) -> None:
        self.status.update(fields, restarts=self.restarts, updated=time.time())
        self.files.write_status(self.status)

    # leases ------------------------------------------------------------------------------------
    def _unused(self) -> bool:
        """No process holds a lease any more (checked about once a second). Decided under the
        start lock, and then the record says no guard runs: a process that wants the server
        meanwhile starts a new one instead of joining this one."""
        now = time.monotonic()
        if now < self._next_lease_check:
            return False
        self._next_lease_check = now + self.lease_check_s
        if live_leases(self.files):
            return False
        with self.files.lock():
            if live_leases(self.files):
                return False
            record = self.files.read_endpoint()
            if record is not None and record.guard_pid == os.getpid():
                self.files.write_endpoint(EndpointRecord(record.port, record.token, None, None))
        log.info("no process uses the server any more: stopping")
        return True

    def _wait(self, seconds: float) -> bool:
        """Sleep up to ``seconds``; True when the guard should stop."""
        deadline = time.monotonic() + seconds
        while True:
            if self.stopping.is_set() or self._unused():
                self.stopping.set()
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.stopping.wait(min(left, 0.25))

    # MLflow ------------------------------------------------------------------------------------
    def _port(self) -> int:
        """The recorded port once it is free; another one (recorded) if something else keeps it."""
        record = self.files.read_endpoint()
        assert record is not None, "the guard needs endpoint.json"
        deadline = time.monotonic() + PORT_WAIT_S
        while not port_free(record.port) and time.monotonic() < deadline:
            if self.stopping.wait(0.2):
                return record.port
        if port_free(record.port):
            return record.port
        port = free_port()
        log.warning("port %d is taken by another program: moving to port %d", record.port, port)
        with self.files.lock():
            current = self.files.read_endpoint() or record
            self.files.write_endpoint(
                EndpointRecord(port, current.token, current.guard_pid, current.guard_started)
            )
        return port

    def _spawn(self, port: int, token: str) -> subprocess.Popen[bytes]:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("MLFLOW_TRACKING_URI", "MLFLOW_TRACKING_TOKEN")
        }
        env.update(
            {
                MLFLOW_SERVER_TOKEN.name: token,
                "MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT": "true",
                "PYTHONUNBUFFERED": "1",
            }
        )
        # MLflow's job runner (GenAI evaluation jobs) adds 8 processes we have no use for
        env.setdefault("MLFLOW_SERVER_ENABLE_JOB_EXECUTION", "false")
        command = mlflow_command(self.files, port, self.python)
        with open_private(self.files.log_file) as out:
            out.write(f"\n--- starting: {' '.join(command)}\n".encode())
            out.flush()
            return subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=str(self.files.folder),
                start_new_session=True,  # its own group: MLflow and uvicorn stop together
            )

    def _stop_mlflow(self, grace_s: float) -> None:
        process = self.process
        if process is None:
            return
        stop_group(process.pid, grace_s, process)
        self.process = None

    def _serve_once(self) -> str | None:
        """Start MLflow and watch it until it fails (the reason) or the guard stops (None)."""
        port = self._port()
        record = self.files.read_endpoint()
        assert record is not None
        if self.stopping.is_set():
            return None
        started = time.time()
        self.process = self._spawn(port, record.token)
        self._set(
            state=STARTING,
            error=None,
            next_start_at=None,
            started_at=started,
            ready_after_s=None,
            mlflow_pid=self.process.pid,
            mlflow_started=process_start_time(self.process.pid),
            port=port,
        )
        log.info("MLflow started (pid %d) on port %d", self.process.pid, port)
        url = f"http://127.0.0.1:{port}"
        ready = False
        unhealthy_since: float | None = None
        while not self._wait(0.5 if not ready else 2.0):
            code = self.process.poll()
            if code is not None:
                return f"MLflow exited with code {code}"
            if healthy(url, timeout=2.0, token=record.token):
                unhealthy_since = None
                if not ready:
                    ready = True
                    self._set(state=READY, ready_after_s=round(time.time() - started, 1))
                    log.info("MLflow ready after %.1f s", time.time() - started)
                continue
            if ready:
                unhealthy_since = unhealthy_since or time.monotonic()
                if time.monotonic() - unhealthy_since > 30.0:
                    return "MLflow stopped answering for 30 s"
            elif time.time() - started > self.start_timeout_s:
                return f"MLflow did not answer within {self.start_timeout_s:.0f} s"
        return None

    def run(self) -> int:
        delay = 1.0
        try:
            while not self.stopping.is_set():
                began = time.monotonic()
                problem = self._serve_once()
                if problem is None:
                    break
                self._stop_mlflow(grace_s=2.0)
                if time.monotonic() - began > 120.0:
                    delay = 1.0  # it ran well for a while: a fresh failure, not a crash loop
                self.restarts += 1
                reason = f"{problem}; see {self.files.log_file}"
                self._set(
                    state=FAILED,
                    error=f"{reason} (restart {self.restarts} in {delay:.0f} s)",
                    next_start_at=time.time() + delay,
                )
                log.warning("%s; restarting in %.0f s", reason, delay)
                if self._wait(delay):
                    break
                delay = min(delay * 2, MAX_DELAY_S)
        finally:
            self._stop_mlflow(grace_s=STOP_GRACE_S)
            self._set(state=STOPPED, mlflow_pid=None, next_start_at=None)
            log.info("stopped")
        return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_air.mlflow_server.guard",
        description="Run the embedded MLflow server of a jupyter-air data folder.",
    )
    parser.add_argument("folder")
    parser.add_argument("--start-timeout", type=float, default=180.0)
    args = parser.parse_args(argv)
    os.umask(UMASK)  # MLflow's store, artifacts and files: this user's only
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s guard %(levelname)s: %(message)s",
        stream=sys.stderr,
    )
    guard = Guard(ServerFiles(args.folder), start_timeout_s=args.start_timeout)

    def on_signal(signum: int, frame: Any) -> None:
        guard.stopping.set()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    return guard.run()


if __name__ == "__main__":
    sys.exit(main())
