"""``air list runs``, ``air get run`` and ``air cancel``: the job runs of the data folder, each
checked first (``jobs.refresh``: a supervisor that is gone ends its job run), as tables or as
the REST API's JSON."""

from __future__ import annotations

import argparse
import contextlib
import sys
from typing import TYPE_CHECKING, Any

from ..api.enums import JOB_ACTIVE, JobStatus
from .common import EXIT_OK, EXIT_USAGE, CliError, checked_job, connection, open_store
from .render import (
    duration_text,
    fields,
    json_out,
    outcome_text,
    queue_place,
    say,
    status_text,
    table,
    time_cell,
    time_text,
)

if TYPE_CHECKING:
    from ..api.workloads import Job, JobAttempt
    from ..workloads.store import JobRun, JobStore

ACTIVE = [s.value for s in JobStatus if s in JOB_ACTIVE]


# air list runs ------------------------------------------------------------------------------
def cmd_list(args: argparse.Namespace) -> int:
    from ..workloads.jobs import list_jobs
    from ..workloads.views import compute_text, duration_s, job_json

    filters, status_filter = _filters(args.filter)
    if not args.all_users and "user" not in filters:
        from ..tracking.naming import current_user

        filters["user"] = current_user()
    statuses: list[str] | None = None
    asked = [*(args.status or []), *status_filter]
    if asked:
        statuses = sorted({s.strip() for item in asked for s in item.split(",") if s.strip()})
        unknown = [s for s in statuses if s not in list(JobStatus)]
        if unknown:
            raise CliError(
                f"unknown status {', '.join(unknown)}: use {', '.join(JobStatus)}", EXIT_USAGE
            )
    elif not args.all_status:
        statuses = ACTIVE
    store = open_store()
    jobs = list_jobs(
        store, status=statuses, experiment=args.experiment, limit=args.limit, **filters
    )
    if statuses == ACTIVE:  # a job that just ended is no longer active
        jobs = [j for j in jobs if j.status in JOB_ACTIVE]
    if args.output == "json":
        found = connection(require=False) if jobs else None
        json_out([job_json(job, found) for job in jobs])
        return EXIT_OK
    if not jobs:
        total = store.count_jobs(experiment=args.experiment, **filters)
        what = "active " if statuses == ACTIVE else ""
        hint = " `air list runs --all-status` lists every one." if what and total else ""
        print(f"No {what}job runs.{hint}", file=sys.stderr)
        return EXIT_OK
    rows = [
        [
            job.id,
            _status_cell(job),
            job.experiment_name,
            job.run_name,
            f"{len(job.attempts)}/{job.max_retries + 1}",
            compute_text(job.compute),
            time_cell(job.submitted_at),
            duration_text(duration_s(job)),
        ]
        for job in jobs
    ]
    if args.all_users:
        rows = [[*row, job.user or "?"] for row, job in zip(rows, jobs, strict=True)]
    headers = ["ID", "STATUS", "EXPERIMENT", "RUN NAME", "ATTEMPTS", "COMPUTE", "SUBMITTED"]
    headers += ["DURATION", *(["USER"] if args.all_users else [])]
    # on a narrow terminal: without the run name, the duration, the attempts (air get run)
    table(headers, rows, keep=(0, 1, 5), drop=(3, 7, 4))
    return EXIT_OK


def _status_cell(job: JobRun) -> str:
    """``QUEUED 2nd of 3`` for a queued job run, else its status."""
    if job.status == JobStatus.QUEUED:
        return f"{job.status} {queue_place(job.queue)}".strip()
    return job.status


def _filters(given: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``--filter KEY=VALUE`` items as ``JobStore.list_jobs`` filters, and the statuses asked."""
    from .parser import FILTER_KEYS

    filters: dict[str, Any] = {}
    statuses: list[str] = []
    for item in given:
        key, equals, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not value:
            raise CliError(f"--filter {item!r}: give KEY=VALUE", EXIT_USAGE)
        if key not in FILTER_KEYS:
            raise CliError(
                f"--filter: unknown key {key!r}; the keys are {', '.join(FILTER_KEYS)}", EXIT_USAGE
            )
        if key == "status":
            statuses.append(value.upper())
        elif key == "experiment":
            filters["experiment_glob"] = value
        elif key == "num_accelerators":
            if not value.isdigit():
                raise CliError(f"--filter {item!r}: a whole number", EXIT_USAGE)
            filters["num_accelerators"] = int(value)
        else:
            filters[key] = value
    return filters, statuses


# air get run --------------------------------------------------------------------------------
def cmd_get(args: argparse.Namespace) -> int:
    from ..workloads.overrides import recorded_overrides
    from ..workloads.snapshot import CodeRecord, code_text
    from ..workloads.views import compute_text, job_view

    store = open_store()
    job = checked_job(store, args.id)
    if job.finished and job.runs_closed_at is None:  # what MLflow missed, if it answers now
        from ..workloads.reconcile import reconcile

        with contextlib.suppress(Exception):
            reconcile(store, [job.id], budget_s=5.0)
            job = store.get_job(job.id)
    view = job_view(job, connection(require=False))
    if args.output == "json":
        json_out(view.model_dump(mode="json"))
        return EXIT_OK
    queued = view.queue
    say(f"Job run {job.id}: {status_text(job.status, queued.reason if queued else job.reason)}")
    silent = view.supervisor_silent_s
    rows = [
        ("Queue", _queue_text(job) if queued else None),
        ("Experiment", f"{job.experiment_name} (id {job.experiment_id})"),
        ("Run name", job.run_name),
        ("Command", job.command),
        ("Overrides", "  ".join(recorded_overrides(job.spec_yaml))),
        ("Idempotency", job.idempotency_key),
        ("Schedule", f"{job.schedule_name} ({job.schedule_id})" if job.schedule_id else None),
        ("Compute", compute_text(job.compute) + _gpus_text(job)),
        ("Backend", _backend_text(job)),
        ("Working dir", job.working_dir),
        ("Code", code_text(CodeRecord.from_dict(job.spec.get("code")))),
        ("Retries", f"up to {job.max_retries}"),
        ("Timeout", f"{job.timeout_minutes:g} min per attempt" if job.timeout_minutes else None),
        ("Submitted", f"{time_text(job.submitted_at)} by {job.user} from {_source(job)}"),
        ("Started", time_text(job.started_at) if job.started_at else None),
        ("Ended", time_text(job.ended_at) if job.ended_at else None),
        ("Duration", duration_text(view.duration_s)),
        ("Supervisor", f"not seen for {silent:.0f} s" if silent is not None else None),
        ("Logs", "purged (retention)" if job.logs_purged_at else f"air logs {job.id}"),
    ]
    fields(rows, 13)
    if view.warnings:
        print("\nWarnings")
        fields(((time_text(w.t), w.message) for w in view.warnings[-10:]), 21)
    if view.attempts:
        _print_attempts(view)
    _print_links(view)
    return EXIT_OK


def _queue_text(job: JobRun) -> str:
    """``2nd of 3 in the queue of ray://head:10001 since 14:02 (air cancel ID leaves it)``."""
    queue = job.queue or {}
    where = f" of {queue['cluster']}" if queue.get("cluster") else ""
    since = time_text(queue["since"]) if queue.get("since") else "?"
    return f"{queue_place(queue)} in the queue{where}, since {since}"


def _print_attempts(view: Job) -> None:
    print("\nAttempts")
    rows = []
    for attempt in view.attempts:
        hosts = ",".join(n.host or "?" for n in attempt.nodes)
        rows.append(
            [
                str(attempt.attempt),
                attempt.status,
                time_cell(attempt.started_at),
                duration_text(attempt.duration_s),
                f"{attempt.backend} {hosts}".strip(),
                attempt.reason or "",
                attempt.mlflow_run_id or "",
            ]
        )
    headers = ["#", "STATUS", "STARTED", "DURATION", "WHERE", "REASON", "MLFLOW RUN"]
    # the runs' links follow (Links); on a narrow terminal: without where and how long
    table(headers, rows, indent=2, keep=(0, 1, 6), drop=(4, 3, 2))
    lines = [(f"Attempt {a.attempt}", checkpoint_text(a)) for a in view.attempts]
    if any(text for _, text in lines):
        print("\nCheckpoints")
        fields(lines, 13)


def checkpoint_text(attempt: JobAttempt) -> str | None:
    """What an attempt started from and saved (docs/checkpoints.md), and its restarts."""
    from ..rendering import size_text

    record = attempt.checkpoint
    if record is None:
        return None
    parts = []
    if record.restored is not None:
        got = record.restored
        when = f", saved {time_text(got.saved_at)}" if got.saved_at else ""
        parts.append(
            f"resumed from attempt {got.attempt} ({got.files} files, {size_text(got.bytes)}{when})"
        )
    saved = record.saved
    if saved is not None and saved.files:
        parts.append(f"saved {saved.files} files, {size_text(saved.bytes)}")
    if saved is not None and saved.error:
        parts.append(f"error: {saved.error}")
    if record.restarts:
        parts.append(f"{record.restarts} restart{'s' if record.restarts != 1 else ''} in place")
    return "; ".join(parts) or None


def _print_links(view: Job) -> None:
    print("\nLinks")
    links = [("Job", view.links.job), ("Experiment", view.links.experiment)]
    for attempt in view.attempts:
        if attempt.links.run:
            links.append((f"Run {attempt.attempt}", attempt.links.run))
            links.append(("  metrics", attempt.links.system_metrics))
    if not any(link for _, link in links):
        say(
            "none: no Jupyter server with jupyter-air is running to serve the MLflow UI "
            "(start JupyterLab).",
            indent=2,
        )
    fields(links, 13)


def _backend_text(job: JobRun) -> str:
    if (job.backend or "local") == "local":
        return "local (every node on this machine)"
    return f"{job.backend} (cluster {job.cluster or 'of RAY_ADDRESS'})"


def _gpus_text(job: JobRun) -> str:
    if not any(job.gpus):
        return ""
    per_node = ["GPU " + ",".join(str(i) for i in node) for node in job.gpus]
    return " (" + "; ".join(f"node {k}: {text}" for k, text in enumerate(per_node)) + ")"


def _source(job: JobRun) -> str:
    if job.notebook:
        return f"notebook {job.notebook}"
    return job.spec_path or job.source or "?"


# air cancel ---------------------------------------------------------------------------------
def cmd_cancel(args: argparse.Namespace) -> int:
    """Cancel and wait until nothing of the job runs is left (the user asked: it may block).
    Every id is resolved first: an unknown one cancels none."""
    from ..workloads.jobs import cancel_many
    from ..workloads.views import job_json

    if bool(args.ids) == bool(args.all):
        raise CliError("give job run ids, or --all (not both)", EXIT_USAGE)
    store = open_store()
    if args.all:
        jobs = _all_active(store, args)
        if jobs is None:
            return EXIT_OK
    else:
        jobs = list({job.id: job for job in (checked_job(store, i) for i in args.ids)}.values())
    ended = [job for job in jobs if job.finished]
    active = [job for job in jobs if not job.finished]
    if args.output != "json":
        for job in ended:
            print(f"Job run {job.id} already ended {job.status}; nothing to cancel.")
        for job in active:
            print(f"Cancelling job run {job.id} ({job.status})…", file=sys.stderr, flush=True)
    cancelled = {job.id: job for job in cancel_many(store, [job.id for job in active])}
    results = [cancelled.get(job.id, job) for job in jobs]
    if args.output == "json":
        out = [job_json(job) for job in results]
        json_out(out[0] if len(args.ids) == 1 else out)
    else:
        for job in active:
            say(outcome_text(cancelled[job.id]))
    return EXIT_OK


def _all_active(store: JobStore, args: argparse.Namespace) -> list[JobRun] | None:
    """``air cancel --all``: the current user's active job runs, once confirmed (None: none,
    or the user said no)."""
    from ..tracking.naming import current_user
    from ..workloads.jobs import list_jobs

    jobs = list_jobs(store, status=ACTIVE, user=current_user(), limit=MAX_CANCEL_ALL)
    jobs = [job for job in jobs if job.status in JOB_ACTIVE]
    if not jobs:
        print("No active job runs to cancel.", file=sys.stderr)
        if args.output == "json":
            json_out([])
        return None
    what = f"{len(jobs)} active job run{'s' if len(jobs) > 1 else ''}"
    if args.yes:
        return jobs
    if not sys.stdin.isatty():
        raise CliError(
            f"--all would cancel {what} ({', '.join(j.id for j in jobs)}); there is no "
            "terminal to ask on: add -y to cancel them",
            EXIT_USAGE,
        )
    listed = "".join(f"\n  {j.id}  {j.status:<8} {j.experiment_name}" for j in jobs)
    answer = input(f"Cancel {what} of {current_user()}?{listed}\n[y/N] ")
    if answer.strip().lower() not in ("y", "yes"):
        print("Nothing cancelled.", file=sys.stderr)
        return None
    return jobs


MAX_CANCEL_ALL = 10_000
