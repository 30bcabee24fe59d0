"""A full disk under the data folder (a real tmpfs of 16 MiB, filled to the last page): the
supervisor survives it. What the job prints waits in memory and reaches the log, in order, once
there is room again; when the disk stays full past that memory, the job is stopped and ends
FAILED "no space left on <data folder>" (in the job store, `air get run` and its MLflow run),
the log saying how many lines were lost where they would have been — through the real `air`
CLI, a real supervisor and the session's tracking server."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest
from workloads_support import PY, air, alive, cli_env, wait_for, wait_until, write

from jupyter_air.logs.logfile import PREFIX
from jupyter_air.workloads.paths import log_path

LINE = "x" * 40

JOB = f"""\
import os, pathlib, signal, sys, time
signals = pathlib.Path(os.environ["SIGNALS"])
printed = 0
stop = []
signal.signal(signal.SIGTERM, lambda signum, frame: stop.append(signum))
(signals / "started").write_text(str(os.getpid()))
while not (signals / "go").exists():
    time.sleep(0.05)
for i in range(int(os.environ["LINES"])):
    if stop:  # stopped: say how many lines went out, exactly
        sys.stdout.flush()
        (signals / "count").write_text(str(printed))
        os._exit(143)
    print(f"line {{i}} {LINE}")
    printed += 1
sys.stdout.flush()
(signals / "count").write_text(str(printed))
while not (signals / "finish").exists():
    time.sleep(0.05)
"""


@pytest.fixture
def small_disk(tmp_path):
    """A 16 MiB tmpfs, unmounted at the end whatever happened."""
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=16m", "tmpfs", str(mount)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(f"a full disk is tested on a tmpfs, which needs root: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def fill(mount: Path) -> Path:
    """Write until the filesystem has no page left."""
    filler = mount / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    try:
        for size in (1 << 20, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * size)
            except OSError as error:
                assert error.errno == errno.ENOSPC, error
    finally:
        os.close(fd)
    return filler


def start(monkeypatch, small_disk, mlflow_server, lines: int):
    env = cli_env(monkeypatch, small_disk, mlflow_server)
    signals = small_disk.parent / "signals"  # beside the small disk, not on it
    signals.mkdir()
    project = small_disk.parent / "project"
    write(project, "job.py", JOB)
    spec = write(
        project,
        "workload.yaml",
        f"experiment_name: disk-{small_disk.parent.name}\ncompute: {{accelerator_type: CPU}}\n"
        f"command: {PY} job.py\nmax_retries: 1\n"
        f"env_variables: {{SIGNALS: {signals}, LINES: '{lines}'}}\n",
    )
    submitted = air("run", str(spec), "-o", "json")
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["id"]
    wait_until(lambda: (signals / "started").exists(), 90, "the job's command to start")
    return env, signals, job_id


def logged(env, job_id: str) -> list[str]:
    return [line[PREFIX:] for line in log_path(env.data, job_id, 1, 0).read_text().splitlines()]


def test_lines_printed_while_the_disk_is_full_reach_the_log_once_there_is_room(
    monkeypatch, small_disk, mlflow_server
):
    lines = 20_000  # about 1 MiB: it fits in the memory lines may wait in
    env, signals, job_id = start(monkeypatch, small_disk, mlflow_server, lines)
    filler = fill(small_disk)
    (signals / "go").touch()
    wait_until(lambda: (signals / "count").exists(), 90, "the job to print its lines")
    # the pipe holds at most 64 KiB: the rest was read by the supervisor and waits in memory
    assert log_path(env.data, job_id, 1, 0).stat().st_size < 100_000

    filler.unlink()
    (signals / "finish").touch()
    job = wait_for(env.store, job_id, timeout=120)
    assert job.status == "SUCCEEDED", job.reason
    assert logged(env, job_id) == [f"line {i} {LINE}" for i in range(lines)]  # none lost
    (warning,) = [w["message"] for w in job.warnings]
    assert warning.startswith(f"no space left on {env.data} from ")
    assert warning.endswith("what the job printed waited in memory for room")


def test_a_disk_that_stays_full_stops_the_job_with_that_reason_and_marks_the_gap(
    monkeypatch, small_disk, mlflow_server
):
    lines = 250_000  # about 12 MiB: more than the 8 MiB lines may wait in
    env, signals, job_id = start(monkeypatch, small_disk, mlflow_server, lines)
    pid = int((signals / "started").read_text())
    filler = fill(small_disk)
    (signals / "go").touch()
    # the supervisor stops the command once lines would be lost (SIGTERM: it says how many
    # lines it printed), and waits for room to record the end
    wait_until(lambda: (signals / "count").exists(), 120, "the job to be stopped")
    wait_until(lambda: not alive(pid), 60, "the job's command to end")
    printed = int((signals / "count").read_text())
    assert printed < lines
    # meanwhile `air` says what is wrong, without a traceback (SQLite may still read a page it
    # has room for: then the command answers as usual)
    for args in (["get", "run", job_id], ["list", "runs"]):
        shown = air(*args)
        assert shown.returncode in (0, 7), shown.stderr
        if shown.returncode == 7:
            assert shown.stderr == (
                f"air: the job store cannot be read or written: no space left on {env.data}\n"
            )

    filler.unlink()
    job = wait_for(env.store, job_id, timeout=120)
    reason = f"no space left on {env.data}"
    assert job.status == "FAILED" and job.reason == reason  # not retried: a retry meets the same
    assert len(job.attempts) == 1 and job.attempts[0].reason == reason
    texts = logged(env, job_id)
    kept = texts[:-1]
    assert kept == [f"line {i} {LINE}" for i in range(len(kept))]  # the first ones, in order
    folder = log_path(env.data, job_id, 1, 0).parent  # where the lines would have been
    lost = f"{printed - len(kept)} lines lost here: no space left on {folder}"
    assert texts[-1] == f"[jupyter-air] {lost}"
    assert 0 < len(kept) < printed

    shown = air("get", "run", job_id)
    assert shown.returncode == 0, shown.stderr
    assert f"FAILED ({reason})" in shown.stdout
    name = log_path(env.data, job_id, 1, 0).name
    assert f"{printed - len(kept)} lines of {name} lost: {reason}" in shown.stdout
    run = env.client.get_run(job.attempts[0].mlflow_run_id)
    assert run.info.status == "FAILED"
    assert run.data.tags["jupyter_air.workload.reason"] == reason
