"""Standby supervisors on a real Ray cluster on loopback (tests/ray_cluster.py): a Ray job run
leaves one, ready; the next job run of the data folder is handed to it and runs as any other
(its nodes' lines home, cancel and a killed supervisor leave nothing on any node); `air run`
checks the shape with it, without importing Ray; it ends by itself after `KEEP_RUNNERS_S`, and
none is left with 0."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from workloads_support import (
    PY,
    air,
    alive,
    wait_for,
    wait_until,
    write,
)

from jupyter_air.pids import is_running
from jupyter_air.workloads.ray_standby import end_standbys, standby_folder

NODES = "compute: {num_nodes: 2, accelerator_type: CPU, backend: ray}\n"
SLEEPER = """
import os, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
print(f"node {os.environ['NODE_RANK']} ready", flush=True)
time.sleep(600)
"""


@pytest.fixture
def env(ray_env):
    ray_env.cluster.ensure(2)
    return ray_env


def submit(env, name: str, command: str) -> str:
    spec = write(env.tmp, f"{name}.yaml", f"experiment_name: sb-{name}-{env.tmp.name}\n{NODES}"
                 f"command: {command}\n")  # fmt: skip
    result = air("run", str(spec), "-o", "json", cwd=env.tmp)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["id"]


def ready_standby(env) -> int:
    """The pid of the standby the data folder offers (waited for, bounded)."""
    found: list[int] = []

    def offered() -> bool:
        for path in standby_folder(env.data).glob("*.json"):
            offer = json.loads(path.read_text())
            if is_running(offer["pid"], offer["started"]):
                found.append(offer["pid"])
                return True
        return False

    wait_until(offered, 120, "a standby supervisor to be ready")
    return found[0]


def lines(env, job_id: str) -> str:
    folder = Path(env.data) / "workloads" / "jobs" / job_id / "attempt_1"
    return "".join(path.read_text() for path in sorted(folder.glob("node_*.log")))


def ready_nodes(env, job_id: str) -> bool:
    return lines(env, job_id).count(" ready") == 2


def test_the_next_ray_job_run_is_handed_to_the_standby_the_last_one_left(env):
    first = submit(env, "first", "echo first $NODE_RANK")
    assert wait_for(env.store, first, timeout=180).status == "SUCCEEDED"
    standby = ready_standby(env)
    assert standby != env.store.get_job(first).supervisor_pid

    job_id = submit(env, "second", "echo second node $NODE_RANK of $NNODES")
    assert env.store.get_job(job_id).supervisor_pid == standby
    job = wait_for(env.store, job_id, timeout=180)
    assert job.status == "SUCCEEDED", job.reason
    assert "second node 0 of 2" in lines(env, job_id)
    assert "second node 1 of 2" in lines(env, job_id)
    machines = {n.machine for n in job.attempts[0].nodes}
    assert len(machines) == 2 and all(machines)
    log = (Path(env.data) / "workloads" / "jobs" / job_id / "supervisor.log").read_text()
    assert f"standby {standby} is the supervisor of job run {job_id}" in log
    assert ready_standby(env) != standby  # it left one in its turn


def test_air_run_checks_the_shape_with_the_standby_without_importing_ray(
    env, tmp_path, monkeypatch
):
    assert wait_for(env.store, submit(env, "first", "'true'"), timeout=180).status == "SUCCEEDED"
    ready_standby(env)
    shadow = tmp_path / "no-ray" / "ray"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('air run imported ray')\n")
    spec = write(env.tmp, "big.yaml", "experiment_name: too-big\ncompute: {num_nodes: 9, "
                 "accelerator_type: CPU, backend: ray}\ncommand: 'true'\n")  # fmt: skip
    monkeypatch.setenv(
        "PYTHONPATH", f"{shadow.parent}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"
    )
    result = air("run", str(spec), cwd=env.tmp)
    assert result.returncode == 4, result.stderr
    assert "Not enough Ray nodes: this workload needs 9 nodes with 1 CPU each" in result.stderr
    assert f"has {env.cluster.size} nodes: 127.0.0.1 (2 CPU, 2 GPU)" in result.stderr


def test_a_job_run_on_a_standby_leaves_nothing_when_cancelled_or_its_supervisor_killed(env):
    from test_workloads_ray import job_processes

    write(env.tmp, "sleeper.py", SLEEPER)
    assert wait_for(env.store, submit(env, "first", "'true'"), timeout=180).status == "SUCCEEDED"
    standby = ready_standby(env)
    cancelled = submit(env, "cancelled", f"{PY} sleeper.py")
    assert env.store.get_job(cancelled).supervisor_pid == standby
    wait_until(lambda: ready_nodes(env, cancelled), 120, "both nodes to run")
    assert len(job_processes(cancelled)) >= 4  # each node's command and its child
    result = air("cancel", cancelled)
    assert result.returncode == 0, result.stderr
    assert env.store.get_job(cancelled).status == "CANCELLED"
    assert job_processes(cancelled) == []

    standby = ready_standby(env)
    killed = submit(env, "killed", f"{PY} sleeper.py")
    assert env.store.get_job(killed).supervisor_pid == standby
    wait_until(lambda: ready_nodes(env, killed), 120, "both nodes to run")
    os.kill(standby, signal.SIGKILL)  # Ray ends its actors, each node's keeper its command
    wait_until(lambda: job_processes(killed) == [], 90, "the killed job's processes to end")
    assert wait_for(env.store, killed, timeout=60).status == "FAILED"


def test_a_standby_ends_by_itself_and_none_is_left_with_0(env, monkeypatch):
    monkeypatch.setenv("JUPYTER_AIR_KEEP_RUNNERS_S", "3")
    assert wait_for(env.store, submit(env, "first", "'true'"), timeout=180).status == "SUCCEEDED"
    standby = ready_standby(env)
    wait_until(lambda: not alive(standby), 90, "the standby to end")
    assert list(standby_folder(env.data).glob("*.json")) == []

    monkeypatch.setenv("JUPYTER_AIR_KEEP_RUNNERS_S", "0")
    logs = set(standby_folder(env.data).glob("*.log"))  # one per standby environment started
    job = wait_for(env.store, submit(env, "none", "'true'"), timeout=180)
    # a supervisor starts its standby before it exits (its log file first): none was
    wait_until(lambda: not is_running(job.supervisor_pid, job.supervisor_started), 60)
    assert set(standby_folder(env.data).glob("*.log")) == logs
    assert end_standbys(env.data) == []
