"""The job store: SQLite in WAL mode, versioned schema, survives reopening, safe with several
writer processes at once."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

import pytest

from jupyter_air.workloads.paths import InvalidJobId, new_job_id
from jupyter_air.workloads.store import (
    SCHEMA_VERSION,
    AlreadySubmitted,
    JobNotFound,
    JobStore,
    StoreError,
)


def new_job(store: JobStore, **fields):
    values = {
        "id": new_job_id(),
        "experiment_name": "e",
        "run_name": "r",
        "command": "true",
        "compute": {"num_accelerators": 1, "accelerator_type": "CPU", "num_nodes": 1},
        "max_retries": 0,
        "spec": {},
    }
    values.update(fields)
    return store.create_job(**values)


def test_schema_wal_and_reopening(tmp_path):
    store = JobStore.for_data_dir(tmp_path)
    job = new_job(store, experiment_name="exp")
    assert store.path == tmp_path / "workloads" / "jobs.db"
    assert store.schema_version() == SCHEMA_VERSION
    with sqlite3.connect(store.path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    again = JobStore.for_data_dir(tmp_path)  # as after a restart
    assert again.get_job(job.id).experiment_name == "exp"
    assert again.get_job(job.id).status == "PENDING"


def test_a_newer_schema_is_refused(tmp_path):
    store = JobStore.for_data_dir(tmp_path)
    new_job(store)
    with sqlite3.connect(store.path) as conn:
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    with pytest.raises(StoreError, match="newer jupyter-air"):
        JobStore.for_data_dir(tmp_path).list_jobs()


def test_lifecycle_attempts_nodes_and_log_index(tmp_path):
    store = JobStore.for_data_dir(tmp_path)
    job = new_job(store, max_retries=1)
    assert store.mark_running(job.id)
    assert not store.mark_running(job.id)  # only from PENDING
    store.start_attempt(job.id, 1, mlflow_run_id="run1")
    store.set_node(job.id, 1, 0, pid=123, started=1.0, gpus="")
    store.finish_node(job.id, 1, 0, 3, None)
    store.finish_attempt(job.id, 1, "FAILED", "node 0 exited with code 3", exit_code=3)
    store.index_log_file(job.id, 1, 0, "/x/node_0.log", bytes=10, lines=2, errors=1)
    store.index_log_file(job.id, 1, 0, "/x/node_0.log", bytes=20, lines=3, complete=1)
    assert store.finish_job(job.id, "FAILED", "why")
    assert not store.finish_job(job.id, "SUCCEEDED", "late")  # the first end stays
    got = store.get_job(job.id)
    assert (got.status, got.reason) == ("FAILED", "why")
    (attempt,) = got.attempts
    assert (attempt.status, attempt.exit_code, attempt.mlflow_run_id) == ("FAILED", 3, "run1")
    assert attempt.nodes[0].pid == 123 and attempt.nodes[0].exit_code == 3
    (log_file,) = store.log_files(job.id)
    assert (log_file.bytes, log_file.lines, log_file.errors, log_file.complete) == (20, 3, 1, True)
    with pytest.raises(ValueError):
        store.finish_job(job.id, "RUNNING", None)


def test_ids_prefixes_and_listing(tmp_path):
    store = JobStore.for_data_dir(tmp_path)
    a = new_job(store, id="aaaa00000001", experiment_name="x", submitted_at=1.0)
    b = new_job(store, id="aaaa00000002", experiment_name="y", submitted_at=2.0)
    c = new_job(store, id="bbbb00000003", experiment_name="x", submitted_at=3.0)
    store.finish_job(c.id, "SUCCEEDED", "ok")
    assert store.resolve_id("bbbb") == c.id
    assert store.resolve_id("AAAA00000002") == b.id
    with pytest.raises(JobNotFound, match="several"):
        store.resolve_id("aaaa")
    with pytest.raises(JobNotFound):
        store.resolve_id("cccc")
    with pytest.raises(JobNotFound, match="not a job run id"):
        store.resolve_id("ab")
    with pytest.raises(InvalidJobId):
        store.get_job("../../etc")
    assert [j.id for j in store.list_jobs()] == [c.id, b.id, a.id]  # newest first
    assert [j.id for j in store.list_jobs(status="PENDING")] == [b.id, a.id]
    assert [j.id for j in store.list_jobs(experiment="x")] == [c.id, a.id]
    assert [j.id for j in store.list_jobs(limit=1, offset=1)] == [b.id]
    assert store.count_jobs(status=["SUCCEEDED", "FAILED"]) == 1


def test_an_idempotency_key_is_unique_in_the_store(tmp_path):
    """The unique index decides, not a look-up before the insert: a second job run with a key
    is refused with the first one; job runs without a key are never refused."""
    store = JobStore.for_data_dir(tmp_path)
    first = new_job(store, idempotency_key="k")
    with pytest.raises(AlreadySubmitted) as refused:
        new_job(store, idempotency_key="k")
    assert refused.value.job.id == first.id
    new_job(store)
    new_job(store)
    assert store.count_jobs() == 3
    assert store.job_by_idempotency_key("k").id == first.id
    assert store.job_by_idempotency_key("other") is None


WRITER = textwrap.dedent(
    """
    import sys
    from jupyter_air.workloads.store import JobStore
    from jupyter_air.workloads.paths import new_job_id
    store = JobStore.for_data_dir(sys.argv[1])
    for i in range(int(sys.argv[2])):
        job_id = new_job_id()
        store.create_job(id=job_id, experiment_name=sys.argv[3], run_name="r", command="c",
                         compute={}, max_retries=0, spec={})
        store.mark_running(job_id)
        store.start_attempt(job_id, 1)
        store.index_log_file(job_id, 1, 0, "p", bytes=i, lines=i)
        store.finish_attempt(job_id, 1, "SUCCEEDED", "ok")
        store.finish_job(job_id, "SUCCEEDED", "ok")
    """
)


def test_concurrent_writer_processes(tmp_path):
    """Several processes creating and updating job runs at once: no 'database is locked', no
    lost row (the supervisors, the CLI and the server do this)."""
    writers, each = 4, 40
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(tmp_path), str(each), f"exp{n}"],
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(writers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    store = JobStore.for_data_dir(tmp_path)
    assert store.count_jobs() == writers * each
    assert store.count_jobs(status="SUCCEEDED") == writers * each
    for n in range(writers):
        jobs = store.list_jobs(experiment=f"exp{n}", limit=1000)
        assert len(jobs) == each
        assert all(j.attempts[0].status == "SUCCEEDED" for j in jobs)


def test_the_data_folder_of_the_running_servers(tmp_path, monkeypatch):
    """Records of live servers count, dead ones not; servers that disagree leave the default."""
    import json
    import os

    from jupyter_air.config import data_dir, record_server, served_data_dir

    runtime = tmp_path / "runtime"
    monkeypatch.delenv("JUPYTER_AIR_DATA_DIR", raising=False)
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(runtime))
    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jdata"))
    assert served_data_dir() is None
    assert data_dir() == tmp_path / "jdata" / "air"

    record = record_server(runtime, tmp_path / "custom")
    assert record.name == f"jupyter-air-{os.getpid()}.json"
    assert data_dir() == tmp_path / "custom"
    assert data_dir(tmp_path / "explicit") == tmp_path / "explicit"
    monkeypatch.setenv("JUPYTER_AIR_DATA_DIR", str(tmp_path / "env"))
    assert data_dir() == tmp_path / "env"
    monkeypatch.delenv("JUPYTER_AIR_DATA_DIR")

    # a server that died without removing its record does not count
    (runtime / "jupyter-air-999999999.json").write_text(json.dumps({"data_dir": "/elsewhere"}))
    assert data_dir() == tmp_path / "custom"
    # two live servers with different folders: ambiguous, the default
    (runtime / f"jupyter-air-{os.getppid()}.json").write_text(json.dumps({"data_dir": "/other"}))
    assert served_data_dir(runtime) is None
    assert data_dir() == tmp_path / "jdata" / "air"


def test_a_store_of_the_first_schema_is_migrated_with_its_job_runs(tmp_path):
    """A job store written by the previous release (schema 1) opens: its job runs are kept and
    get the new fields (tracking, warnings, runs closed)."""
    from jupyter_air.workloads.store import _SCHEMA

    path = tmp_path / "workloads" / "jobs.db"
    path.parent.mkdir(parents=True)
    with sqlite3.connect(path) as conn:
        for statement in _SCHEMA:
            conn.execute(statement)
        conn.execute(
            "INSERT INTO jobs (id, status, experiment_name, run_name, command, compute, "
            "max_retries, spec, submitted_at) VALUES ('0123456789ab', 'SUCCEEDED', 'e', 'r', "
            "'true', '{}', 0, '{}', 1.0)"
        )
        conn.execute("PRAGMA user_version = 1")
    store = JobStore.for_data_dir(tmp_path)
    job = store.get_job("0123456789ab")
    assert store.schema_version() == SCHEMA_VERSION
    assert (job.status, job.warnings, job.tracking, job.runs_closed_at, job.idempotency_key) == (
        "SUCCEEDED",
        [],
        None,
        None,
        None,
    )
    store.add_warning(job.id, "MLflow did not answer")
    store.add_warning(job.id, "MLflow did not answer")  # the same twice in a row: once
    assert [w["message"] for w in store.get_job(job.id).warnings] == ["MLflow did not answer"]


def mode(path) -> int:
    import os
    import stat

    return stat.S_IMODE(os.lstat(path).st_mode)


def test_the_data_folder_is_private_to_its_owner_including_what_an_earlier_version_left(
    tmp_path,
):
    """0700 folders and 0600 files: a data folder of an earlier version (0755 and 0644, as the
    default umask makes them) is narrowed when it is opened, without walking its logs; what is
    made from then on is private when it is made."""
    import os

    from jupyter_air.logs.logfile import LogWriter
    from jupyter_air.mlflow_server.records import ServerFiles, mlflow_folder
    from jupyter_air.pids import spawn_detached
    from jupyter_air.workloads.paths import job_dir, log_path

    data = tmp_path / "data"
    old_job = job_dir(data, "0123456789ab")
    old_log = log_path(data, "0123456789ab", 1, 0)
    old_log.parent.mkdir(parents=True)
    old_log.write_text("an old line\n")
    (data / "mlflow" / "artifacts" / "1").mkdir(parents=True)
    for name in ("mlflow.db", "endpoint.json", "server.log"):
        (data / "mlflow" / name).write_text("x")
    (data / "notes.txt").write_text("the user's own file, in a folder they chose")
    for path in [data, *data.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)

    store = JobStore.for_data_dir(data)
    new_job(store)
    with sqlite3.connect(store.path) as reading:  # its -wal and -shm files exist while open
        reading.execute("SELECT count(*) FROM jobs").fetchone()
        for name in ("jobs.db", "jobs.db-wal", "jobs.db-shm"):
            assert mode(data / "workloads" / name) == 0o600, name
    reading.close()
    for path in (data, data / "workloads", data / "workloads" / "jobs", data / "mlflow"):
        assert mode(path) == 0o700, path
    for name in ("mlflow.db", "endpoint.json", "server.log"):
        assert mode(data / "mlflow" / name) == 0o600, name
    assert mode(data / "mlflow" / "artifacts") == 0o700
    # deeper than that nothing is walked: the folders above are the owner's only
    assert mode(old_job) == 0o755 and mode(old_log) == 0o644
    assert mode(data / "notes.txt") == 0o644  # not ours to change

    # made from now on: private when made
    new_log = log_path(data, "ba9876543210", 1, 0)
    LogWriter(new_log).close()
    assert mode(job_dir(data, "ba9876543210")) == 0o700
    assert mode(new_log.parent) == 0o700 and mode(new_log) == 0o600
    supervisor_log = job_dir(data, "ba9876543210") / "supervisor.log"
    pid = spawn_detached([sys.executable, "-c", "pass"], log_file=supervisor_log, env={}, cwd=".")
    assert pid and mode(supervisor_log) == 0o600
    files = ServerFiles(mlflow_folder(tmp_path / "fresh"))
    files.make()
    with files.lock():
        pass
    assert mode(files.folder) == mode(files.leases) == mode(files.artifacts) == 0o700
    assert mode(files.folder / "start.lock") == 0o600
