"""The code a job run runs (``code_source``): a snapshot of ``working_dir`` taken at submission
that every attempt runs, retries too; ``.gitignore`` respected; a size limit with nothing
created past it; the git commit and a dirty flag on each attempt's MLflow run; ``live`` running
the folder as it is — through the real ``air`` CLI against a real tracking server."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from workloads_support import PY, air, cpu_workload, wait_for, wait_until, write

from jupyter_air.workloads.paths import job_dir, log_path
from jupyter_air.workloads.snapshot import (
    LIVE,
    MAX_SNAPSHOT_FILES,
    SNAPSHOT,
    CodeRecord,
    attempt_cwd,
    resolve_source,
)

# attempt 1 says which version it is, then waits for the test's signal and fails; attempt 2
# says which version it is and succeeds
TRAIN = """\
import os, pathlib, sys, time
print("train.py version {version}", flush=True)
print("submitted", os.environ["JUPYTER_AIR_WORKING_DIR"], "running in", os.getcwd(), flush=True)
if os.environ["JUPYTER_AIR_ATTEMPT"] == "1":
    go = pathlib.Path(os.environ["GO_FILE"])
    deadline = time.monotonic() + 60
    while not go.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    sys.exit(3)
"""


def git(folder: Path, *args: str) -> str:
    identity = ["-c", "user.name=Ada", "-c", "user.email=ada@example.org"]
    done = subprocess.run(
        ["git", *identity, "-C", str(folder), *args],
        capture_output=True,
        text=True,
        check=True,
        timeout=30,
    )
    return done.stdout.strip()


def _project(env, code_source: str) -> tuple[Path, Path, Path]:
    """A git repository with train.py, its workload file, and the file that lets attempt 1 end."""
    project = env.tmp / "project"
    go = env.tmp / "go"
    write(project, "train.py", TRAIN.format(version=1))
    write(project, ".gitignore", "data/\n*.ckpt\n")
    write(project, "data/train.bin", "ignored data\n")
    write(project, "model.ckpt", "ignored checkpoint\n")
    spec = write(
        project,
        "workload.yaml",
        cpu_workload(
            env,
            "code",
            f"command: {PY} train.py\nmax_retries: 1\ncode_source: {code_source}\n"
            f"env_variables: {{GO_FILE: {go}}}\n",
        ),
    )
    git(project, "init", "-q")
    git(project, "add", ".")
    git(project, "commit", "-q", "-m", "first")
    return project, spec, go


def _submit_and_edit(env, spec: Path, go: Path) -> str:
    """Submit; while attempt 1 runs, train.py is edited; then attempt 1 fails and 2 runs."""
    submitted = air("run", str(spec), "-o", "json")
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["id"]
    first = log_path(env.store.data_dir, job_id, 1, 0)
    wait_until(
        lambda: first.exists() and "version" in first.read_text(),
        timeout=90,
        what="attempt 1's first line",
    )
    (spec.parent / "train.py").write_text(TRAIN.format(version=2))
    go.write_text("go")
    job = wait_for(env.store, job_id)
    assert job.status == "SUCCEEDED", job.reason
    assert [a.status for a in job.attempts] == ["FAILED", "SUCCEEDED"]
    return job_id


def _logs(job_id: str, attempt: int) -> str:
    result = air("logs", job_id, "--attempt", str(attempt))
    assert result.returncode == 0, result.stderr
    return result.stdout


def _runs(env, job_id: str) -> list:
    job = env.store.get_job(job_id)
    return [env.client.get_run(a.mlflow_run_id) for a in job.attempts]


def test_a_retry_runs_the_code_as_submitted(env):
    project, spec, go = _project(env, SNAPSHOT)
    write(project, "notes.txt", "untracked, not ignored: copied, and the folder is dirty\n")
    head = git(project, "rev-parse", "HEAD")
    job_id = _submit_and_edit(env, spec, go)

    assert "train.py version 1" in _logs(job_id, 1)
    assert "train.py version 1" in _logs(job_id, 2)  # not the edit made since

    snapshot = job_dir(env.store.data_dir, job_id) / "code"
    assert f"submitted {project} running in {snapshot}" in _logs(job_id, 2)
    copied = sorted(str(p.relative_to(snapshot)) for p in snapshot.rglob("*") if p.is_file())
    assert copied == [".gitignore", "notes.txt", "train.py", "workload.yaml"]
    assert "version 1" in (snapshot / "train.py").read_text()

    for run in _runs(env, job_id):
        assert run.data.tags["mlflow.source.git.commit"] == head
        assert run.data.tags["jupyter_air.git_dirty"] == "true"
        assert run.data.tags["jupyter_air.code_source"] == "snapshot"
        artifacts = {a.path for a in env.client.list_artifacts(run.info.run_id, "code")}
        assert {"code/train.py", "code/notes.txt"} <= artifacts
        assert "code/model.ckpt" not in artifacts

    shown = json.loads(air("get", "run", job_id, "-o", "json").stdout)["code"]
    assert shown["source"] == "snapshot" and shown["path"] == str(snapshot)
    assert shown["files"] == 4 and shown["git_commit"] == head and shown["git_dirty"] is True
    table = air("get", "run", job_id).stdout
    assert f"Code:        snapshot of 4 files, {shown['bytes']} B; git {head[:12]}" in table
    assert "(uncommitted changes)" in table


def test_live_runs_the_folder_as_each_attempt_finds_it(env):
    project, spec, go = _project(env, LIVE)
    head = git(project, "rev-parse", "HEAD")
    job_id = _submit_and_edit(env, spec, go)

    assert "train.py version 1" in _logs(job_id, 1)
    assert "train.py version 2" in _logs(job_id, 2)
    assert f"submitted {project} running in {project}" in _logs(job_id, 2)
    assert not (job_dir(env.store.data_dir, job_id) / "code").exists()
    first, second = _runs(env, job_id)
    assert first.data.tags["mlflow.source.git.commit"] == head
    assert first.data.tags["jupyter_air.git_dirty"] == "false"  # clean when attempt 1 began
    assert second.data.tags["jupyter_air.git_dirty"] == "true"  # train.py edited by then
    assert second.data.tags["jupyter_air.code_source"] == "live"
    assert not env.client.list_artifacts(second.info.run_id, "code")
    shown = json.loads(air("get", "run", job_id, "-o", "json").stdout)["code"]
    assert shown["source"] == "live" and shown["path"] is None and shown["git_commit"] == head


def _nothing_created(env) -> None:
    assert not env.store.path.exists() or env.store.count_jobs() == 0
    jobs = env.store.data_dir / "workloads" / "jobs"
    assert not jobs.exists() or not any(jobs.iterdir())


def test_past_the_size_limit_nothing_is_created(env):
    project = env.tmp / "big"
    spec = write(
        project, "workload.yaml", cpu_workload(env, "big", 'command: "true"\nworking_dir: .\n')
    )
    with open(project / "weights.bin", "wb") as file:
        file.truncate(300 << 20)  # sparse: 300 MiB that take no room

    for args in ([], ["--dry-run"]):
        refused = air("run", str(spec), *args)
        assert refused.returncode == 2, refused.stderr
        assert "working_dir: " in refused.stderr and "more than 256 MiB" in refused.stderr
        assert "(line 4)" in refused.stderr
        assert "code_source: live" in refused.stderr and ".gitignore" in refused.stderr
        assert "the largest: weights.bin (300" in refused.stderr  # what to leave out
        _nothing_created(env)

    # what the error says to do works: the file in an .airignore or a .gitignore, or the folder
    # run live
    write(project, ".airignore", "# not for the nodes\n*.bin\n")
    plan = json.loads(air("run", str(spec), "--dry-run", "-o", "json").stdout)
    assert plan["code"]["files"] == 2 and plan["code"]["git"] is False
    (project / ".airignore").unlink()
    write(project, ".gitignore", "*.bin\n")
    git(project, "init", "-q")
    plan = json.loads(air("run", str(spec), "--dry-run", "-o", "json").stdout)
    assert plan["code"]["files"] == 2 and plan["code"]["git"] is True
    assert plan["code"]["git_commit"] is None  # no commit yet
    (project / ".gitignore").unlink()
    live = air("run", str(spec), "--dry-run", "--override", "code_source=live", "-o", "json")
    assert live.returncode == 0, live.stderr
    assert json.loads(live.stdout)["code"]["source"] == "live"

    many = env.tmp / "many"
    many.mkdir()
    for k in range(MAX_SNAPSHOT_FILES + 1):
        (many / f"f{k}").touch()
    crowded = air(
        "run", str(spec), "--dry-run", "--override", f"working_dir={many}", "--override",
        "code_source=snapshot",
    )  # fmt: skip
    assert crowded.returncode == 2
    assert "code_source: " in crowded.stderr and "more than 20,000 files" in crowded.stderr
    _nothing_created(env)


def test_links_out_of_the_folder_are_refused_and_links_inside_stay_links(env):
    """Nothing outside the working folder enters a snapshot or its artifact: a link that points
    outside (absolute, relative, through another link) refuses the submission with its name;
    links inside are copied as links (an absolute one pointing into the copy), and the artifact
    code/ uploads no link's target but lists the links."""
    project = env.tmp / "linked"
    outside = write(env.tmp, "secret.txt", "a secret outside the working folder\n")
    write(project, "train.py", "print(open('abs.txt').read().strip(), flush=True)\n")
    write(project, "sub/data.txt", "inside\n")
    spec = write(project, "workload.yaml", cpu_workload(env, "links", f"command: {PY} train.py\n"))
    hostile = {
        "hostname": "/etc/hostname",
        "up.txt": "../secret.txt",
        "sub/deep.txt": "../../secret.txt",
        "hop.txt": "sub/hop2.txt",  # a link to a link that leaves the folder
    }
    (project / "sub" / "hop2.txt").symlink_to(outside)
    for name, target in hostile.items():
        link = project / name
        link.symlink_to(target)
        refused = air("run", str(spec))
        assert refused.returncode == 2, refused.stderr
        shown = target if name != "hop.txt" else "sub/hop2.txt"
        assert f"symbolic link {name} -> {shown}, which points outside" in refused.stderr, (
            refused.stderr
        )
        assert "copy the file it points to into the folder" in refused.stderr
        _nothing_created(env)
        link.unlink()
        if name == "hop.txt":
            (project / "sub" / "hop2.txt").unlink()

    (project / "latest.txt").symlink_to("sub/data.txt")
    (project / "abs.txt").symlink_to(project / "sub" / "data.txt")
    (project / "folder").symlink_to("sub")
    (project / "dangling").symlink_to("not-there-yet")
    submitted = air("run", str(spec), "-o", "json")
    assert submitted.returncode == 0, submitted.stderr
    job_id = json.loads(submitted.stdout)["id"]
    job = wait_for(env.store, job_id)
    assert job.status == "SUCCEEDED", job.reason
    assert "inside" in _logs(job_id, 1)  # through the absolute link, in the copy
    snapshot = job_dir(env.store.data_dir, job_id) / "code"
    assert os.readlink(snapshot / "latest.txt") == "sub/data.txt"
    assert os.readlink(snapshot / "abs.txt") == "sub/data.txt"  # into the copy
    assert os.readlink(snapshot / "folder") == "sub"
    assert os.readlink(snapshot / "dangling") == "not-there-yet"
    shown = json.loads(air("get", "run", job_id, "-o", "json").stdout)["code"]
    size = sum(os.path.getsize(project / n) for n in ("train.py", "workload.yaml", "sub/data.txt"))
    assert shown["files"] == 7 and shown["bytes"] == size  # links count 0 bytes: not uploaded

    (run,) = _runs(env, job_id)
    artifacts = {a.path for a in env.client.list_artifacts(run.info.run_id, "code")}
    assert artifacts == {"code/train.py", "code/workload.yaml", "code/sub", "code/LINKS.txt"}
    listed = Path(env.client.download_artifacts(run.info.run_id, "code/LINKS.txt", str(env.tmp)))
    assert listed.read_text().splitlines() == [
        "abs.txt -> sub/data.txt",
        "dangling -> not-there-yet",
        "folder -> sub",
        "latest.txt -> sub/data.txt",
    ]


def test_dry_run_says_what_would_be_snapshotted(env):
    project = env.tmp / "plain"
    write(project, "train.py", "print(1)\n")
    write(project, ".git/config", "not a repository, and never copied\n")
    spec = write(project, "w.yaml", cpu_workload(env, "dry", "command: x\n"))
    plan = json.loads(air("run", str(spec), "--dry-run", "-o", "json").stdout)
    size = sum(os.path.getsize(project / name) for name in ("train.py", "w.yaml"))
    assert plan["code"] == {
        "source": "snapshot",
        "folder": str(project),
        "path": None,
        "files": 2,
        "bytes": size,
        "git_commit": None,
        "git_dirty": None,
        "git": False,
    }
    table = air("run", str(spec), "--dry-run").stdout
    assert f"Code:        snapshot of 2 files, {size} B" in table
    _nothing_created(env)


def test_a_snapshot_leaves_out_the_data_folder(env):
    """A working folder that holds jupyter-air's data folder: not the job store, nor the
    snapshots of earlier jobs."""
    from jupyter_air.workloads.snapshot import list_snapshot

    spec = write(env.tmp, "w.yaml", cpu_workload(env, "inside", f"command: {PY} -c 'print(1)'\n"))
    first = json.loads(air("run", str(spec), "-o", "json").stdout)["id"]
    wait_for(env.store, first)
    data = env.store.data_dir.relative_to(env.tmp)
    assert any(Path(p).parts[0] == data.name for p in list_snapshot(str(env.tmp)).paths)
    second = json.loads(air("run", str(spec), "-o", "json").stdout)["id"]
    wait_for(env.store, second)
    snapshot = job_dir(env.store.data_dir, second) / "code"
    assert (snapshot / "w.yaml").exists() and not (snapshot / data).exists()


def test_invalid_code_source_is_a_line_numbered_error(env):
    spec = write(
        env.tmp,
        "w.yaml",
        "experiment_name: e\ncommand: x\ncode_source: copy\n",
    )
    result = air("run", str(spec))
    assert result.returncode == 2
    assert "code_source: must be snapshot" in result.stderr
    assert '(line 3); got "copy"' in result.stderr


def test_every_backend_runs_a_snapshot_unless_asked():
    """The Ray backend ships the snapshot to its nodes (tests/test_netns_rig.py): the default
    is the same everywhere."""
    assert resolve_source(None) == SNAPSHOT
    assert resolve_source(SNAPSHOT) == SNAPSHOT
    assert resolve_source(LIVE) == LIVE
    snapshot = CodeRecord(source=SNAPSHOT, folder="/work/p", path="/data/jobs/1/code")
    assert attempt_cwd("/work/p", snapshot) == "/data/jobs/1/code"
    assert attempt_cwd("/work/p", CodeRecord(source=LIVE, folder="/work/p")) == "/work/p"
    assert attempt_cwd("/work/p", None) == "/work/p"  # a job run from before snapshots
