"""Reads that only read: the workloads API answers a job run as the store has it — a supervisor
that stopped beating shows as stale, and no request looks at or signals a process — while the
server's background watch ends the job runs whose supervisor is gone, and finishes
cancellations a supervisor left undone. Real supervisors, nodes and processes."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest
from workloads_support import PY, alive, server_config

from jupyter_air.workloads import heartbeat, load_spec, submit
from jupyter_air.workloads.connection import Connection
from jupyter_air.workloads.jobs import refresh
from jupyter_air.workloads.store import JobStore

SLOW = f"""
experiment_name: reads
compute: {{accelerator_type: CPU}}
command: {PY} -c "import time; [time.sleep(0.2) for _ in range(1500)]"
"""


@pytest.fixture
def watch_every_s() -> float:
    return 3600.0  # one pass at start, then none during the test


@pytest.fixture
def air_config(tmp_path) -> dict:
    return server_config(tmp_path / "air")


@pytest.fixture
def server_env(mlflow_env, monkeypatch, watch_every_s) -> dict[str, str]:
    monkeypatch.setattr("jupyter_air.server.workload_service.WATCH_EVERY_S", watch_every_s)
    return {**mlflow_env, "JUPYTER_AIR_KILL_GRACE_S": "2"}


@pytest.fixture
def store(jp_serverapp, tmp_path) -> JobStore:
    return JobStore.for_data_dir(tmp_path / "air")


async def until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.1)


def dead_pid() -> int:
    process = subprocess.Popen([sys.executable, "-c", "pass"])
    process.wait()
    return process.pid


def running_job(store: JobStore, job_id: str, supervisor: int, seen_ago_s: float) -> None:
    """A job run RUNNING under ``supervisor``, last seen ``seen_ago_s`` ago."""
    store.create_job(
        id=job_id, experiment_name="reads", run_name="r", command="true",
        compute={"num_nodes": 1}, max_retries=0, spec={},
    )  # fmt: skip
    assert store.mark_running(job_id)
    store.set_supervisor(job_id, supervisor, time.time() - 60)
    store.update_job(job_id, supervisor_seen_at=time.time() - seen_ago_s)


async def test_a_read_returns_what_is_stored_and_says_the_supervisor_is_stale(
    jp_fetch, jp_serverapp, store
):
    service = jp_serverapp.web_app.settings["jupyter_air"]["workloads"]
    await until(lambda: service.watch_passes >= 1, 30, "the watch's first pass")
    running_job(store, "0000000000a1", dead_pid(), seen_ago_s=45)
    running_job(store, "0000000000a2", os.getpid(), seen_ago_s=1)

    listing = json.loads((await jp_fetch("air", "api", "workloads")).body)
    jobs = {job["id"]: job for job in listing["workloads"]}
    stale, fresh = jobs["0000000000a1"], jobs["0000000000a2"]
    assert stale["status"] == "RUNNING" and stale["reason"] is None
    assert 44 <= stale["supervisor_silent_s"] < 60
    assert fresh["status"] == "RUNNING" and fresh["supervisor_silent_s"] is None
    one = json.loads((await jp_fetch("air", "api", "workloads", "0000000000a1")).body)
    assert one["status"] == "RUNNING" and one["supervisor_silent_s"] >= 44
    # the reads changed nothing: the job run is as it was stored
    kept = store.get_job("0000000000a1")
    assert kept.status == "RUNNING" and kept.ended_at is None and kept.reason is None


@pytest.mark.parametrize("watch_every_s", [0.2])
async def test_the_server_ends_a_job_run_whose_supervisor_died_without_being_asked(
    jp_serverapp, store, mlflow_server
):
    spec = load_spec(SLOW)
    job = submit(spec, store=store, connection=Connection(tracking_uri=mlflow_server.url))
    await until(lambda: store.get_job(job.id).attempts, 60, "the first attempt")
    await until(lambda: store.get_job(job.id).attempts[0].nodes, 30, "its node")
    node_pid = store.get_job(job.id).attempts[0].nodes[0].pid
    # the supervisor beats every few seconds
    first = store.get_job(job.id).supervisor_seen_at
    assert first is not None
    await until(
        lambda: (store.get_job(job.id).supervisor_seen_at or 0) > first,
        heartbeat.EVERY_S * 3,
        "a second heartbeat",
    )

    supervisor = store.get_job(job.id).supervisor_pid
    os.kill(supervisor, signal.SIGKILL)
    await until(lambda: store.get_job(job.id).status == "FAILED", 30, "the watch to end it")
    ended = store.get_job(job.id)
    assert "stopped unexpectedly" in ended.reason
    assert ended.attempts[0].status == "FAILED"
    await until(lambda: not alive(node_pid), 15, "its node to be stopped")


def test_a_cancellation_the_supervisor_left_undone_is_finished(tmp_path):
    """A supervisor that ignores SIGTERM, asked to cancel longer ago than it may take: the check
    (the server's watch, `air get run`) kills it and ends the job run CANCELLED."""
    store = JobStore.for_data_dir(tmp_path / "air")
    stubborn = subprocess.Popen(
        [sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, "
         "signal.SIG_IGN); print('ready', flush=True); time.sleep(600)"],
        stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert stubborn.stdout.readline().strip() == "ready"
        from jupyter_air.pids import process_start_time

        running_job(store, "0000000000b1", stubborn.pid, seen_ago_s=1)
        store.set_supervisor("0000000000b1", stubborn.pid, process_start_time(stubborn.pid))
        store.update_job("0000000000b1", cancel_requested=time.time() - 5)
        # asked a moment ago: the supervisor is left to do it
        assert refresh(store, store.get_job("0000000000b1")).status == "RUNNING"
        assert stubborn.poll() is None
        store.update_job("0000000000b1", cancel_requested=time.time() - 3600)
        ended = refresh(store, store.get_job("0000000000b1"))
        assert ended.status == "CANCELLED"
        assert "did not stop in time" in ended.reason
        assert stubborn.wait(timeout=10) == -signal.SIGKILL
    finally:
        if stubborn.poll() is None:
            stubborn.kill()
            stubborn.wait()


def test_staleness_is_read_from_the_heartbeat_alone():
    from jupyter_air.workloads.store import JobRun

    now = 1_000_000.0
    fields = dict(
        id="0000000000c1", reason=None, experiment_name="e", experiment_id=None, run_name="r",
        command="true", compute={}, gpus=[], max_retries=0, timeout_minutes=None,
        working_dir=None, spec={}, spec_yaml=None, spec_path=None, source=None, notebook=None,
        user=None, tracking_uri=None, server_url=None, mlflow_ui=None, started_at=None,
        ended_at=None, supervisor_pid=123, cancel_requested=None, logs_purged_at=None,
        submitted_at=now - 500, supervisor_started=now - 400,
    )  # fmt: skip
    job = JobRun(status="RUNNING", supervisor_seen_at=now - 10, **fields)
    assert heartbeat.silent_s(job, now) is None
    job.supervisor_seen_at = now - heartbeat.STALE_AFTER_S - 1
    assert heartbeat.silent_s(job, now) == heartbeat.STALE_AFTER_S + 1
    job.supervisor_seen_at = None  # never beat (an older supervisor): since it started
    assert heartbeat.silent_s(job, now) == 400
    job.status = "SUCCEEDED"
    assert heartbeat.silent_s(job, now) is None
