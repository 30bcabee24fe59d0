"""`air run --watch / --override / --dry-run / --idempotency-key`, `air list runs --filter /
--all-users`, `air cancel ID… / --all` and `air logs --lines / --minutes / --retry`: through the
real CLI against a real tracking server."""

from __future__ import annotations

import json

from workloads_support import PY, air, wait_for, write


def _spec(env, name: str = "w.yaml", command: str = f"{PY} -c 'print(1)'", extra: str = ""):
    return write(
        env.tmp,
        name,
        f"experiment_name: parity-{env.tmp.name}\ncompute: {{accelerator_type: CPU}}\n"
        f"command: {command}\n{extra}",
    )


def test_watch_is_follow(env):
    spec = _spec(env, command=f"{PY} -c 'print(\"watched line\")'")
    result = air("run", str(spec), "--watch")
    assert result.returncode == 0, result.stderr
    assert "watched line" in result.stdout
    failing = _spec(env, "f.yaml", command=f"{PY} -c 'raise SystemExit(3)'")
    assert air("run", str(failing), "--watch").returncode == 1
    assert air("run", str(failing), "--follow").returncode == 1


def test_override_changes_fields_with_the_same_validation(env):
    spec = _spec(
        env,
        command=f'{PY} -c \'import os; print("FOO=" + os.environ["FOO"])\'',
        extra="max_retries: 0\n",
    )
    text = spec.read_text()
    result = air(
        "run",
        str(spec),
        "--override",
        "env_variables.FOO=bar",
        "--override",
        "max_retries=2",
        "--override",
        "compute.num_nodes=1",
        "-o",
        "json",
    )
    assert result.returncode == 0, result.stderr
    job_id = json.loads(result.stdout)["id"]
    job = wait_for(env.store, job_id)
    assert job.status == "SUCCEEDED"
    assert job.max_retries == 2 and job.spec["env_variables"] == {"FOO": "bar"}
    assert job.spec_yaml.startswith(text)  # the file as submitted, the overrides after it
    shown = air("get", "run", job_id)
    assert "Overrides:   env_variables.FOO=bar  max_retries=2  compute.num_nodes=1" in shown.stdout
    logs = air("logs", job_id)
    assert "FOO=bar" in logs.stdout

    count = env.store.count_jobs()
    bad = air("run", str(spec), "--override", "compute.num_accelerators=100")
    assert bad.returncode == 2
    assert (
        "compute.num_accelerators: must be an integer from 1 to 64 (per node) "
        "(from --override); got 100"
    ) in bad.stderr
    assert "line" not in bad.stderr
    typo = air("run", str(spec), "--override", "compute.num_acelerators=2")
    assert typo.returncode == 2
    assert "compute.num_acelerators: unknown field (from --override); did you mean" in typo.stderr
    reserved = air("run", str(spec), "--override", "env_variables.NODE_RANK=3")
    assert reserved.returncode == 2 and "(from --override)" in reserved.stderr
    malformed = air("run", str(spec), "--override", "x")
    assert malformed.returncode == 2
    assert "'x' is not FIELD=VALUE" in malformed.stderr
    into_text = air("run", str(spec), "--override", "command.x=1")
    assert into_text.returncode == 2 and "command is not a mapping" in into_text.stderr
    assert env.store.count_jobs() == count  # none of them created a job run


def _nothing_created(env) -> None:
    assert not env.store.path.exists() or env.store.count_jobs() == 0
    jobs = env.store.data_dir / "workloads" / "jobs"
    assert not jobs.exists() or not any(jobs.iterdir())


def test_dry_run_checks_everything_and_creates_nothing(env, monkeypatch):
    from jupyter_air.mlflow_server.records import ServerFiles, mlflow_folder

    name = f"dry-{env.tmp.name}"
    spec = write(
        env.tmp,
        "w.yaml",
        f"experiment_name: {name}\nmlflow_artifact_location: ./art\n"
        "compute: {accelerator_type: CPU}\ncommand: train\n",
    )
    table = air("run", str(spec), "--dry-run", "--override", "max_retries=3")
    assert table.returncode == 0, table.stderr
    assert "valid; nothing was created" in table.stdout
    assert f"Experiment:  {name} (would be created)" in table.stdout
    assert f"Tracking:    {env.url} (reachable)" in table.stdout
    assert "Retries:     up to 3" in table.stdout
    plan = json.loads(air("run", str(spec), "--dry-run", "-o", "json").stdout)
    assert plan["dry_run"] is True and plan["backend"] == "local"
    assert plan["spec"]["command"] == "train" and plan["spec"]["experiment_name"] == name
    assert plan["artifact_location"] == str(env.tmp / "art")
    assert plan["experiment_id"] is None and plan["tracking_server"] == "reachable"
    _nothing_created(env)
    assert env.client.get_experiment_by_name(name) is None

    # an existing experiment: its id and artifact location; another location is refused
    experiment_id = env.client.create_experiment(name, artifact_location=str(env.tmp / "art"))
    plan = json.loads(air("run", str(spec), "--dry-run", "-o", "json").stdout)
    assert plan["experiment_id"] == experiment_id
    moved = air("run", str(spec), "--dry-run", "--override", "mlflow_artifact_location=/elsewhere")
    assert moved.returncode == 2 and "already exists with artifact location" in moved.stderr

    # the GPU check of submit
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    gpus = air("run", str(spec), "--dry-run", "--override", "compute.accelerator_type=GPU")
    assert gpus.returncode == 4 and "Not enough GPUs" in gpus.stderr

    # no tracking server in this shell: it would be started, and is not
    monkeypatch.delenv("MLFLOW_TRACKING_URI")
    plain = air("run", str(spec), "--dry-run")
    assert plain.returncode == 0, plain.stderr
    assert "own MLflow server of the data folder (would be started)" in plain.stdout
    assert ServerFiles(mlflow_folder(env.store.data_dir)).endpoint() is None
    _nothing_created(env)
    assert air("run", str(spec), "--dry-run", "--watch").returncode == 2


def test_an_idempotency_key_submits_once_even_at_the_same_time(env):
    import subprocess
    import sys

    spec = _spec(env)
    first = air("run", str(spec), "--idempotency-key", "nightly-1", "-o", "json")
    assert first.returncode == 0, first.stderr
    submitted = json.loads(first.stdout)
    assert submitted["already_submitted"] is False
    again = air("run", str(spec), "--idempotency-key", "nightly-1")
    assert again.returncode == 0, again.stderr
    assert again.stdout.startswith(
        f"Job run {submitted['id']} already submitted with this idempotency key"
    )
    assert env.store.count_jobs() == 1
    assert "Idempotency: nightly-1" in air("get", "run", submitted["id"]).stdout

    # two submissions at once with a new key: the store's unique index keeps one
    command = [sys.executable, "-m", "jupyter_air.cli", "run", str(spec)]
    command += ["--idempotency-key", "nightly-2", "-o", "json"]
    racing = [subprocess.Popen(command, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    answers = [json.loads(p.communicate(timeout=120)[0]) for p in racing]
    assert all(p.returncode == 0 for p in racing)
    assert answers[0]["id"] == answers[1]["id"]
    assert sorted(a["already_submitted"] for a in answers) == [False, True]
    assert env.store.count_jobs() == 2
    folders = sorted(p.name for p in (env.store.data_dir / "workloads" / "jobs").iterdir())
    assert folders == sorted({submitted["id"], answers[0]["id"]})  # the loser's folder is gone
    for job_id in folders:
        wait_for(env.store, job_id)
    assert air("run", str(spec), "--idempotency-key", "").returncode == 2


def _job_row(store, experiment, user, status, accelerators=1, kind="GPU"):
    from jupyter_air.workloads.paths import new_job_id

    job = store.create_job(
        id=new_job_id(),
        experiment_name=experiment,
        run_name="r",
        command="train",
        compute={"num_accelerators": accelerators, "accelerator_type": kind, "num_nodes": 1},
        max_retries=0,
        spec={},
        user=user,
    )
    store.finish_job(job.id, status, "ended")
    return job.id


def test_list_runs_filters_and_users(env, monkeypatch):
    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    mine_h100 = _job_row(env.store, "nightly-a", "ada", "SUCCEEDED", 8, "H100")
    mine_failed = _job_row(env.store, "nightly-b", "ada", "FAILED", 2)
    mine_other = _job_row(env.store, "sweep", "ada", "SUCCEEDED", 1, "CPU")
    theirs = _job_row(env.store, "nightly-a", "bob", "SUCCEEDED", 8, "H100")

    def ids(*args):
        result = air("list", "runs", "--all-status", *args, "-o", "json")
        assert result.returncode == 0, result.stderr
        return {j["id"] for j in json.loads(result.stdout)}

    assert ids() == {mine_h100, mine_failed, mine_other}  # the current user's by default
    assert ids("--all-users") == {mine_h100, mine_failed, mine_other, theirs}
    assert ids("--filter", "user=bob") == {theirs}
    assert ids("--filter", "experiment=nightly-*") == {mine_h100, mine_failed}
    assert ids("--filter", "accelerator_type=h100", "--all-users") == {mine_h100, theirs}
    assert ids("--filter", "num_accelerators=8", "--filter", "experiment=nightly-?") == {mine_h100}
    assert ids("--filter", "status=failed") == {mine_failed}
    assert ids("--status", "SUCCEEDED", "--experiment", "sweep") == {mine_other}
    table = air("list", "runs", "--all-status", "--all-users")
    assert table.stdout.splitlines()[0].split()[-1] == "USER"
    status_only = air("list", "runs", "--filter", "status=FAILED", "-o", "json")
    assert [j["id"] for j in json.loads(status_only.stdout)] == [mine_failed]  # no --all-status

    unknown = air("list", "runs", "--filter", "gpu=8")
    assert unknown.returncode == 2
    assert (
        "unknown key 'gpu'; the keys are experiment, accelerator_type, num_accelerators, "
        "status, user, schedule" in unknown.stderr
    )
    assert air("list", "runs", "--filter", "num_accelerators=many").returncode == 2
    assert air("list", "runs", "--filter", "experiment").returncode == 2


def _answer_on_a_terminal(answer: str):
    """``air cancel --all`` with a terminal as its stdin, typing ``answer``."""
    import os
    import pty
    import subprocess
    import sys

    controller, terminal = pty.openpty()
    try:
        os.write(controller, answer.encode())
        return subprocess.run(
            [sys.executable, "-m", "jupyter_air.cli", "cancel", "--all"],
            stdin=terminal,
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        os.close(terminal)
        os.close(controller)


def test_cancel_several_and_all(env, monkeypatch):
    from workloads_support import wait_until

    monkeypatch.setenv("JUPYTERHUB_USER", "ada")
    spec = _spec(env, command=f"{PY} -c 'import time; time.sleep(120)'")
    ids = []
    for _ in range(3):
        result = air("run", str(spec), "-o", "json")
        assert result.returncode == 0, result.stderr
        ids.append(json.loads(result.stdout)["id"])
    for job_id in ids:
        wait_until(lambda j=job_id: env.store.get_job(j).status == "RUNNING", 60, "running")
    theirs = env.store.create_job(
        id="0123456789ab", experiment_name="x", run_name="r", command="c", compute={},
        max_retries=0, spec={}, user="bob",
    )  # fmt: skip

    unknown = air("cancel", ids[0], "ffffffffffff")
    assert unknown.returncode == 5
    assert env.store.get_job(ids[0]).status == "RUNNING"  # an unknown id cancels none
    assert air("cancel").returncode == 2
    assert air("cancel", ids[0], "--all").returncode == 2

    both = air("cancel", ids[0], ids[1][:6], "-o", "json")
    assert both.returncode == 0, both.stderr
    assert [(j["id"], j["status"]) for j in json.loads(both.stdout)] == [
        (ids[0], "CANCELLED"),
        (ids[1], "CANCELLED"),
    ]
    assert env.store.get_job(ids[2]).status == "RUNNING"

    refused = air("cancel", "--all")  # stdin is not a terminal here
    assert refused.returncode == 2
    assert f"--all would cancel 1 active job run ({ids[2]})" in refused.stderr
    assert "add -y" in refused.stderr
    assert env.store.get_job(ids[2]).status == "RUNNING"

    kept = _answer_on_a_terminal("n\n")
    assert "Cancel 1 active job run of ada?" in kept.stdout and ids[2] in kept.stdout
    assert "Nothing cancelled." in kept.stderr
    assert env.store.get_job(ids[2]).status == "RUNNING"
    confirmed = _answer_on_a_terminal("y\n")
    assert confirmed.returncode == 0, confirmed.stderr
    assert env.store.get_job(ids[2]).status == "CANCELLED"

    last = json.loads(air("run", str(spec), "-o", "json").stdout)["id"]
    wait_until(lambda: env.store.get_job(last).status == "RUNNING", 60, "running")
    everything = air("cancel", "--all", "-y")
    assert everything.returncode == 0, everything.stderr
    assert f"Cancelling job run {last}" in everything.stderr
    assert env.store.get_job(last).status == "CANCELLED"
    assert env.store.get_job(theirs.id).cancel_requested is None  # another user's: untouched
    nothing = air("cancel", "--all", "-y")
    assert nothing.returncode == 0 and "No active job runs to cancel." in nothing.stderr


def test_logs_lines_minutes_and_retry(env):
    import time

    write(
        env.tmp,
        "tries.py",
        """
        import os, sys, time
        if os.environ["JUPYTER_AIR_ATTEMPT"] == "1":
            print("first try", flush=True)
            sys.exit(1)
        for i in range(3):
            print(f"early {i}", flush=True)
        time.sleep(12)
        print("late", flush=True)
        """,
    )
    spec = _spec(env, command=f"{PY} tries.py", extra="max_retries: 1\n")
    result = air("run", str(spec), "-o", "json")
    job_id = json.loads(result.stdout)["id"]
    assert wait_for(env.store, job_id, timeout=120).status == "SUCCEEDED"

    def texts(*args):
        out = air("logs", job_id, *args, "-o", "json")
        assert out.returncode == 0, out.stderr
        return [json.loads(line) for line in out.stdout.splitlines()]

    latest = texts("--retry", "-1")
    assert [line["text"] for line in latest] == ["early 0", "early 1", "early 2", "late"]
    assert [line["text"] for line in texts("--retry", "1")] == ["first try"]
    assert [line["text"] for line in texts("--lines", "2")] == ["early 2", "late"]
    assert [line["text"] for line in texts("--tail", "1", "--retry", "1")] == ["first try"]

    # the lines of the last M minutes: "late" came 12 s after the others
    from datetime import datetime

    late = datetime.fromisoformat(latest[-1]["t"].replace("Z", "+00:00")).timestamp()
    minutes = (time.time() - late + 6) / 60  # "late" and not the others, for 6 s
    assert [line["text"] for line in texts("--minutes", f"{minutes:.4f}")] == ["late"]
    assert len(texts("--minutes", "60")) == 4
    assert texts("--minutes", "60", "--retry", "1")[0]["text"] == "first try"

    assert air("logs", job_id, "--retry", "0").returncode == 2
    assert air("logs", job_id, "--retry", "1", "--attempt", "1").returncode == 2
    assert air("logs", job_id, "--minutes", "soon").returncode == 2
    assert air("logs", job_id, "--minutes", "5", "--download-to", str(env.tmp)).returncode == 2
