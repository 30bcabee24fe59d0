"""A process is still the one we started (supervisors, MLflow's guard, leases, ranks) however the
machine's clock moves: a false "gone" ends a healthy job and kills its processes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from jupyter_air import pids


@pytest.fixture
def child():
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    yield process
    process.kill()
    process.wait()


def test_a_live_process_is_told_from_one_created_at_another_time(child):
    started = pids.process_start_time(child.pid)
    assert started is not None and abs(started - time.time()) < 60
    assert pids.is_running(child.pid, started)
    assert pids.is_running(child.pid)
    assert not pids.is_running(child.pid, started - 60)  # its pid, another process
    assert not pids.is_running(child.pid, started + 60)
    child.kill()
    child.wait()
    assert not pids.is_running(child.pid, started)
    assert pids.process_start_time(child.pid) is None


def test_the_boot_time_the_kernel_rounds_to_a_second_moving_by_one_changes_nothing(
    child, tmp_path, monkeypatch
):
    """/proc/stat's ``btime`` is whole seconds of (wall clock - time since boot): a clock nudged
    across a second boundary moves it by one, and every creation time psutil derives from it."""
    started = pids.process_start_time(child.pid)
    recorded_by_psutil = psutil.Process(child.pid).create_time()
    fake = tmp_path / "proc"
    fake.mkdir()
    lines = Path("/proc/stat").read_text().splitlines()
    moved = [
        f"btime {int(line.split()[1]) + 1}" if line.startswith("btime") else line for line in lines
    ]
    (fake / "stat").write_text("\n".join(moved) + "\n")
    for pid in (child.pid, os.getpid()):
        (fake / str(pid)).symlink_to(f"/proc/{pid}")
    monkeypatch.setattr(psutil, "PROCFS_PATH", str(fake))
    assert psutil.Process(child.pid).create_time() == recorded_by_psutil + 1  # its view moved
    assert started is not None and pids.is_running(child.pid, started)
    assert pids.is_running(child.pid, recorded_by_psutil)


def test_a_wall_clock_stepped_by_seconds_since_the_record_still_finds_the_process(
    child, monkeypatch
):
    started = pids.process_start_time(child.pid)
    assert started is not None
    real = time.time
    monkeypatch.setattr(time, "time", lambda: real() + 3.0)
    assert pids.is_running(child.pid, started)
    monkeypatch.setattr(time, "time", lambda: real() - 3.0)
    assert pids.is_running(child.pid, started)


def test_a_record_written_with_psutil_s_creation_time_is_still_recognised(child):
    """Records written by earlier versions (the job store, MLflow's endpoint, leases)."""
    assert pids.is_running(child.pid, psutil.Process(child.pid).create_time())
