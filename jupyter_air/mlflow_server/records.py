"""What the embedded MLflow server keeps in its folder (``<data>/mlflow/``), and how it is read.

- ``endpoint.json`` (mode 0600): the port, the bearer token, and the guard process (pid and start
  time). Written under ``start.lock`` by whoever starts a guard, and by the guard when it has to
  move to another port. The port and the token outlive the server: a restart reuses them, so a
  supervisor or a kernel that was given them keeps working.
- ``status.json``: the guard's view for people (starting, ready, failed with the reason and the
  next restart, restarts so far) and MLflow's process group.
- ``leases/<pid>.json``: one per process using the server. The guard stops MLflow when none of
  those processes is alive any more.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import secrets
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..api.enums import MlflowState
from ..files import write_json
from ..pids import is_running, process_start_time
from ..private import narrow_entries, private_folder

TOKEN_ENV = "MLFLOW_TRACKING_TOKEN"  # what MLflow's client sends as "Authorization: Bearer"
HOST = "127.0.0.1"

STARTING, READY, FAILED, STOPPED = (
    MlflowState.STARTING, MlflowState.READY, MlflowState.FAILED, MlflowState.STOPPED
)  # fmt: skip


def mlflow_folder(data_dir: str | os.PathLike[str]) -> Path:
    """The embedded server's folder inside a jupyter-air data folder."""
    return Path(data_dir) / "mlflow"


@dataclass(frozen=True)
class Endpoint:
    """Where the embedded server answers, and the token it wants."""

    port: int
    token: str

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.token}"}

    def env(self) -> dict[str, str]:
        """What a process needs in its environment to use the server with MLflow's client."""
        return {"MLFLOW_TRACKING_URI": self.url, TOKEN_ENV: self.token}


@dataclass(frozen=True)
class EndpointRecord:
    port: int
    token: str
    guard_pid: int | None = None
    guard_started: float | None = None

    @property
    def endpoint(self) -> Endpoint:
        return Endpoint(self.port, self.token)

    def guard_alive(self) -> bool:
        return is_running(self.guard_pid, self.guard_started)


class ServerFiles:
    """The files of the embedded server of one folder (created on first use)."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)

    @property
    def store(self) -> Path:
        return self.folder / "mlflow.db"

    @property
    def artifacts(self) -> Path:
        return self.folder / "artifacts"

    @property
    def log_file(self) -> Path:
        return self.folder / "server.log"

    @property
    def endpoint_file(self) -> Path:
        return self.folder / "endpoint.json"

    @property
    def status_file(self) -> Path:
        return self.folder / "status.json"

    @property
    def leases(self) -> Path:
        return self.folder / "leases"

    def make(self) -> None:
        """The folder and its subfolders, private (as what an earlier version left there)."""
        private_folder(self.folder)
        narrow_entries(self.folder)
        private_folder(self.artifacts)
        private_folder(self.leases)

    # endpoint --------------------------------------------------------------------------------
    def read_endpoint(self) -> EndpointRecord | None:
        data = _read_json(self.endpoint_file)
        try:
            return EndpointRecord(
                port=int(data["port"]),
                token=str(data["token"]),
                guard_pid=int(data["guard_pid"]) if data.get("guard_pid") else None,
                guard_started=float(data["guard_started"]) if data.get("guard_started") else None,
            )
        except (KeyError, TypeError, ValueError):
            return None

    def write_endpoint(self, record: EndpointRecord) -> None:
        _write_json(
            self.endpoint_file,
            {
                "port": record.port,
                "token": record.token,
                "guard_pid": record.guard_pid,
                "guard_started": record.guard_started,
            },
            private=True,
        )

    def endpoint(self) -> Endpoint | None:
        """The address and token clients use now (None before the first start)."""
        record = self.read_endpoint()
        return record.endpoint if record is not None else None

    # status ----------------------------------------------------------------------------------
    def read_status(self) -> dict[str, Any]:
        return _read_json(self.status_file)

    def write_status(self, status: dict[str, Any]) -> None:
        _write_json(self.status_file, status, private=True)

    # the start lock --------------------------------------------------------------------------
    @contextlib.contextmanager
    def lock(self, timeout_s: float = 30.0) -> Iterator[None]:
        """Only one process at a time decides whether to start a guard or to stop it."""
        private_folder(self.folder)
        fd = os.open(self.folder / "start.lock", os.O_RDWR | os.O_CREAT, 0o600)
        try:
            deadline = time.monotonic() + timeout_s
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError as error:
                    if error.errno not in (errno.EAGAIN, errno.EACCES):
                        raise
                    if time.monotonic() > deadline:
                        raise TimeoutError(
                            f"another process holds {self.folder / 'start.lock'} for more than "
                            f"{timeout_s:.0f} s"
                        ) from None
                    time.sleep(0.05)
            yield
        finally:
            os.close(fd)  # closing releases the lock


def new_token() -> str:
    return secrets.token_urlsafe(32)


# leases ------------------------------------------------------------------------------------
class Lease:
    """A process's hold on the server: while its process lives, the server keeps running."""

    def __init__(self, path: Path | None, pid: int) -> None:
        self.path = path
        self.pid = pid

    @classmethod
    def take(cls, files: ServerFiles, what: str, pid: int | None = None) -> Lease:
        """Take a lease for ``pid`` (default: this process); one file per process."""
        pid = pid or os.getpid()
        private_folder(files.leases)
        path = files.leases / f"{pid}.json"
        _write_json(
            path,
            {"pid": pid, "started": process_start_time(pid), "what": what, "t": time.time()},
            private=True,
        )
        return cls(path, pid)

    @property
    def held(self) -> bool:
        return self.path is not None and self.path.exists()

    def release(self) -> None:
        if self.path is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.path = None


def live_leases(files: ServerFiles, *, prune: bool = True) -> list[dict[str, Any]]:
    """The leases whose process still runs; those of dead processes are removed."""
    found = []
    try:
        paths = sorted(files.leases.glob("*.json"))
    except OSError:
        return []
    for path in paths:
        data = _read_json(path)
        try:
            alive = is_running(int(data["pid"]), data.get("started"))
        except (KeyError, TypeError, ValueError):
            alive = False
        if alive:
            found.append(data)
        elif prune:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
    return found


# ports -------------------------------------------------------------------------------------
def port_free(port: int) -> bool:
    """Whether a server could listen on ``port`` of 127.0.0.1 now (as uvicorn binds it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


# files -------------------------------------------------------------------------------------
def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_json(path: Path, data: dict[str, Any], *, private: bool) -> None:
    """``files.write_json``; ``private``: mode 0600, else 0644."""
    write_json(path, data, mode=0o600 if private else 0o644)
