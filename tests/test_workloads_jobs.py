"""Job runs end to end, with real processes and a real MLflow server: retries (each attempt a new
MLflow run in the experiment, with its logs attached), failure after the last retry, timeouts,
two nodes that rendezvous with torchrun, GPUs per node, cancel leaving no process, a supervisor
that dies, and an experiment whose artifact location differs."""

from __future__ import annotations

import json
import os
import re
import signal

import pytest
from fake_nvml import FakeGpu, FakeNvml
from workloads_support import (
    PY,
    alive,
    cpu_workload,
    submit_yaml,
    wait_for,
    wait_until,
    write,
)

from jupyter_air.logs.query import query_logs
from jupyter_air.tracking.experiments import ExperimentError
from jupyter_air.workloads.capacity import gpu_inventory
from jupyter_air.workloads.jobs import cancel, get_job
from jupyter_air.workloads.paths import job_dir
from jupyter_air.workloads.supervisor import TAG_ATTEMPT, TAG_JOB

FLAKY = """
import json, os, sys, pathlib
counter = pathlib.Path("counter.txt")
n = int(counter.read_text()) if counter.exists() else 0
counter.write_text(str(n + 1))
keys = ["MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_TRACKING_URI", "JUPYTER_AIR_ATTEMPT",
        "CUDA_VISIBLE_DEVICES", "LR"]
print("ENV " + json.dumps({k: os.environ.get(k) for k in keys}), flush=True)
print("WARNING: attempt", n + 1, file=sys.stderr)
if n < int(sys.argv[1]):
    raise SystemExit(3)
print("done")
"""


def env_lines(store, job_id, attempt, node=0):
    page = query_logs(store, job_id, attempt=attempt, node=node)
    return [json.loads(line.text[4:]) for line in page.lines if line.text.startswith("ENV ")]


def test_fails_twice_then_succeeds(env):
    write(env.tmp, "flaky.py", FLAKY)
    experiment = f"retries-{env.tmp.name}"
    job = submit_yaml(
        env,
        f"experiment_name: {experiment}\n"
        "mlflow_run_name: baseline\n"
        "compute: {accelerator_type: CPU}\n"
        f"command: {PY} flaky.py 2\n"
        "max_retries: 2\n"
        "env_variables: {LR: 3e-5}\n",
    )
    job = wait_for(env.store, job.id)
    assert (job.status, job.reason) == ("SUCCEEDED", "the command succeeded on attempt 3")
    assert [(a.attempt, a.status, a.exit_code) for a in job.attempts] == [
        (1, "FAILED", 3),
        (2, "FAILED", 3),
        (3, "SUCCEEDED", 0),
    ]
    assert job.attempts[0].reason == "node 0 exited with code 3"
    run_ids = [a.mlflow_run_id for a in job.attempts]
    assert len(set(run_ids)) == 3

    # three runs in the experiment, named, tagged, ended, each with its attempt's log attached
    experiment_id = env.client.get_experiment_by_name(experiment).experiment_id
    assert job.experiment_id == experiment_id
    runs = env.client.search_runs([experiment_id], filter_string=f"tags.`{TAG_JOB}` = '{job.id}'")
    by_attempt = {int(r.data.tags[TAG_ATTEMPT]): r for r in runs}
    assert sorted(by_attempt) == [1, 2, 3]
    assert [by_attempt[k].info.run_id for k in (1, 2, 3)] == run_ids
    assert [by_attempt[k].info.status for k in (1, 2, 3)] == ["FAILED", "FAILED", "FINISHED"]
    for attempt, run in by_attempt.items():
        assert run.info.run_name == "baseline"
        assert "jupyter_air.system_metrics.node_0" in run.data.tags
        (artifact,) = env.client.list_artifacts(run.info.run_id, f"logs/attempt_{attempt}")
        assert artifact.path == f"logs/attempt_{attempt}/node_0.log"
        local = env.client.download_artifacts(run.info.run_id, artifact.path, str(env.tmp))
        with open(local) as attached:
            assert f"WARNING: attempt {attempt}" in attached.read()
        # the command got this attempt's run
        (seen,) = env_lines(env.store, job.id, attempt)
        assert seen["MLFLOW_RUN_ID"] == run.info.run_id
        assert seen["MLFLOW_EXPERIMENT_ID"] == experiment_id
        assert seen["MLFLOW_TRACKING_URI"] == env.client.tracking_uri
        assert seen["JUPYTER_AIR_ATTEMPT"] == str(attempt)
        assert seen["CUDA_VISIBLE_DEVICES"] == ""  # CPU: no GPU visible
        assert seen["LR"] == "3e-5"
    errors = query_logs(env.store, job.id, attempt=1, level="warning")
    assert [line.text for line in errors.lines] == ["WARNING: attempt 1"]
    # the attempts ran in one snapshot of the folder, which the working folder does not see
    snapshot = job_dir(env.store.data_dir, job.id) / "code"
    assert (snapshot / "counter.txt").read_text() == "3"
    assert not (env.tmp / "counter.txt").exists()


def test_always_failing_fails_after_the_retries(env):
    write(env.tmp, "flaky.py", FLAKY)
    job = submit_yaml(
        env,
        cpu_workload(env, "fails", f"command: [{PY}, flaky.py, '99']\nmax_retries: 2\n"),
    )
    job = wait_for(env.store, job.id)
    assert job.status == "FAILED"
    assert job.reason == "node 0 exited with code 3 (failed 3 attempts)"
    assert [a.status for a in job.attempts] == ["FAILED"] * 3
    statuses = {env.client.get_run(a.mlflow_run_id).info.status for a in job.attempts}
    assert statuses == {"FAILED"}


def test_a_timeout_is_retried(env):
    write(env.tmp, "hang.py", "import time\nprint('started', flush=True)\ntime.sleep(120)\n")
    job = submit_yaml(
        env,
        cpu_workload(
            env, "timeout", f"command: {PY} hang.py\ntimeout_minutes: 0.03\nmax_retries: 1\n"
        ),
    )
    job = wait_for(env.store, job.id)
    assert job.status == "FAILED"
    assert job.reason == "timed out after 0.03 min (timeout_minutes) (failed 2 attempts)"
    assert [(a.status, a.timed_out) for a in job.attempts] == [("FAILED", True)] * 2
    for attempt in job.attempts:
        assert [
            line.text for line in query_logs(env.store, job.id, attempt=attempt.attempt).lines
        ] == ["started"]
        assert not any(alive(n.pid) for n in attempt.nodes)


TWO_NODES = """
import json, os, torch, torch.distributed as dist
dist.init_process_group("gloo")
value = torch.tensor([dist.get_rank() + 1.0])
dist.all_reduce(value)
keys = ["NODE_RANK", "NNODES", "MASTER_ADDR", "MASTER_PORT", "CUDA_VISIBLE_DEVICES",
        "CUDA_DEVICE_ORDER", "MLFLOW_RUN_ID", "JUPYTER_AIR_JOB_ID", "RANK", "WORLD_SIZE",
        "JUPYTER_AIR_WORKING_DIR"]
info = {k: os.environ.get(k) for k in keys}
info["sum"] = value.item()
info["cwd"] = os.getcwd()
print("ENV " + json.dumps(info), flush=True)
dist.destroy_process_group()
"""


def test_two_nodes_rendezvous_with_torchrun_and_get_their_gpus(env):
    """The local backend: 2 node processes, each `torchrun --nproc_per_node=1`, find each other
    through the NODE_RANK/MASTER_* (and PET_*) variables; each node gets its own GPU."""
    (env.tmp / "work").mkdir()
    write(env.tmp, "work/train.py", TWO_NODES)
    nvml = FakeNvml([FakeGpu(uuid="GPU-a"), FakeGpu(uuid="GPU-b")])  # 2 x A100
    job = submit_yaml(
        env,
        f"experiment_name: nodes-{env.tmp.name}\n"
        "compute: {num_accelerators: 1, accelerator_type: A100, num_nodes: 2}\n"
        f"command: {PY} -m torch.distributed.run --nproc_per_node=1 train.py\n"
        "working_dir: work\n",
        inventory=gpu_inventory(nvml, environ={}),
    )
    assert job.gpus == [[0], [1]]
    job = wait_for(env.store, job.id, timeout=120)
    assert job.status == "SUCCEEDED", job.reason
    (attempt,) = job.attempts
    seen = [env_lines(env.store, job.id, 1, node)[0] for node in (0, 1)]
    for node, info in enumerate(seen):
        assert info["NODE_RANK"] == str(node) and info["NNODES"] == "2"
        assert info["RANK"] == str(node) and info["WORLD_SIZE"] == "2"
        assert info["sum"] == 3.0  # both ranks took part
        assert info["CUDA_VISIBLE_DEVICES"] == str(node)
        assert info["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
        assert info["MLFLOW_RUN_ID"] == attempt.mlflow_run_id  # all nodes share the run
        assert info["JUPYTER_AIR_JOB_ID"] == job.id
        assert info["cwd"] == str(job_dir(env.store.data_dir, job.id) / "code")  # a snapshot
        assert info["JUPYTER_AIR_WORKING_DIR"] == str(env.tmp / "work")
    assert seen[0]["MASTER_PORT"] == seen[1]["MASTER_PORT"]
    assert [n.gpus for n in attempt.nodes] == ["0", "1"]
    run = env.client.get_run(attempt.mlflow_run_id)
    assert {"jupyter_air.system_metrics.node_0", "jupyter_air.system_metrics.node_1"} <= set(
        run.data.tags
    )
    artifacts = env.client.list_artifacts(attempt.mlflow_run_id, "logs/attempt_1")
    assert sorted(a.path for a in artifacts) == [
        "logs/attempt_1/node_0.log",
        "logs/attempt_1/node_1.log",
    ]


SHARED_PIPE = """
import os, subprocess, sys
if len(sys.argv) == 1:  # the node: three ranks that share its output
    print("hook", os.environ.get("SITE_HOOK"))
    ranks = [subprocess.Popen([sys.executable, __file__, str(r)]) for r in range(3)]
    sys.exit(max(rank.wait() for rank in ranks))
for i in range(3000):
    print(f"rank {sys.argv[1]} line {i} " + "x" * 60)  # no flush: each line still streams
"""


def test_ranks_that_share_a_node_s_output_each_print_whole_lines(env):
    """Ranks of one node write to one pipe, unbuffered so that output streams; each printed line
    still reaches the log whole, not cut by another rank's (a user's sitecustomize still runs)."""
    write(env.tmp, "ranks.py", SHARED_PIPE)
    write(env.tmp, "site/sitecustomize.py", "import os\nos.environ['SITE_HOOK'] = 'ran'\n")
    job = submit_yaml(
        env,
        cpu_workload(
            env,
            "pipe",
            f"command: {PY} ranks.py\nenv_variables: {{PYTHONPATH: {env.tmp / 'site'}}}\n",
        ),
    )
    job = wait_for(env.store, job.id, timeout=120)
    assert job.status == "SUCCEEDED", job.reason
    texts = [line.text for line in query_logs(env.store, job.id, limit=20000).lines]
    assert texts[0] == "hook ran"
    cut = [t for t in texts[1:] if not re.fullmatch(r"rank [0-2] line \d+ x{60}", t)]
    assert cut == []
    assert len(texts) == 1 + 3 * 3000


SPAWNER = """
import os, subprocess, sys, time, pathlib
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
folder = pathlib.Path(os.environ["JUPYTER_AIR_WORKING_DIR"])  # not the snapshot it runs in
(folder / f"pids-{os.environ['NODE_RANK']}").write_text(f"{os.getpid()} {child.pid}")
print("running", flush=True)
time.sleep(300)
"""


def test_cancel_leaves_no_process(env):
    write(env.tmp, "spawner.py", SPAWNER)
    job = submit_yaml(
        env,
        cpu_workload(env, "cancel", f"command: {PY} spawner.py\nmax_retries: 3\n", nodes=2),
    )
    files = [env.tmp / "pids-0", env.tmp / "pids-1"]
    wait_until(lambda: all(f.exists() for f in files), 60, "both nodes to start")
    pids = [int(p) for f in files for p in f.read_text().split()]
    running = get_job(env.store, job.id)
    node_pids = [n.pid for n in running.attempts[0].nodes]
    supervisor = running.supervisor_pid
    assert all(alive(p) for p in [*pids, *node_pids, supervisor])

    ended = cancel(env.store, job.id)
    assert ended.status == "CANCELLED"
    assert ended.reason.startswith("cancelled")
    assert len(ended.attempts) == 1  # a cancelled attempt is not retried
    assert ended.attempts[0].status == "CANCELLED"
    left = [p for p in [*pids, *node_pids, supervisor] if alive(p)]
    assert not left
    run = env.client.get_run(ended.attempts[0].mlflow_run_id)
    assert run.info.status == "KILLED"
    assert cancel(env.store, job.id).status == "CANCELLED"  # again: nothing to do


ESCAPER = """
import os, subprocess, sys, pathlib
sleep = [sys.executable, "-c", "import time; time.sleep(300)"]
free = subprocess.Popen(sleep, start_new_session=True)
# as a .distributed() call made in this node marks its own ranks
marked = subprocess.Popen(sleep, start_new_session=True, env={**os.environ, GROUP: "call-x/1"})
folder = pathlib.Path(os.environ["JUPYTER_AIR_WORKING_DIR"])
(folder / "escaped").write_text(f"{free.pid} {marked.pid}")
"""


def test_what_a_command_leaves_in_sessions_of_its_own_is_stopped_at_its_end(env):
    from jupyter_air.config import GROUP

    write(env.tmp, "escaper.py", f"GROUP = {GROUP.name!r}\n" + ESCAPER)
    job = submit_yaml(env, cpu_workload(env, "escaper", f"command: {PY} escaper.py\n"))
    ended = wait_for(env.store, job.id)
    assert ended.status == "SUCCEEDED", ended.reason
    pids = [int(p) for p in (env.tmp / "escaped").read_text().split()]
    wait_until(lambda: not any(alive(p) for p in pids), 30, "what the command left to be gone")


def test_a_supervisor_that_dies_fails_its_job(env):
    write(env.tmp, "spawner.py", SPAWNER)
    job = submit_yaml(
        env,
        cpu_workload(env, "dies", f"command: {PY} spawner.py\n"),
    )
    wait_until(lambda: (env.tmp / "pids-0").exists(), 60, "the node to start")
    pids = [int(p) for p in (env.tmp / "pids-0").read_text().split()]
    running = get_job(env.store, job.id)
    os.kill(running.supervisor_pid, signal.SIGKILL)
    wait_until(lambda: not alive(running.supervisor_pid), 10, "the supervisor to die")
    ended = get_job(env.store, job.id)
    assert ended.status == "FAILED"
    assert "stopped unexpectedly" in ended.reason
    wait_until(lambda: not any(alive(p) for p in pids), 10, "its processes to be stopped")
    assert ended.attempts[0].status == "FAILED"
    # its MLflow run is ended by the reconciliation that the Jupyter server runs in the
    # background and `air get run` runs too
    from jupyter_air.workloads.reconcile import reconcile

    assert reconcile(env.store, [job.id]).closed == [job.id]
    assert env.client.get_run(ended.attempts[0].mlflow_run_id).info.status == "FAILED"


def test_artifact_location(env):
    name = f"located-{env.tmp.name}"
    write(env.tmp, "ok.py", "print('ok')\n")
    text = (
        f"experiment_name: {name}\ncompute: {{accelerator_type: CPU}}\n"
        f"command: {PY} ok.py\nmlflow_artifact_location: ./artifacts/here\n"
    )
    job = wait_for(env.store, submit_yaml(env, text).id)
    assert job.status == "SUCCEEDED"
    experiment = env.client.get_experiment_by_name(name)
    assert experiment.artifact_location.endswith(str(env.tmp / "artifacts" / "here"))
    run_id = job.attempts[0].mlflow_run_id
    assert (env.tmp / "artifacts" / "here" / run_id / "artifacts" / "logs").is_dir()

    before = env.store.count_jobs()
    with pytest.raises(ExperimentError, match="already exists with artifact location"):
        submit_yaml(env, text.replace("./artifacts/here", "./artifacts/elsewhere"))
    assert env.store.count_jobs() == before  # nothing created
