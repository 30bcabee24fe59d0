"""The cluster's queue on a real Ray cluster (tests/ray_cluster.py): two users of a team MLflow
server with MLflow's authentication (tests/team_support.py), each with a data folder and a
Jupyter server of their own, submit to one cluster. A job run that fits the cluster but not what
is free waits QUEUED, in the order submitted across both, with its place and the reason; it
keeps its place while its Jupyter server restarts; it starts by itself when the one ahead ends;
it can be cancelled while queued; ``queue_timeout_minutes`` ends a wait with the reason; nothing
of a queued attempt (run, logs, processes) exists before it starts; each run is its user's, and
neither password is in any file of the data folders or of the cluster's session; bob reads the
logs of alice's job run through her Jupyter server only once she shared it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import suppress
from pathlib import Path

import pytest
from workloads_support import (
    PY,
    JupyterServer,
    cli_env,
    end_standbys_of,
    wait_for,
    wait_until,
    write,
)

from jupyter_air.logs.query import query_logs
from jupyter_air.workloads.store import JobStore

HOLD = """
import os, sys, time
tag = sys.argv[1]
print(f"{tag} started on node {os.environ['NODE_RANK']}", flush=True)
release = os.path.join(sys.argv[2], "release-" + tag)
deadline = time.monotonic() + 300
while not os.path.exists(release) and time.monotonic() < deadline:
    time.sleep(0.2)
print(f"{tag} done", flush=True)
"""


@pytest.fixture
def users(ray_cluster, team_server, monkeypatch, tmp_path):
    """Two users of one cluster and one team MLflow server: alice and bob, each with a data
    folder of their own and their MLflow credentials in their environment."""
    env = cli_env(monkeypatch, tmp_path, team_server, cluster=ray_cluster)
    ray_cluster.use(monkeypatch)
    monkeypatch.delenv("MLFLOW_TRACKING_TOKEN", raising=False)
    ray_cluster.ensure(3)
    env.work = tmp_path / "work"  # the workloads' folder (snapshotted): no data folder in it
    write(env.work, "hold.py", HOLD)
    base = {**os.environ, "HOME": str(tmp_path / "home")}  # no credentials file
    env.users = {
        name: {**base, "JUPYTER_AIR_DATA_DIR": str(tmp_path / f"data-{name}"),
               "JUPYTERHUB_USER": name, "MLFLOW_TRACKING_USERNAME": name,
               "MLFLOW_TRACKING_PASSWORD": password}
        for name, (_, password) in team_server.users.items()
    }  # fmt: skip
    env.team = team_server
    env.stores = {name: JobStore.for_data_dir(tmp_path / f"data-{name}") for name in env.users}
    tests = str(Path(__file__).parent)  # authorizers.TwoUsers: alice's and bob's tokens
    env.servers = {}
    try:
        for name, token in (("alice", "alice-token-4f1c"), ("bob", "bob-token-9e2d")):
            server_env = {**env.users[name], "PYTHONPATH": tests,
                          "JUPYTERHUB_API_TOKEN": "a-token-of-the-hub"}  # fmt: skip
            env.servers[name] = server = JupyterServer(
                tmp_path, tmp_path / f"data-{name}", token=token, env=server_env, name=name,
                extra=("--ServerApp.identity_provider_class=authorizers.TwoUsers",),
            )  # fmt: skip
            server.start()
        yield env
    finally:
        for server in env.servers.values():
            server.stop()
        for store in env.stores.values():
            end_standbys_of(store)


def air_as(env, user: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "jupyter_air.cli", *args],
        capture_output=True, text=True, timeout=120, cwd=env.work, env=env.users[user],
    )  # fmt: skip


def submit(env, user: str, tag: str, nodes: int, extra: str = "") -> str:
    spec = write(
        env.work,
        f"{tag}.yaml",
        f"experiment_name: queue-{user}-{env.tmp.name}\nmlflow_run_name: {tag}\n"
        f"compute: {{num_nodes: {nodes}, num_accelerators: 2, accelerator_type: GPU, "
        f"backend: ray}}\n{extra}command: {PY} hold.py {tag} {env.tmp}\n",
    )
    result = air_as(env, user, "run", str(spec), "-o", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["id"]


def started(env, user: str, job_id: str, tag: str) -> bool:
    lines = query_logs(env.stores[user], job_id, node=0).lines
    return any(line.text.startswith(f"{tag} started") for line in lines)


def release(env, tag: str) -> None:
    Path(env.tmp, f"release-{tag}").write_text("")


def test_a_busy_cluster_queues_job_runs_first_come_first_served_across_users(users):
    env = users
    alice, bob = env.stores["alice"], env.stores["bob"]
    nodes = env.cluster.size  # every GPU of the cluster
    shape = f"Waiting for {nodes} nodes with 2 GPU and 1 CPU free, each on a different machine; "

    first = submit(env, "alice", "first", nodes)
    wait_until(lambda: started(env, "alice", first, "first"), 180, "the first job run to start")
    assert alice.get_job(first).queue is None  # placed at once: never queued

    # bob's job run fits the cluster, not what is free: QUEUED, next in line, told why
    second = submit(env, "bob", "second", nodes)
    wait_until(lambda: bob.get_job(second).status == "QUEUED", 120, "bob's run to queue")
    queued = bob.get_job(second)
    assert queued.queue["position"] == 1 and queued.queue["total"] == 1, queued.queue
    assert queued.queue["reason"].startswith(shape), queued.queue
    assert queued.attempts == []  # no MLflow run, no logs, no process before it starts
    code, page = env.servers["bob"].get("air/api/workloads?status=QUEUED")  # his Jupyter's
    assert code == 200 and [w["queue"]["position"] for w in page["workloads"]] == [1], page
    env.servers["bob"].stop()  # the wait is the supervisor's: it keeps its place
    env.servers["bob"].start()
    code, page = env.servers["bob"].get("air/api/workloads?status=QUEUED")
    assert [(w["id"], w["queue"]["position"]) for w in page["workloads"]] == [(second, 1)]

    # bob reads alice's logs through her Jupyter server only once she shared the job run
    logs = f"air/api/workloads/{first}/logs"
    code, answer = env.servers["alice"].get(logs, token="bob-token-9e2d")
    assert code == 403 and answer["message"].startswith("You don't have access to these logs")
    shared = air_as(env, "alice", "share", "job", first, "--with", "bob")
    assert shared.returncode == 0, shared.stderr
    code, answer = env.servers["alice"].get(logs, token="bob-token-9e2d")
    assert code == 200 and answer["lines"][0]["text"].startswith("first started"), answer

    # alice's next one waits behind bob's, across data folders
    third = submit(env, "alice", "third", nodes)
    wait_until(lambda: (alice.get_job(third).queue or {}).get("position") == 2, 120, "a 2nd place")
    place = alice.get_job(third).queue
    assert place["total"] == 2 and place["ahead"] == [second], place
    assert place["reason"].startswith(f"2nd in line, behind job run {second} (bob, "), place
    shown = air_as(env, "alice", "get", "run", third)
    assert f"QUEUED (2nd in line, behind job run {second}" in shown.stdout, shown.stdout
    assert "2nd of 2 in the queue of" in shown.stdout, shown.stdout
    listed = air_as(env, "alice", "list", "runs")
    assert "QUEUED 2nd of 2" in listed.stdout, listed.stdout
    view = json.loads(air_as(env, "alice", "get", "run", third, "-o", "json").stdout)
    assert view["status"] == "QUEUED" and view["queue"]["position"] == 2

    # a wait with a limit ends with the reason; it is not retried
    limited = submit(env, "bob", "limited", nodes, "queue_timeout_minutes: 0.05\nmax_retries: 2\n")
    ended = wait_for(bob, limited, timeout=120)
    assert ended.status == "FAILED", ended.reason
    assert ended.reason.startswith("queued for longer than 0.05 min (queue_timeout_minutes), "
                                   "3rd in line, behind job runs "), ended.reason  # fmt: skip
    assert ended.attempts == [] and ended.queue is None

    # cancelled while queued: nothing ran, and bob's place is unchanged
    cancelled = air_as(env, "alice", "cancel", third)
    assert cancelled.returncode == 0, cancelled.stderr
    gone = alice.get_job(third)
    assert gone.status == "CANCELLED" and gone.reason == "cancelled (air cancel) while queued"
    assert gone.attempts == []
    assert bob.get_job(second).status == "QUEUED"

    # the first ends: bob's starts by itself, on resources the first no longer holds
    release(env, "first")
    done = wait_for(alice, first, timeout=120)
    assert done.status == "SUCCEEDED", done.reason
    wait_until(lambda: started(env, "bob", second, "second"), 180, "bob's run to start")
    running = bob.get_job(second)
    assert running.status == "RUNNING" and running.queue is None
    assert running.attempts[0].started_at >= done.attempts[0].ended_at
    waited = running.attempts[0].started_at - done.attempts[0].ended_at
    print(f"resources free → the queued job run's attempt started: {waited:.2f} s")
    release(env, "second")
    finished = wait_for(bob, second, timeout=120)
    assert finished.status == "SUCCEEDED", finished.reason
    assert len(finished.attempts) == 1 and finished.attempts[0].mlflow_run_id
    for user, store, job_id in (("alice", alice, first), ("bob", bob, second)):
        info = run_of(env, store.get_job(job_id).attempts[0].mlflow_run_id)["info"]
        assert (info["status"], info["user_id"]) == ("FINISHED", user)

    # no password in any file of either data folder, nor of the cluster's session
    secrets = [password.encode() for _, password in env.team.users.values()]
    folders = [env.tmp / "data-alice", env.tmp / "data-bob", Path(env.cluster.temp)]
    for folder in folders:
        for path in (p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
            with suppress(OSError):
                data = path.read_bytes()
                assert not any(secret in data for secret in secrets), path


def run_of(env, run_id: str) -> dict:
    """The MLflow run as the team server's admin reads it."""
    import base64
    import urllib.request

    pair = base64.b64encode(":".join(env.team.admin).encode()).decode()
    request = urllib.request.Request(f"{env.team.url}/api/2.0/mlflow/runs/get?run_id={run_id}")
    request.add_header("Authorization", f"Basic {pair}")
    with urllib.request.urlopen(request, timeout=30) as answer:
        return json.loads(answer.read())["run"]
