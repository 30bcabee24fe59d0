"""The standby supervisor's process: ``python -m jupyter_air.workloads.standby_process``.

Started by a Ray job run's supervisor as it ends (``ray_standby.start_standby``), it does what a
supervisor does before its first command — its imports, its Ray driver, a node runner on each
Ray node with a CPU, the cluster's queue — then offers itself (``ray_standby.py`` says how a
submission finds it and what it checks) until a job run is handed to it or it ends. Handed one,
it becomes that job run's supervisor (``supervisor.serve``), with what it made ready.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hmac
import json
import logging
import os
import secrets
import signal
import socket
import sys
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..config import KEEP_RUNNERS_S
from ..files import write_json
from ..private import open_private, private_folder
from .ray_standby import ANSWER_S, STANDBY_NODES, standby_folder, standby_key

if TYPE_CHECKING:
    from ..backends.ray_backend import RayBackend
    from .store import JobStore

log = logging.getLogger("jupyter_air.workloads.ray_standby")


class Standby:
    """A supervisor made ready, waiting for a job run of its key."""

    def __init__(self, store: JobStore, cluster: str | None, key: str) -> None:
        self.store = store
        self.cluster = cluster
        self.key = key
        self.folder = standby_folder(store.data_dir)
        self.offer = self.folder / f"{key}.json"
        self.token = secrets.token_urlsafe(32)
        self.stop = threading.Event()
        self.backend: RayBackend | None = None
        self._loaded: dict[str, float] = {}

    def prepare(self) -> None:
        """What a supervisor does before its first command, done now: its imports, its Ray
        driver, a node runner on each Ray node with a CPU, the cluster's queue."""
        import ray

        from ..backends import supervision  # noqa: F401  (what a supervisor imports)
        from ..backends.ray_backend import NAMESPACE, RayBackend
        from ..backends.ray_queue import line_keeper
        from ..backends.ray_runners import new_runner, warm_probe_worker
        from . import attempts, tracking_calls  # noqa: F401

        backend = self.backend = RayBackend(self.cluster)
        backend.connect()
        nodes = [n for n in backend.nodes() if n.cpus >= 1][:STANDBY_NODES]
        runners = {node.node_id: new_runner(node.node_id) for node in nodes}
        asks = [actor.where.remote() for actor in runners.values()]
        # a GPU node's bundle is asked for its GPUs by a task: a worker of this driver ready there
        asks += [warm_probe_worker(node.node_id) for node in nodes if node.gpus]
        ray.get([*asks, line_keeper(NAMESPACE).leave.remote("")], timeout=120)
        for node in nodes:
            backend.runners.give_back(node.node_id, runners[node.node_id])
            if node.gpus:  # that worker, kept busy until the bundle task
                backend.runners.hold(node.node_id)
        self._loaded = _loaded_files()
        log.info("ready: %d node runners on %s", len(runners), backend.address)

    def wait(self) -> tuple[str, str] | None:
        """Offer this standby until a job run takes it (its id and working folder), or until
        it ends (None)."""
        keep_s = KEEP_RUNNERS_S.get()
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(0.5)
        try:
            self._publish(listener.getsockname()[1])
            until = time.monotonic() + keep_s
            while not self.stop.is_set() and time.monotonic() < until:
                if not self.offer.exists():
                    log.info("the offer file is gone: ending")
                    return None
                try:
                    conn, _ = listener.accept()
                except TimeoutError:
                    continue
                with conn:
                    taken = self._answer(conn, listener)
                if taken is not None or listener.fileno() < 0:
                    return taken
            return None
        finally:
            listener.close()
            self.withdraw()

    def _answer(self, conn: socket.socket, listener: socket.socket) -> tuple[str, str] | None:
        conn.settimeout(2.0)
        file = conn.makefile("rb")
        try:
            request = json.loads(file.readline(1 << 16))
        except (OSError, ValueError):
            return None
        if not isinstance(request, dict) or not hmac.compare_digest(
            str(request.get("token", "")), self.token
        ):
            _reply(conn, {"refused": "a wrong token"})
            return None
        if request.get("ask") == "nodes":
            assert self.backend is not None
            try:
                _reply(conn, {"nodes": [vars(n) for n in self.backend.nodes()]})
            except Exception as error:  # the asker reads the cluster itself
                _reply(conn, {"refused": f"the cluster's nodes: {error}"})
            return None
        job_id, cwd = str(request.get("job", "")), str(request.get("cwd", ""))
        refused = self._refusal(job_id, cwd, str(request.get("key", "")))
        if refused is not None:
            _reply(conn, {"refused": refused})
            if refused.startswith("jupyter_air changed"):
                listener.close()  # an upgrade: this standby serves nobody any more
            return None
        listener.close()  # no second job run
        self.withdraw()
        from ..pids import process_start_time

        _reply(conn, {"pid": os.getpid(), "started": process_start_time(os.getpid())})
        conn.settimeout(ANSWER_S)
        with contextlib.suppress(OSError):
            if file.readline(16).strip() == b"go":
                # a sign of life before the submission records this (older) process as the
                # job run's supervisor: a read meanwhile must not find it silent for minutes
                with contextlib.suppress(Exception):  # (the heartbeat writes it again)
                    self.store.update_job(job_id, supervisor_seen_at=time.time())
                return job_id, cwd
        log.info("the submission of %s did not confirm: ending", job_id)
        return None

    def _refusal(self, job_id: str, cwd: str, key: str) -> str | None:
        from .store import JobNotFound

        if key != self.key:
            return "another environment"
        if _changed(self._loaded):
            return "jupyter_air changed since this standby started"
        if not os.path.isdir(cwd):
            return f"no working folder {cwd}"
        try:
            job = self.store.get_job(job_id)
        except JobNotFound:
            return f"no job run {job_id}"
        if job.backend != "ray" or (job.cluster or "") != (self.cluster or ""):
            return "a job run for another backend or cluster"
        if job.status != "PENDING" or job.supervisor_pid is not None:
            return f"job run {job_id} is {job.status} with a supervisor"
        return None

    def _publish(self, port: int) -> None:
        from ..pids import process_start_time

        offer = {
            "port": port,
            "token": self.token,
            "pid": os.getpid(),
            "started": process_start_time(os.getpid()),
            "cluster": self.cluster or "",
        }
        private_folder(self.folder)
        write_json(self.offer, offer)  # 0600, whole or not at all

    def withdraw(self) -> None:
        """No submission finds this standby any more."""
        with contextlib.suppress(OSError):
            if json.loads(self.offer.read_text()).get("pid") == os.getpid():
                self.offer.unlink()

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()  # its runners end
            self.backend = None


def _reply(conn: socket.socket, answer: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):
        conn.sendall((json.dumps(answer) + "\n").encode())


def _loaded_files() -> dict[str, float]:
    """The files of jupyter_air this process loaded, and when each was last changed."""
    found = {}
    for name, module in list(sys.modules.items()):
        path = getattr(module, "__file__", None)
        if name.startswith("jupyter_air") and path:
            with contextlib.suppress(OSError):
                found[path] = os.stat(path).st_mtime
    return found


def _changed(loaded: Mapping[str, float]) -> bool:
    """Whether a file of ``loaded`` (``_loaded_files``) changed or went since."""
    for path, mtime in loaded.items():
        try:
            if os.stat(path).st_mtime != mtime:
                return True
        except OSError:
            return True
    return False


def _become_supervisor(
    standby: Standby,
    job_id: str,
    cwd: str,
    node_env: Mapping[str, str],
    spawned: Mapping[str, str],
) -> int:
    """This process, from now on the supervisor of ``job_id``, as a new one would be."""
    from .paths import job_dir
    from .supervisor import serve

    with open_private(job_dir(standby.store.data_dir, job_id) / "supervisor.log") as out:
        for fd in (1, 2):
            os.dup2(out.fileno(), fd)
    os.chdir(cwd)
    os.environ["PWD"] = cwd
    log.info("standby %d is the supervisor of job run %s", os.getpid(), job_id)
    backend, standby.backend = standby.backend, None
    return serve(standby.store, job_id, node_env, spawned=spawned, backend=backend)


def main(argv: list[str] | None = None) -> int:
    from ..backends.ray_import import without_slow_optional_imports
    from ..config import data_dir
    from ..pids import process_start_time
    from .store import JobStore
    from .tracking_calls import bound_mlflow_calls

    without_slow_optional_imports()
    parser = argparse.ArgumentParser(
        prog="python -m jupyter_air.workloads.standby_process",
        description="A Ray job run's supervisor, ready before the job run (started by one).",
    )
    parser.add_argument("--cluster", default="")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    cluster = args.cluster or None
    spawned = dict(os.environ)  # as it was started: what a submission compares
    key = standby_key(spawned, cluster)
    node_env = bound_mlflow_calls()
    store = JobStore.for_data_dir(data_dir())
    folder = private_folder(standby_folder(store.data_dir))
    lock = open_private(folder / f"{key}.lock")
    try:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        log.info("a standby for this environment is there already")
        return 0
    lock.truncate(0)  # who holds it, for end_standbys
    me = {"pid": os.getpid(), "started": process_start_time(os.getpid())}
    lock.write(json.dumps(me).encode())
    lock.flush()
    standby = Standby(store, cluster, key)
    signal.signal(signal.SIGTERM, lambda *_: standby.stop.set())
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    taken = None
    try:
        standby.prepare()
        taken = standby.wait()
    except Exception:
        log.exception("the standby failed")
    finally:
        lock.truncate(0)
        lock.close()  # the next standby may start
        if taken is None:
            standby.close()
    if taken is None:
        log.info("ending")
        return 0
    return _become_supervisor(standby, *taken, node_env, spawned)


if __name__ == "__main__":
    sys.exit(main())
