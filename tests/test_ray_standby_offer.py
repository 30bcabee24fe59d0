"""A standby supervisor's offer, without a cluster: a submission hands it a Ray job run only
with the offer's token, for the environment and cluster it was made for, for a job run that is
waiting for a supervisor, and only one; what it refuses it keeps offering itself for; an
upgrade of jupyter_air ends it; the offer is its owner's only; `end_standbys` ends one by its
pid."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
import time

import pytest
from test_workloads_store import new_job

from jupyter_air.workloads.ray_standby import (
    _ask,
    end_standbys,
    hand_over,
    standby_folder,
    standby_key,
)
from jupyter_air.workloads.standby_process import Standby
from jupyter_air.workloads.store import JobStore

CLUSTER = "10.0.0.5:6379"
ENV = {"PATH": "/usr/bin", "JUPYTER_AIR_DATA_DIR": "/data", "MLFLOW_TRACKING_URI": "http://x"}


@pytest.fixture
def offered(tmp_path):
    """A standby offering itself for ``ENV`` on ``CLUSTER`` (its wait in a thread), the store,
    and what its wait returned once it ended."""
    store = JobStore.for_data_dir(tmp_path)
    standby = Standby(store, CLUSTER, standby_key(ENV, CLUSTER))
    result: dict = {}
    thread = threading.Thread(target=lambda: result.setdefault("taken", standby.wait()))
    thread.start()
    deadline = time.monotonic() + 30
    while not standby.offer.exists():
        assert time.monotonic() < deadline, "the standby did not offer itself"
        time.sleep(0.01)
    yield standby, store, result, thread
    standby.stop.set()
    thread.join(timeout=30)


def ray_job(store, **fields):
    return new_job(store, backend="ray", cluster=CLUSTER, **fields)


def test_a_waiting_ray_job_run_is_handed_over_once(offered, tmp_path):
    standby, store, result, thread = offered
    assert stat.S_IMODE(standby.offer.stat().st_mode) == 0o600
    assert stat.S_IMODE(standby.folder.stat().st_mode) == 0o700
    first, second = ray_job(store), ray_job(store)
    taken = hand_over(tmp_path, first.id, ENV, str(tmp_path), CLUSTER)
    assert taken is not None and taken[0] == os.getpid()  # the standby is this process here
    thread.join(timeout=30)
    assert result["taken"] == (first.id, str(tmp_path))
    assert not standby.offer.exists()  # nobody else finds it
    assert hand_over(tmp_path, second.id, ENV, str(tmp_path), CLUSTER) is None


def test_what_it_refuses_leaves_it_offered(offered, tmp_path):
    standby, store, result, thread = offered
    offer = json.loads(standby.offer.read_text())
    wrong = {**offer, "token": "not-the-token"}
    job = ray_job(store)
    answer, conn = _ask(wrong, {"ask": "job", "job": job.id, "cwd": str(tmp_path)})
    conn.close()
    assert answer == {"refused": "a wrong token"}
    # another environment, another cluster's job run, a job run with a supervisor, none
    assert hand_over(tmp_path, job.id, {**ENV, "EXTRA": "1"}, str(tmp_path), CLUSTER) is None
    other = new_job(store, backend="ray", cluster="10.0.0.6:6379")
    key = standby_key(ENV, CLUSTER)
    for job_id, refused in [
        (other.id, "a job run for another backend or cluster"),
        (new_job(store).id, "a job run for another backend or cluster"),  # local
        ("000000000000", "no job run 000000000000"),
    ]:
        answer, conn = _ask(offer, {"ask": "job", "job": job_id, "cwd": str(tmp_path), "key": key})
        conn.close()
        assert answer == {"refused": refused}
    store.set_supervisor(job.id, 1, None)
    assert hand_over(tmp_path, job.id, ENV, str(tmp_path), CLUSTER) is None
    assert thread.is_alive() and standby.offer.exists()
    later = ray_job(store)
    assert hand_over(tmp_path, later.id, ENV, str(tmp_path), CLUSTER) is not None


def test_the_key_is_the_environment_but_the_working_folder(tmp_path):
    key = standby_key(ENV, CLUSTER)
    assert standby_key({**ENV, "PWD": "/elsewhere", "RAY_CLIENT_MODE": "0"}, CLUSTER) == key
    assert standby_key({**ENV, "MLFLOW_TRACKING_URI": "http://y"}, CLUSTER) != key
    assert standby_key(ENV, None) != key
    assert hand_over(tmp_path, "000000000000", ENV, str(tmp_path), CLUSTER) is None  # none


def test_an_upgrade_of_jupyter_air_ends_it(offered, tmp_path):
    standby, store, result, thread = offered
    changed = tmp_path / "module.py"
    changed.write_text("")
    standby._loaded = {str(changed): changed.stat().st_mtime - 10}
    assert hand_over(tmp_path, ray_job(store).id, ENV, str(tmp_path), CLUSTER) is None
    thread.join(timeout=30)
    assert not thread.is_alive() and result["taken"] is None
    assert not standby.offer.exists()


def test_end_standbys_ends_one_by_its_pid(tmp_path):
    """A process holding a standby's lock, as a standby getting ready does, is told to end."""
    folder = standby_folder(tmp_path)
    folder.mkdir(parents=True)
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(folder / "k.lock")], stdout=subprocess.PIPE
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"
        assert end_standbys(tmp_path) == [holder.pid]
        assert holder.wait(timeout=30) == -15  # SIGTERM
        assert end_standbys(tmp_path) == []  # the lock is free: nobody is told anything
    finally:
        holder.kill()
        holder.wait()


HOLDER = """
import fcntl, json, os, sys, time
from jupyter_air.pids import process_start_time
lock = open(sys.argv[1], "ab")
fcntl.flock(lock.fileno(), fcntl.LOCK_EX)
lock.write(json.dumps({"pid": os.getpid(), "started": process_start_time(os.getpid())}).encode())
lock.flush()
print("holding", flush=True)
time.sleep(120)
"""
