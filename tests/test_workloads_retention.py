"""Retention: logs of job runs that ended more than 60 days ago (configurable) are purged with
their index rows; the job runs stay listed, marked purged; recent and running ones are kept."""

from __future__ import annotations

import time

from test_workloads_store import new_job

from jupyter_air.logs.logfile import LogWriter
from jupyter_air.logs.query import query_logs
from jupyter_air.workloads.paths import checkpoint_home, checkpoint_node_dir, job_dir, log_path
from jupyter_air.workloads.retention import purge_logs
from jupyter_air.workloads.store import JobStore

DAY = 86400.0


def finished_job(store: JobStore, ended_days_ago: float | None):
    job = new_job(store)
    store.mark_running(job.id)
    store.start_attempt(job.id, 1)
    path = log_path(store.data_dir, job.id, 1, 0)
    with LogWriter(path) as writer:
        writer.write("stdout", [("info", "hello")])
    store.index_log_file(job.id, 1, 0, str(path), bytes=path.stat().st_size, lines=1, complete=1)
    if ended_days_ago is not None:
        store.finish_attempt(job.id, 1, "SUCCEEDED", "ok")
        store.finish_job(job.id, "SUCCEEDED", "ok")
        store.update_job(job.id, ended_at=time.time() - ended_days_ago * DAY)
    return store.get_job(job.id), path


def test_purge(tmp_path, monkeypatch):
    monkeypatch.delenv("JUPYTER_AIR_LOG_RETENTION_DAYS", raising=False)
    store = JobStore.for_data_dir(tmp_path)
    old, old_log = finished_job(store, 61)
    recent, recent_log = finished_job(store, 59)
    running, running_log = finished_job(store, None)
    store.update_job(running.id, submitted_at=time.time() - 100 * DAY)

    snapshots = [job_dir(store.data_dir, job.id) / "code" for job in (old, recent)]
    for snapshot in snapshots:
        snapshot.mkdir()
        (snapshot / "train.py").write_text("print(1)\n")
    checkpoints = []
    for job in (old, recent):
        kept = checkpoint_home(store.data_dir, job.id) / "node_0" / "model.pt"
        on_node = checkpoint_node_dir(store.data_dir, job.id, 0) / "model.pt"
        for path in (kept, on_node):
            path.parent.mkdir(parents=True)
            path.write_bytes(b"w" * 1000)
        checkpoints.append((kept, on_node))
    report = purge_logs(store)
    assert report.jobs == [old.id] and report.bytes > 2000
    assert not old_log.exists() and not old_log.parent.exists()
    assert not snapshots[0].exists() and snapshots[1].exists()  # with its logs
    assert not any(p.exists() for p in checkpoints[0])  # and its checkpoints
    assert all(p.exists() for p in checkpoints[1])
    assert recent_log.exists() and running_log.exists()
    assert store.log_files(old.id) == []
    assert len(store.log_files(recent.id)) == 1
    kept = store.get_job(old.id)  # the job run stays, marked
    assert kept.status == "SUCCEEDED" and kept.logs_purged_at is not None
    page = query_logs(store, old.id)
    assert page.purged and page.lines == []
    assert purge_logs(store).jobs == []  # nothing left to do

    # configurable: an argument, or the environment; 0 turns it off
    assert purge_logs(store, days=0).jobs == []
    monkeypatch.setenv("JUPYTER_AIR_LOG_RETENTION_DAYS", "30")
    assert purge_logs(store).jobs == [recent.id]
    later = time.time() + 400 * DAY
    assert purge_logs(store, days=1, now=later).jobs == []  # the running one is never purged
