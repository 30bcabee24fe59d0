"""`air logs` (filters, tail, JSON lines, following a running job to its end, downloads) and
`air cancel` (no process left), against real job runs."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pytest
from workloads_support import (
    PY,
    air,
    alive,
    deny_reading,
    wait_for,
    wait_until,
    write,
)

from jupyter_air.workloads.capacity import GpuInventory
from jupyter_air.workloads.jobs import submit
from jupyter_air.workloads.paths import job_dir
from jupyter_air.workloads.spec_loading import load_spec


def start(env, command: str, **fields) -> str:
    text = (
        f"experiment_name: cli-logs-{env.tmp.name}\n"
        f"compute: {{accelerator_type: CPU, num_nodes: {fields.pop('nodes', 1)}}}\n"
        f"command: {command}\n" + "".join(f"{k}: {v}\n" for k, v in fields.items())
    )
    spec = load_spec(text, base_dir=env.tmp)
    return submit(spec, store=env.store, inventory=GpuInventory([])).id


CHATTY = """
import os, sys
node = os.environ["NODE_RANK"]
for i in range(20):
    print(f"node {node} line {i}")
print(f"ERROR: node {node} disk full", file=sys.stderr)
print(f"WARNING: node {node} slow", file=sys.stderr)
print("Tschüss")
"""


def test_logs_filters_tail_and_json(env):
    write(env.tmp, "chatty.py", CHATTY)
    job_id = start(env, f"{PY} chatty.py", nodes=2)
    wait_for(env.store, job_id)
    result = air("logs", job_id)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # stdout and stderr are each in order; between them, lines written within the same few ms
    # may come in either order (docs/workloads.md)
    stdout = [line for line in lines if " INFO  " in line]
    assert len(lines) == 23 and stdout[0].endswith(" INFO  node 0 line 0")
    assert lines[0][:24].endswith("Z")  # UTC times
    node_1 = air("logs", job_id[:5], "--node", "1", "--level", "error").stdout.splitlines()
    assert [line.split(" ", 2)[2] for line in node_1] == ["ERROR: node 1 disk full"]
    grep = air("logs", job_id, "--grep", "LINE 1", "--tail", "3").stdout.splitlines()
    assert [line.split(" ", 2)[2].strip() for line in grep] == [
        "node 0 line 17",
        "node 0 line 18",
        "node 0 line 19",
    ]
    several = air("logs", job_id, "--level", "warning,error").stdout
    assert "disk full" in several and "slow" in several and "line" not in several
    records = [json.loads(line) for line in air("logs", job_id, "-o", "json").stdout.splitlines()]
    by_text = {r["text"]: r for r in records}  # stdout and stderr: each in order, not merged
    assert by_text["Tschüss"]["stream"] == "stdout"
    assert {r["node"] for r in records} == {0} and {r["attempt"] for r in records} == {1}
    assert by_text["ERROR: node 0 disk full"]["level"] == "error"
    assert by_text["ERROR: node 0 disk full"]["stream"] == "stderr"
    assert air("logs", job_id, "--node", "2").returncode == 2
    assert air("logs", job_id, "--attempt", "2").returncode == 2
    assert air("logs", "0000deadbeef").returncode == 5


def test_download_to_writes_the_files(env):
    write(env.tmp, "chatty.py", CHATTY)
    job_id = start(env, f"{PY} chatty.py", nodes=2)
    wait_for(env.store, job_id)
    out = env.tmp / "downloaded"
    result = air("logs", job_id, "--download-to", str(out))
    assert result.returncode == 0, result.stderr
    files = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.log"))
    assert files == [f"{job_id}/attempt_1/node_0.log", f"{job_id}/attempt_1/node_1.log"]
    assert result.stdout.split() == [str(out / f) for f in files]
    text = (out / files[1]).read_text()
    assert "node 1 line 19" in text and text.count("\n") == 23
    filtered = air(
        "logs", job_id, "--download-to", str(env.tmp / "f"), "--node", "1", "--level", "error"
    )
    (path,) = filtered.stdout.split()
    with open(path) as file:
        assert [line[35:] for line in file.read().splitlines()] == ["ERROR: node 1 disk full"]


WAITER = """
import pathlib, sys, time
print("first", flush=True)
while not pathlib.Path(sys.argv[2]).exists():
    time.sleep(0.05)
print("second", flush=True)
sys.exit(int(sys.argv[1]))
"""


@pytest.mark.parametrize("code", [0, 4])
def test_follow_sees_lines_while_the_job_runs(env, code):
    write(env.tmp, "waiter.py", WAITER)
    job_id = start(env, f"{PY} waiter.py {code} {env.tmp / 'go'}")
    follower = subprocess.Popen(
        [sys.executable, "-m", "jupyter_air.cli", "logs", job_id, "--follow"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = follower.stdout.readline()  # blocks until the line is shown
        assert first.rstrip().endswith("INFO  first")
        assert env.store.get_job(job_id).status == "RUNNING"  # seen while it runs
        assert follower.poll() is None
        (env.tmp / "go").write_text("")
        rest, err = follower.communicate(timeout=60)
    finally:
        if follower.poll() is None:
            follower.kill()
    assert rest.rstrip().endswith("second")
    assert follower.returncode == (0 if code == 0 else 1)
    status = "SUCCEEDED" if code == 0 else "FAILED"
    assert f"Job run {job_id} {status}" in err


def test_follow_goes_through_the_retries(env):
    write(
        env.tmp,
        "fail.py",
        "import os\nprint('attempt', os.environ['JUPYTER_AIR_ATTEMPT'])\nraise SystemExit(1)\n",
    )
    job_id = start(env, f"{PY} fail.py", max_retries=1)
    result = air("logs", job_id, "--follow")
    assert result.returncode == 1
    texts = [line.split(" ", 2)[2].strip() for line in result.stdout.splitlines()]
    if len(texts) == 1:  # the follow began after attempt 1 ended: it shows the latest
        assert texts == ["attempt 2"]
    else:
        assert texts == ["attempt 1", "attempt 2"]
    run = air(
        "run",
        str(
            write(
                env.tmp,
                "f.yaml",
                f"experiment_name: f-{env.tmp.name}\ncompute: {{accelerator_type: CPU}}\n"
                f"command: {PY} fail.py\nmax_retries: 1\n",
            )
        ),
        "--follow",
    )
    assert run.returncode == 1
    assert [line.split(" ", 2)[2].strip() for line in run.stdout.splitlines()[-2:]] == [
        "attempt 1",
        "attempt 2",
    ]
    assert "── attempt 2 of 2 ──" in run.stderr


SPAWNER = """
import os, pathlib, subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
folder = pathlib.Path(os.environ["JUPYTER_AIR_WORKING_DIR"])  # not the snapshot it runs in
(folder / f"pids-{os.environ['NODE_RANK']}").write_text(f"{os.getpid()} {child.pid}")
time.sleep(300)
"""


def test_cancel(env):
    write(env.tmp, "spawner.py", SPAWNER)
    job_id = start(env, f"{PY} spawner.py", nodes=2)
    files = [env.tmp / "pids-0", env.tmp / "pids-1"]
    wait_until(lambda: all(f.exists() for f in files), 60, "the nodes to start")
    pids = [int(p) for f in files for p in f.read_text().split()]
    supervisor = env.store.get_job(job_id).supervisor_pid
    started = time.monotonic()
    result = air("cancel", job_id)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"Job run {job_id} CANCELLED: cancelled")
    assert time.monotonic() - started < 30
    assert not [p for p in [*pids, supervisor] if alive(p)]
    again = air("cancel", job_id)
    assert again.returncode == 0 and "already ended CANCELLED" in again.stdout
    shown = json.loads(air("get", "run", job_id, "-o", "json").stdout)
    assert shown["status"] == "CANCELLED" and shown["attempts"][0]["status"] == "CANCELLED"


def test_logs_this_user_may_not_read_say_so_and_how_to_ask(env, monkeypatch, capsys):
    from jupyter_air.cli import EXIT_FORBIDDEN, main

    write(env.tmp, "chatty.py", CHATTY)
    job_id = start(env, f"{PY} chatty.py")
    wait_for(env.store, job_id)
    folder = job_dir(env.store.data_dir, job_id).resolve()
    deny_reading(monkeypatch, folder)
    for argv in (["logs", job_id], ["logs", job_id, "--download-to", str(env.tmp / "d")]):
        assert main(argv) == EXIT_FORBIDDEN
        err = capsys.readouterr().err
        assert err.startswith("air: You don't have access to these logs:")
        assert f"ask its owner ({env.store.get_job(job_id).user})" in err
        assert f"read access to {job_dir(env.store.data_dir, job_id)}" in err
    # a download folder this user may not write is not about the logs
    deny_reading(monkeypatch, (env.tmp / "locked").resolve())
    assert main(["logs", job_id, "--download-to", str(env.tmp / "locked")]) == 2
    assert "cannot write" in capsys.readouterr().err
