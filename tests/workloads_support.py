"""Helpers shared by the workloads and CLI tests (imported by them; no fixtures here)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from jupyter_air.workloads.store import TERMINAL, JobRun, JobStore


def server_config(data_dir: Path) -> dict:
    """JupyterAir settings of a test server that runs workloads: no GPUs, no MLflow server of its
    own (the session's), its data folder ``data_dir``."""
    return {"gpu_backend": "none", "mlflow_embedded": False, "data_dir": str(data_dir)}


def air_environment(monkeypatch, tmp_path: Path, tracking_uri: str | None) -> Path:
    """This process (and what it starts) as a shell outside Jupyter would be: its own data
    folder, no running Jupyter server to find, the session's tracking server. Returns the data
    folder."""
    from tracking_support import unique, use_server

    if tracking_uri:
        use_server(monkeypatch, tracking_uri)
    else:
        monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
        monkeypatch.setenv("JUPYTERHUB_USER", unique("user"))
    data = tmp_path / "data"
    runtime = tmp_path / "runtime"
    runtime.mkdir(exist_ok=True)
    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(data))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JUPYTER_AIR_KILL_GRACE_S", "3")
    monkeypatch.setenv("JUPYTER_AIR_SYSTEM_METRICS_INTERVAL_S", "1")
    for name in ("JUPYTER_AIR_MLFLOW_UI", "JUPYTER_AIR_BASE_URL", "JUPYTER_AIR_SERVER_URL"):
        monkeypatch.delenv(name, raising=False)
    bin_dir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", bin_dir + os.pathsep + os.environ.get("PATH", ""))
    return data


def cli_env(monkeypatch, tmp_path: Path, mlflow_server, **more: Any) -> SimpleNamespace:
    """A CLI test's world (``air_environment`` on the session's tracking server): ``store``,
    ``data``, ``tmp``, ``url``, ``client`` (an MLflow client of that server), and ``more``."""
    import mlflow

    data = air_environment(monkeypatch, tmp_path, mlflow_server.url)
    return SimpleNamespace(
        store=JobStore.for_data_dir(data),
        data=data,
        tmp=tmp_path,
        url=mlflow_server.url,
        client=mlflow.MlflowClient(mlflow_server.url),
        **more,
    )


def submit_yaml(env: SimpleNamespace, text: str, inventory: Any = None) -> JobRun:
    """Submit the workload ``text`` (YAML; paths relative to ``env.tmp``) to ``env.store``, on a
    machine with no GPUs unless ``inventory`` (a ``GpuInventory``) says otherwise."""
    from jupyter_air.workloads.capacity import GpuInventory
    from jupyter_air.workloads.jobs import submit
    from jupyter_air.workloads.spec_loading import load_spec

    spec = load_spec(text, base_dir=env.tmp)
    return submit(
        spec, store=env.store, spec_yaml=text, inventory=inventory or GpuInventory([], "none")
    )


def cpu_workload(env: SimpleNamespace, name: str, rest: str, nodes: int = 1) -> str:
    """A workload's YAML: ``nodes`` CPU nodes, in an experiment of this test's own
    (``name``-<its folder>), then the lines ``rest``."""
    compute = "accelerator_type: CPU" + (f", num_nodes: {nodes}" if nodes > 1 else "")
    return f"experiment_name: {name}-{env.tmp.name}\ncompute: {{{compute}}}\n{rest}"


def write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def air(
    *args: str, timeout: float = 120, cwd: Path | None = None, columns: int | None = None
) -> subprocess.CompletedProcess:
    """Run the ``air`` command (as ``python -m jupyter_air.cli``) to its end, its output not
    a terminal: lines are cut to fit ``columns`` only when given (``COLUMNS``)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    return subprocess.run(
        [sys.executable, "-m", "jupyter_air.cli", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=cwd,
        env=env,
    )


def air_json(*args: str, cwd: Path | None = None) -> object:
    result = air(*args, "--output", "json", cwd=cwd)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def wait_for(store: JobStore, job_id: str, timeout: float = 90.0, status=TERMINAL) -> JobRun:
    from jupyter_air.workloads.jobs import refresh

    deadline = time.monotonic() + timeout
    while True:
        job = refresh(store, store.get_job(job_id))
        if job.status in status:
            return job
        if time.monotonic() > deadline:
            log = store.data_dir / "workloads" / "jobs" / job_id / "supervisor.log"
            text = log.read_text()[-3000:] if log.exists() else ""
            raise AssertionError(f"job {job_id} still {job.status}\n{text}")
        time.sleep(0.1)


def wait_supervisor_gone(job: JobRun, timeout: float = 60.0) -> None:
    """Until the job run's supervisor has exited: it still closes the store and its files (SQLite's
    -wal and -shm go) after the job run's status says it ended."""
    from jupyter_air.pids import is_running

    wait_until(
        lambda: not is_running(job.supervisor_pid, job.supervisor_started),
        timeout,
        f"the supervisor of job run {job.id} to exit",
    )


def wait_until(predicate, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)


def end_standbys_of(store: JobStore) -> None:
    """A Ray test's data folder left as it found the machine: its supervisors gone (each
    leaves a standby supervisor as it ends), then its standbys (workloads/ray_standby.py)."""
    from jupyter_air.pids import is_running
    from jupyter_air.workloads.ray_standby import end_standbys

    for job in store.list_jobs(limit=1000) if store.path.exists() else []:
        wait_until(lambda j=job: not is_running(j.supervisor_pid, j.supervisor_started), 60)
    ended = end_standbys(store.data_dir)
    wait_until(lambda: not any(alive(pid) for pid in ended), 60, "the standbys to end")


def alive(pid: int) -> bool:
    import psutil

    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


PY = sys.executable


def deny_reading(monkeypatch, folder):
    """The OS refusing this user the files under ``folder`` (EACCES), as for another user's job
    (chmod cannot deny root, who runs these tests in CI)."""
    import builtins

    from jupyter_air.logs import query, scan

    def guarded_open(path, mode="r", *args, **kwargs):
        target = Path(path).resolve()
        if folder in (target, *target.parents):
            raise PermissionError(13, "Permission denied", str(path))
        return builtins.open(path, mode, *args, **kwargs)

    for module in (scan, query):  # the log files read, the files a download writes
        monkeypatch.setattr(module, "open", guarded_open, raising=False)


# GET a URL with a token, as a process of its own (where the server runs): its status and JSON
GET = """
import json, sys, urllib.error, urllib.request
request = urllib.request.Request(sys.argv[1], headers={"Authorization": f"token {sys.argv[2]}"})
try:
    with urllib.request.urlopen(request, timeout=10) as response:
        print(json.dumps([response.status, json.loads(response.read())]))
except urllib.error.HTTPError as error:
    print(json.dumps([error.code, json.loads(error.read() or b"null")]))
"""


class JupyterServer:
    """A real `jupyter server` with jupyter-air on a data folder, in a session of its own:
    ``extra`` arguments, ``env`` its environment (default: this process's), started when
    ``ready(server)`` holds (default: it answers)."""

    def __init__(
        self,
        tmp: Path,
        data: Path,
        *,
        token: str = "fault-test-token",
        extra: tuple[str, ...] = (),
        env: dict[str, str] | None = None,
        ready: Any = None,
        name: str = "jupyter",
        on: Any = None,
    ) -> None:
        """``on``: a command as run where the server runs (a rig's host: ``Host.argv``)."""
        from jupyter_air.server.mlflow_process import free_port

        self.tmp, self.data, self.token, self.extra, self.env = tmp, data, token, extra, env
        self.on = on
        self.ready = ready or (lambda server: server.mlflow_state() is not None)
        self.port = free_port()
        self.log = tmp / f"{name}.log"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        command = [
            sys.executable, "-m", "jupyter_server", "--no-browser", "--allow-root",
            f"--port={self.port}", f"--IdentityProvider.token={self.token}",
            f"--ServerApp.root_dir={self.tmp}", f"--JupyterAir.data_dir={self.data}",
            *self.extra,
        ]  # fmt: skip
        if not any(a.startswith("--JupyterAir.gpu_backend=") for a in self.extra):
            command.append("--JupyterAir.gpu_backend=none")  # one value: traitlets takes no two
        with open(self.log, "ab") as log:
            self.process = subprocess.Popen(
                self.on(command) if self.on else command, stdout=log,
                stderr=subprocess.STDOUT, start_new_session=True, env=self.env,
            )  # fmt: skip
        wait_until(lambda: self.ready(self), 180, "the Jupyter server")

    def get(self, path: str, token: str | None = None) -> tuple[int, Any]:
        """``GET <server>/path`` with a token (default: the server's): the status and JSON."""
        url = f"http://127.0.0.1:{self.port}/{path}"
        if self.on is not None:  # from where it runs
            done = subprocess.run(
                self.on([sys.executable, "-c", GET, url, token or self.token]),
                capture_output=True, text=True, timeout=30,
            )  # fmt: skip
            if done.returncode != 0:
                raise OSError(done.stderr[-2000:])
            status, body = json.loads(done.stdout)
            return status, body
        import urllib.error
        import urllib.request

        request = urllib.request.Request(url)
        request.add_header("Authorization", f"token {token or self.token}")
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.loads(response.read())
        except urllib.error.HTTPError as error:
            return error.code, json.loads(error.read() or b"null")

    def mlflow_state(self) -> str | None:
        try:
            return self.get("air/api/mlflow")[1]["state"]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def stop(self) -> None:
        import signal

        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.process = None
