"""Stopping a running ``.distributed()`` call: the ``timeout``, an interrupt of the kernel
(SIGINT, as Jupyter's interrupt button sends it) and the kernel dying (SIGKILL, as a shutdown
that waited too long ends it). Every time: every rank and the agent gone (checked by pid), and
the MLflow run marked KILLED."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest
from launch_support import launch_processes, run_dirs, start_driver, wait_all_gone, wait_for
from tracking_support import reset_fluent, use_server

from jupyter_air import distributed
from jupyter_air.launch.errors import DistributedTimeoutError

pytestmark = pytest.mark.timeout(180)


@pytest.fixture
def server(mlflow_server, monkeypatch, tmp_path):
    use_server(monkeypatch, mlflow_server.url)
    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(tmp_path / "data"))
    yield mlflow_server
    reset_fluent()


def run_status(run_dir) -> str:
    import mlflow

    run_id = json.loads((run_dir / "launch.json").read_text())["mlflow_run_id"]
    return mlflow.MlflowClient().get_run(run_id).info.status


def test_timeout_stops_every_rank_and_kills_the_run(server, tmp_path):
    # long enough that both ranks are running when it strikes, on a loaded machine too (the
    # agent imports torch, then each rank starts): at 4 s they had not all started under load
    @distributed(gpus=2, timeout=15, grace_period=2)
    def too_long():
        import time

        print("working", flush=True)
        time.sleep(120)

    started = time.monotonic()
    with pytest.raises(DistributedTimeoutError) as caught:
        too_long.distributed()
    took = time.monotonic() - started
    assert "too_long.distributed() timed out after 15 s" in str(caught.value)
    assert "stopped 2 ranks" in str(caught.value)
    assert took < 15 + 2 + 20  # the timeout and the grace period, with a loaded machine's slack
    (run_dir,) = run_dirs(tmp_path / "data")
    processes = launch_processes(run_dir)
    assert len(processes) == 3
    assert wait_all_gone(processes) == []
    assert run_status(run_dir) == "KILLED"


def driver_output(driver, timeout_s: float = 60.0) -> str:
    """The driver's output once it has exited. One still running after ``timeout_s`` (a last
    guard: it exits within seconds) fails the test with where each of its threads is."""
    try:
        return driver.communicate(timeout=timeout_s)[0]
    except subprocess.TimeoutExpired:
        os.kill(driver.pid, signal.SIGUSR1)  # faulthandler writes every thread's stack
        time.sleep(1)
        os.killpg(driver.pid, signal.SIGKILL)
        output = driver.communicate(timeout=30)[0]
        pytest.fail(f"the driver still ran {timeout_s:g} s later; its output:\n{output[-8000:]}")


def wait_running(tmp_path):
    """The run folder once both ranks print that they run."""
    run_dir = wait_for(lambda: (run_dirs(tmp_path / "data") or [None])[0], timeout_s=60)
    for rank in (0, 1):
        log = run_dir / "logs" / f"rank-{rank}" / "stdout.log"
        wait_for(lambda log=log: log.exists() and "running" in log.read_text(), timeout_s=60)
    return run_dir


def test_interrupt_stops_every_rank_within_seconds(server, tmp_path):
    driver = start_driver(tmp_path, "gpus=2, grace_period=3")
    try:
        run_dir = wait_running(tmp_path)
        processes = launch_processes(run_dir)
        assert len(processes) == 3
        interrupted = time.monotonic()
        os.killpg(driver.pid, signal.SIGINT)  # what Jupyter's interrupt does
        leftover = wait_all_gone(processes, timeout_s=10)
        gone_after = time.monotonic() - interrupted
        output = driver_output(driver)
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
    assert leftover == []
    assert gone_after < 3.0, gone_after
    assert driver.returncode == 130, output[-3000:]
    assert "KeyboardInterrupt reached the caller" in output
    assert "Interrupted: stopped 2 ranks" in output
    assert run_status(run_dir) == "KILLED"


def test_a_dying_kernel_takes_its_ranks_with_it(server, tmp_path):
    driver = start_driver(tmp_path, "gpus=2, grace_period=3")
    try:
        run_dir = wait_running(tmp_path)
        processes = launch_processes(run_dir)
        driver.kill()  # the kernel dies without a word (SIGKILL): the agent notices
        driver.wait(10)
        assert wait_all_gone(processes, timeout_s=15) == []
    finally:
        if driver.poll() is None:
            driver.kill()
    # the agent ends the run the kernel can no longer end
    assert wait_for(lambda: run_status(run_dir) == "KILLED", timeout_s=30)
