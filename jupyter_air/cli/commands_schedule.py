"""``air schedule create|list|get|pause|resume|delete|trigger``: workloads run on a cron schedule
by the Jupyter server of the data folder (``workloads/schedules.py``), addressed by id or unique
name, as tables or as the REST API's JSON."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from .common import EXIT_NOT_FOUND, EXIT_OK, EXIT_USAGE, CliError, connection, open_store
from .render import json_out, printable, table, time_text

if TYPE_CHECKING:
    from ..api.schedules import Schedule as ScheduleView
    from ..workloads.store import JobStore, Schedule

FIRES_FROM_SERVER = (
    "It fires from the Jupyter server with jupyter-air of this data folder, while one runs "
    "(missed slots follow catch_up)."
)


def cmd_schedule(args: argparse.Namespace) -> int:
    verbs = {
        "create": _create,
        "list": _list,
        "get": _get,
        "pause": _pause,
        "resume": _resume,
        "delete": _delete,
        "trigger": _trigger,
    }
    return verbs[args.verb](args)


def _found(store: JobStore, text: str) -> Schedule:
    from ..workloads.store import ScheduleNotFound

    try:
        return store.get_schedule(text.strip())
    except ScheduleNotFound as error:
        raise CliError(f"{error}. `air schedule list` lists them.", EXIT_NOT_FOUND) from None


def _view(store: JobStore, schedule: Schedule, detail: bool = False) -> ScheduleView:
    from ..workloads.schedules import schedule_view

    return schedule_view(store, schedule, time.time(), connection(require=False), detail=detail)


def _create(args: argparse.Namespace) -> int:
    from ..workloads.schedules import ScheduleError, create_schedule, schedule_settings
    from ..workloads.spec import SpecError
    from ..workloads.spec_loading import load_spec_file
    from ..workloads.store import ScheduleExists

    try:
        spec, text = load_spec_file(args.file)
        settings = schedule_settings(
            spec,
            args.file,
            cron=args.cron,
            timezone=args.timezone,
            overlap=args.overlap,
            catch_up=args.catch_up,
        )
    except SpecError as error:
        if args.output == "json":
            problems = {"error": "invalid workload", "problems": error.to_json()}
            json_out(problems, sys.stderr, compact=True)
        raise CliError(str(error), EXIT_USAGE) from None
    store = open_store()
    try:
        schedule = create_schedule(
            store,
            name=args.name or Path(args.file).stem,
            settings=settings,
            spec_yaml=text,
            spec_path=args.file,
            paused=args.paused,
        )
    except (ScheduleError, ScheduleExists) as error:
        raise CliError(str(error), EXIT_USAGE) from None
    view = _view(store, schedule)
    if args.output == "json":
        json_out(view.model_dump(mode="json"))
        return EXIT_OK
    print(printable(f"Created schedule {schedule.name} ({schedule.id}): {_when(schedule)}"))
    print(f"  Next firing: {_next(view)}")
    print(f"  {FIRES_FROM_SERVER}")
    return EXIT_OK


def _list(args: argparse.Namespace) -> int:
    store = open_store()
    views = [_view(store, s) for s in store.list_schedules()]
    if args.output == "json":
        json_out([v.model_dump(mode="json") for v in views])
        return EXIT_OK
    if not views:
        print("No schedules. `air schedule create FILE --cron '0 3 * * *'` makes one.")
        return EXIT_OK
    rows = [
        [
            v.name,
            v.cron,
            v.timezone,
            _next(v, short=True),
            "paused" if v.paused else "active",
            v.last_runs[0].status if v.last_runs else "-",
        ]
        for v in views
    ]
    table(["NAME", "CRON", "TIMEZONE", "NEXT FIRING", "STATE", "LAST RUN"], rows)
    return EXIT_OK


def _get(args: argparse.Namespace) -> int:
    store = open_store()
    schedule = _found(store, args.id)
    view = _view(store, schedule, detail=True)
    if args.output == "json":
        json_out(view.model_dump(mode="json"))
        return EXIT_OK
    _print(view)
    return EXIT_OK


def _print(view: ScheduleView) -> None:
    state = "paused" if view.paused else "active"
    print(printable(f"Schedule {view.name} ({view.id}): {state}"))
    fields = [
        ("Cron", f"{view.cron} ({view.timezone})"),
        ("Next firing", _next(view)),
        ("Overlap", view.overlap),
        ("Catch-up", view.catch_up),
        ("Experiment", view.experiment_name),
        ("Workload", view.spec_path),
        ("Created", f"{time_text(view.created_at)} by {view.user}"),
        ("Queued", time_text(view.queued_slot) if view.queued_slot else None),
    ]
    for label, value in fields:
        if value:
            print(f"  {label + ':':<13}{printable(value)}")
    if view.last_runs:
        print("\nLast runs")
        rows = [[r.id, r.status, time_text(r.submitted_at)] for r in view.last_runs]
        table(["ID", "STATUS", "SUBMITTED"], rows, indent=2)
    if view.firings:
        print("\nFirings")
        rows = [
            [
                time_text(f.slot) if f.slot is not None else "(trigger)",
                f.outcome,
                f.job_id or "",
                f.reason or "",
            ]
            for f in view.firings
        ]
        table(["SLOT", "OUTCOME", "JOB RUN", "REASON"], rows, indent=2)


def _pause(args: argparse.Namespace) -> int:
    return _set_paused(args, True)


def _resume(args: argparse.Namespace) -> int:
    return _set_paused(args, False)


def _set_paused(args: argparse.Namespace, paused: bool) -> int:
    from ..workloads.schedules import set_paused

    store = open_store()
    schedule = set_paused(store, _found(store, args.id), paused, time.time())
    view = _view(store, schedule)
    if args.output == "json":
        json_out(view.model_dump(mode="json"))
    elif paused:
        print(f"Paused schedule {schedule.name}: it fires no more until resumed.")
    else:
        print(f"Resumed schedule {schedule.name}: next firing {_next(view)}.")
    return EXIT_OK


def _delete(args: argparse.Namespace) -> int:
    store = open_store()
    schedule = _found(store, args.id)
    view = _view(store, schedule)
    store.delete_schedule(schedule.id)
    if args.output == "json":
        json_out(view.model_dump(mode="json"))
    else:
        print(
            f"Deleted schedule {schedule.name}; its job runs stay "
            f"(air list runs --all-status --filter schedule={schedule.name})."
        )
    return EXIT_OK


def _trigger(args: argparse.Namespace) -> int:
    """One job run now, as ``air run`` submits it (its errors and exit codes too)."""
    from ..workloads.jobs import open_store as store_of
    from ..workloads.schedules import Scheduler
    from ..workloads.spec import SpecError
    from ..workloads.views import job_view
    from .commands_run import _print_submitted, _submission_errors

    store = store_of()
    schedule = _found(store, args.id)
    found = connection(require=True, start=True)
    assert found is not None
    scheduler = Scheduler(store, connection=found)
    try:
        with _submission_errors(schedule.spec_path or schedule.name, lambda: found.tracking_uri):
            job = scheduler.trigger(schedule)
    except SpecError as error:
        raise CliError(f"the schedule's workload is no longer valid: {error}", EXIT_USAGE) from None
    view = job_view(job, found)
    if args.output == "json":
        json_out(view.model_dump(mode="json"))
    else:
        _print_submitted(view)
    return EXIT_OK


def _when(schedule: Schedule) -> str:
    return (
        f"{schedule.cron} ({schedule.timezone}), overlap {schedule.overlap}, "
        f"catch-up {schedule.catch_up}" + (", paused" if schedule.paused else "")
    )


def _next(view: ScheduleView, short: bool = False) -> str:
    if view.next_firing_at is None:
        return "-" if short else "none (paused)"
    text = time_text(view.next_firing_at)
    return text[:16] if short else text
