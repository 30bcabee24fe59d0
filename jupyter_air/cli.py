"""The ``air`` command: submit workloads and come back to them.

``air run`` submits a workload YAML as a job run (detached: it goes on when the shell closes);
``air list runs``, ``air get run``, ``air logs`` and ``air cancel`` read and act on the job store
of jupyter-air's data folder. Tables for people, ``--output json`` for scripts. Exit codes:
0 ok (a followed job succeeded), 1 the job failed or was cancelled, 2 usage or spec error,
3 no tracking server, 4 not enough GPUs, 5 no such job run, 6 no access to the logs,
130 interrupted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from . import agent_command

if TYPE_CHECKING:
    from .workloads.connection import Connection
    from .workloads.logquery import LogLine
    from .workloads.store import JobRun, JobStore

EXIT_OK = 0
EXIT_JOB_FAILED = 1
EXIT_USAGE = 2
EXIT_NO_TRACKING = 3
EXIT_CAPACITY = 4
EXIT_NOT_FOUND = 5
EXIT_FORBIDDEN = 6
EXIT_INTERRUPTED = 130

STATUSES = ("PENDING", "RUNNING", "SUCCEEDED", "FAILED", "CANCELLED")
ACTIVE = ("PENDING", "RUNNING")

MAIN_HELP = """\
examples:
  air run workload.yaml                 submit; prints the job run id and links
  air run workload.yaml --follow        submit and stream node 0's logs until it ends
  air list runs                         active job runs (--all-status: every one)
  air get run 3f2a9c1b0d4e              status, compute, attempts and their MLflow runs
  air logs 3f2a --follow                logs of node 0, latest attempt, as they come
  air logs 3f2a --level error --grep CUDA
  air logs 3f2a --download-to ./logs    every node and attempt into ./logs/<id>/
  air cancel 3f2a                       stop it (every process of every node)

A job run id can be shortened to a unique prefix of 4 or more digits.
exit codes: 0 ok, 1 job failed or cancelled, 2 usage or spec error, 3 no tracking server,
4 not enough GPUs, 5 no such job run, 6 no access to the logs, 130 interrupted.
"""


class CliError(Exception):
    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.code = code


# parser -------------------------------------------------------------------------------------
def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="air",
        description="Workloads of jupyter-air: job runs with retries, per-node logs and one "
        "MLflow run per attempt.",
        epilog=MAIN_HELP,
        formatter_class=formatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    commands.required = True

    run = commands.add_parser(
        "run",
        help="submit a workload YAML as a job run",
        description="Submit a workload YAML as a job run. It runs detached: closing this shell "
        "does not stop it.",
        epilog="examples:\n  air run workload.yaml\n  air run workload.yaml --follow\n"
        "  air run workload.yaml --output json | jq -r .id",
        formatter_class=formatter,
    )
    run.add_argument("file", metavar="FILE", help="the workload YAML")
    run.add_argument(
        "--follow",
        action="store_true",
        help="stream node 0's logs until the job ends; exit 0 if it succeeded, 1 if not",
    )
    _output(run)

    listing = commands.add_parser("list", help="list job runs (air list runs)")
    what = listing.add_subparsers(dest="what", metavar="runs")
    what.required = True
    runs = what.add_parser(
        "runs",
        help="list job runs, newest first",
        description="List job runs, newest first. By default only active ones (PENDING, RUNNING).",
        epilog="examples:\n  air list runs\n  air list runs --all-status --limit 5\n"
        "  air list runs --status FAILED --experiment my-training --output json",
        formatter_class=formatter,
    )
    runs.add_argument("--all-status", action="store_true", help="job runs of every status")
    runs.add_argument(
        "--status",
        action="append",
        metavar="S",
        type=str.upper,
        help=f"only this status ({', '.join(STATUSES)}); repeat or comma-separate for several",
    )
    runs.add_argument("--experiment", metavar="E", help="only job runs of this experiment")
    runs.add_argument(
        "--limit", metavar="N", type=_positive, default=50, help="at most N (default 50)"
    )
    _output(runs)

    get = commands.add_parser("get", help="show a job run (air get run ID)")
    get_what = get.add_subparsers(dest="what", metavar="run")
    get_what.required = True
    get_run = get_what.add_parser(
        "run",
        help="status, compute, attempts and links of a job run",
        description="Show a job run: status and reason, compute, attempts with their MLflow "
        "run links, and links to the job, the experiment and the runs.",
        epilog="examples:\n  air get run 3f2a9c1b0d4e\n  air get run 3f2a --output json",
        formatter_class=formatter,
    )
    get_run.add_argument("id", metavar="ID", help="job run id (or a unique prefix)")
    _output(get_run)

    logs = commands.add_parser(
        "logs",
        help="print, follow or download a job run's logs",
        description="Print a job run's logs: node 0 of the latest attempt unless told "
        "otherwise. Each line: time (UTC), level, text.",
        epilog="examples:\n  air logs 3f2a\n  air logs 3f2a --follow\n"
        "  air logs 3f2a --node 1 --attempt 2 --tail 100\n"
        "  air logs 3f2a --level error --grep 'out of memory'\n"
        "  air logs 3f2a --download-to ./logs     (every node and attempt unless --node/"
        "--attempt)",
        formatter_class=formatter,
    )
    logs.add_argument("id", metavar="ID", help="job run id (or a unique prefix)")
    logs.add_argument("--node", metavar="N", type=_non_negative, help="node (default 0)")
    logs.add_argument("--attempt", metavar="K", type=_positive, help="attempt (default: latest)")
    logs.add_argument(
        "--level",
        metavar="L",
        help="only these levels: info, warning, error (comma-separated for several)",
    )
    logs.add_argument("--grep", metavar="TEXT", help="only lines containing TEXT (any case)")
    logs.add_argument(
        "--follow",
        "-f",
        action="store_true",
        help="keep printing new lines until the job ends; exit 0 if it succeeded, 1 if not",
    )
    logs.add_argument("--tail", metavar="N", type=_positive, help="only the last N lines")
    logs.add_argument(
        "--download-to",
        metavar="DIR",
        help="write DIR/<id>/attempt_K/node_N.log files (with the filters given)",
    )
    _output(logs)

    cancel = commands.add_parser(
        "cancel",
        help="cancel a job run",
        description="Cancel a job run: every node's processes get SIGTERM, then SIGKILL after "
        "a grace period; the attempt's MLflow run ends KILLED. Waits until nothing is left.",
        epilog="examples:\n  air cancel 3f2a9c1b0d4e",
        formatter_class=formatter,
    )
    cancel.add_argument("id", metavar="ID", help="job run id (or a unique prefix)")
    _output(cancel)
    agent_command.add_parsers(commands)
    return parser


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        "-o",
        choices=("table", "json"),
        default="table",
        help="table for people (default) or json for scripts",
    )


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: must be 1 or more")
    return value


def _non_negative(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r}: must be 0 or more")
    return value


# entry point --------------------------------------------------------------------------------
def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    from .workloads.tracking_calls import bound_mlflow_calls

    bound_mlflow_calls()  # a tracking server that does not answer is said at once, not in 4 min
    handlers = {
        "run": cmd_run,
        "list": cmd_list,
        "get": cmd_get,
        "logs": cmd_logs,
        "cancel": cmd_cancel,
        **agent_command.HANDLERS,
    }
    try:
        return handlers[args.command](args)
    except CliError as error:
        print(f"air: {error}", file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        print("\nair: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `air logs ... | head`
        with contextlib.suppress(Exception):
            sys.stdout.close()
        return EXIT_OK


def _store() -> JobStore:
    from .workloads.jobs import open_store

    return open_store()


def _job(store: JobStore, text: str) -> JobRun:
    from .workloads.jobs import get_job
    from .workloads.paths import InvalidJobId
    from .workloads.store import JobNotFound

    try:
        return get_job(store, text)
    except (JobNotFound, InvalidJobId) as error:
        message = str(error.args[0]) if error.args else str(error)
        raise CliError(
            f"{message}. `air list runs --all-status` lists them.", EXIT_NOT_FOUND
        ) from None


def _connection(require: bool = False, start: bool = False) -> Connection | None:
    from .workloads.connection import NoTrackingServer, find_connection

    try:
        return find_connection(require_tracking=require, start_embedded=start)
    except NoTrackingServer as error:
        raise CliError(str(error), EXIT_NO_TRACKING) from None
    except (OSError, TimeoutError) as error:  # starting jupyter-air's own server failed
        raise CliError(
            f"could not start jupyter-air's MLflow server: {error}", EXIT_NO_TRACKING
        ) from None


# air run ------------------------------------------------------------------------------------
def cmd_run(args: argparse.Namespace) -> int:
    from .tracking.experiments import ExperimentError
    from .workloads.capacity import CapacityError
    from .workloads.jobs import submit
    from .workloads.spec import SpecError, load_spec_file

    try:
        spec, text = load_spec_file(args.file)
    except SpecError as error:
        if args.output == "json":
            problems = {"error": "invalid workload", "problems": error.to_json()}
            _json(problems, sys.stderr, compact=True)
        raise CliError(str(error), EXIT_USAGE) from None
    store = _store()
    found: list[Connection] = []

    def connect() -> Connection:  # after the GPU check: the workload's own problems come first
        connection = _connection(require=True, start=True)
        assert connection is not None
        found.append(connection)
        return connection

    try:
        job = submit(
            spec,
            store=store,
            spec_yaml=text,
            spec_path=args.file,
            source="cli",
            connection=connect,
            report=lambda message: print(message, file=sys.stderr, flush=True),
        )
    except CapacityError as error:
        raise CliError(str(error), EXIT_CAPACITY) from None
    except ExperimentError as error:
        raise CliError(f"{args.file}: experiment_name: {error}", EXIT_USAGE) from None
    except Exception as error:  # MLflow unreachable or refusing
        if _is_mlflow_error(error) and found:
            raise CliError(
                f"MLflow at {found[0].tracking_uri} did not accept the experiment: {error}",
                EXIT_NO_TRACKING,
            ) from None
        raise
    from .workloads.views import job_json

    connection = found[0]
    if args.output == "json":
        _json(job_json(job, connection))
    else:
        _print_submitted(job, connection)
    if not args.follow:
        return EXIT_OK
    return _follow(store, job, node=0, attempt=None, level=None, q=None, output=args.output)


def _is_mlflow_error(error: Exception) -> bool:
    module = type(error).__module__ or ""
    return module.startswith(("mlflow", "requests", "urllib3")) or isinstance(
        error, (ConnectionError, OSError)
    )


def _print_submitted(job: JobRun, connection: Connection) -> None:
    from .workloads.views import job_json

    links = job_json(job, connection)["links"]
    print(f"Submitted job run {job.id} (experiment {job.experiment_name!r})")
    rows = [
        ("Job", links.get("job")),
        ("Experiment", links.get("experiment")),
        ("Status", f"air get run {job.id}"),
        ("Logs", f"air logs {job.id} --follow"),
        ("Cancel", f"air cancel {job.id}"),
    ]
    for label, value in rows:
        if value:
            print(f"  {label + ':':<12}{value}")
    if not links:
        print("  (no links: no Jupyter server with jupyter-air was found to serve the MLflow UI)")


# air list runs ------------------------------------------------------------------------------
def cmd_list(args: argparse.Namespace) -> int:
    from .workloads.jobs import list_jobs
    from .workloads.views import compute_text, duration_s, job_json

    statuses: list[str] | None = None
    if args.status:
        statuses = sorted({s.strip() for item in args.status for s in item.split(",") if s})
        unknown = [s for s in statuses if s not in STATUSES]
        if unknown:
            raise CliError(
                f"unknown status {', '.join(unknown)}: use {', '.join(STATUSES)}", EXIT_USAGE
            )
    elif not args.all_status:
        statuses = list(ACTIVE)
    store = _store()
    jobs = list_jobs(store, status=statuses, experiment=args.experiment, limit=args.limit)
    if statuses == list(ACTIVE):  # a job that just ended is no longer active
        jobs = [j for j in jobs if j.status in ACTIVE]
    if args.output == "json":
        connection = _connection(require=False) if jobs else None
        _json([job_json(job, connection) for job in jobs])
        return EXIT_OK
    if not jobs:
        total = store.count_jobs(experiment=args.experiment)
        what = "active " if statuses == list(ACTIVE) else ""
        hint = " `air list runs --all-status` lists every one." if what and total else ""
        print(f"No {what}job runs.{hint}", file=sys.stderr)
        return EXIT_OK
    rows = []
    for job in jobs:
        rows.append(
            [
                job.id,
                job.status,
                job.experiment_name,
                job.run_name,
                f"{len(job.attempts)}/{job.max_retries + 1}",
                compute_text(job.compute),
                _when(job.submitted_at),
                _duration(duration_s(job)),
            ]
        )
    headers = ["ID", "STATUS", "EXPERIMENT", "RUN NAME", "ATTEMPTS", "COMPUTE", "SUBMITTED"]
    _table([*headers, "DURATION"], rows)
    return EXIT_OK


# air get run --------------------------------------------------------------------------------
def cmd_get(args: argparse.Namespace) -> int:
    from .workloads.views import compute_text, duration_s, job_json

    store = _store()
    job = _job(store, args.id)
    if job.finished and job.runs_closed_at is None:  # what MLflow missed, if it answers now
        from .workloads.reconcile import reconcile

        with contextlib.suppress(Exception):
            reconcile(store, [job.id], budget_s=5.0)
            job = store.get_job(job.id)
    connection = _connection(require=False)
    data = job_json(job, connection)
    if args.output == "json":
        _json(data)
        return EXIT_OK
    status = job.status + (f" ({job.reason})" if job.reason else "")
    print(f"Job run {job.id}: {status}")
    fields = [
        ("Experiment", f"{job.experiment_name} (id {job.experiment_id})"),
        ("Run name", job.run_name),
        ("Command", job.command),
        ("Compute", compute_text(job.compute) + _gpus_text(job)),
        ("Backend", _backend_text(job)),
        ("Working dir", job.working_dir),
        ("Retries", f"up to {job.max_retries}"),
        ("Timeout", f"{job.timeout_minutes:g} min per attempt" if job.timeout_minutes else None),
        ("Submitted", f"{_when(job.submitted_at)} by {job.user} from {_source(job)}"),
        ("Started", _when(job.started_at) if job.started_at else None),
        ("Ended", _when(job.ended_at) if job.ended_at else None),
        ("Duration", _duration(duration_s(job))),
        ("Logs", "purged (retention)" if job.logs_purged_at else f"air logs {job.id}"),
    ]
    for label, value in fields:
        if value:
            print(f"  {label + ':':<13}{value}")
    if job.warnings:
        print("\nWarnings")
        for warning in job.warnings[-10:]:
            print(f"  {_when(warning.get('t'))}  {warning.get('message')}")
    if data["attempts"]:
        print("\nAttempts")
        rows = []
        for attempt in data["attempts"]:
            link = attempt["links"].get("run") or attempt["mlflow_run_id"] or ""
            hosts = ",".join(n["host"] or "?" for n in attempt["nodes"]) if attempt["nodes"] else ""
            rows.append(
                [
                    str(attempt["attempt"]),
                    attempt["status"],
                    _when(attempt["started_at"]),
                    _duration(attempt["duration_s"]),
                    f"{attempt['backend']} {hosts}".strip(),
                    attempt["reason"] or "",
                    link,
                ]
            )
        headers = ["#", "STATUS", "STARTED", "DURATION", "WHERE", "REASON", "MLFLOW RUN"]
        _table(headers, rows, indent=2)
    links = data["links"]
    print("\nLinks")
    if links:
        for label, key in (("Job", "job"), ("Experiment", "experiment")):
            if links.get(key):
                print(f"  {label + ':':<13}{links[key]}")
        for attempt in data["attempts"]:
            run_links = attempt["links"]
            if run_links.get("run"):
                print(f"  {'Run ' + str(attempt['attempt']) + ':':<13}{run_links['run']}")
                print(f"  {'  metrics:':<13}{run_links['system_metrics']}")
    else:
        print(
            "  none: no Jupyter server with jupyter-air is running to serve the MLflow UI "
            "(start JupyterLab)."
        )
    return EXIT_OK


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


# air logs -----------------------------------------------------------------------------------
def cmd_logs(args: argparse.Namespace) -> int:
    from .workloads.logquery import InvalidQuery, download_to, query_logs

    store = _store()
    job = _job(store, args.id)
    node = args.node if args.node is not None else 0
    try:
        if args.download_to:
            if args.follow or args.tail:
                raise CliError("--download-to goes with neither --follow nor --tail", EXIT_USAGE)
            written = download_to(
                store,
                job.id,
                args.download_to,
                attempts=[args.attempt] if args.attempt else None,
                nodes=[args.node] if args.node is not None else None,
                level=args.level,
                q=args.grep,
            )
            if args.output == "json":
                _json({"files": [str(p) for p in written]})
            else:
                for path in written:
                    print(path)
                if not written:
                    print("No log files: the job run has no attempt yet.", file=sys.stderr)
            return EXIT_OK
        if job.logs_purged_at:
            print(
                f"The logs of job run {job.id} were purged (older than the retention period); "
                "its MLflow runs keep a copy (artifacts logs/attempt_K/node_N.log).",
                file=sys.stderr,
            )
        filters: dict[str, Any] = {"attempt": args.attempt, "node": node}
        filters.update(level=args.level, q=args.grep)
        cursor = None
        if args.tail:
            page = query_logs(store, job.id, tail=True, limit=args.tail, job=job, **filters)
            _print_lines(page.lines, args.output, job)
            cursor = page.next
        else:
            while True:
                page = query_logs(store, job.id, after=cursor, limit=5000, job=job, **filters)
                _print_lines(page.lines, args.output, job)
                cursor = page.next
                if not page.more:
                    break
        if not args.follow:
            return EXIT_OK
        return _follow(
            store,
            job,
            node=node,
            attempt=args.attempt,
            level=args.level,
            q=args.grep,
            output=args.output,
            after=cursor,
        )
    except InvalidQuery as error:
        raise CliError(str(error), EXIT_USAGE) from None
    except PermissionError as error:
        raise _no_log_access(store, job, error) from None


def _no_log_access(store: JobStore, job: JobRun, error: PermissionError) -> CliError:
    """A log file or folder this user may not read, or a download folder it may not write."""
    import getpass

    from .workloads.paths import job_dir

    folder = job_dir(store.data_dir, job.id)
    where = Path(error.filename) if error.filename else None
    if where is not None and folder not in (where, *where.parents):
        return CliError(f"cannot write {where}: permission denied", EXIT_USAGE)
    owner = f"its owner ({job.user})" if job.user else "its owner"
    return CliError(
        f"You don't have access to these logs: {where or folder} is not readable by "
        f"{getpass.getuser()}. Access to job run {job.id} does not include its logs; ask {owner} "
        f"or an administrator of this machine for read access to {folder}.",
        EXIT_FORBIDDEN,
    )


def _follow(
    store: JobStore,
    job: JobRun,
    *,
    node: int,
    attempt: int | None,
    level: str | None,
    q: str | None,
    output: str,
    after: str | None = None,
) -> int:
    from .workloads.follow import AttemptStarted, JobEnded, follow
    from .workloads.logquery import LogLine

    connection = None
    current = None
    if after is not None:
        current = int(after.split(":")[0]) or None
    try:
        for event in follow(
            store, job.id, attempt=attempt, node=node, level=level, q=q, after=after
        ):
            if isinstance(event, LogLine):
                if event.attempt != current and output != "json":
                    current = event.attempt
                    total = job.max_retries + 1
                    print(f"── attempt {current} of {total} ──", file=sys.stderr, flush=True)
                _print_lines([event], output, job)
            elif isinstance(event, AttemptStarted) and output != "json":
                latest = event.attempt.attempt == len(event.job.attempts)
                if latest and event.attempt.ended_at is None:
                    if connection is None:
                        connection = _connection(require=False) or False
                    _print_attempt(event, connection or None)
            elif isinstance(event, JobEnded):
                ended = event.job
                if output == "json":
                    end = {"event": "end", "id": ended.id, "status": ended.status}
                    _json({**end, "reason": ended.reason}, compact=True)
                else:
                    print(
                        f"Job run {ended.id} {ended.status}: {ended.reason}",
                        file=sys.stderr,
                        flush=True,
                    )
                return EXIT_OK if ended.status == "SUCCEEDED" else EXIT_JOB_FAILED
    except KeyboardInterrupt:
        print(
            f"\nStopped following; the job run goes on (air cancel {job.id} stops it).",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return EXIT_OK


def _print_attempt(event: Any, connection: Connection | None) -> None:
    attempt = event.attempt
    job = event.job
    run_id = attempt.mlflow_run_id
    link = ""
    if run_id:
        from .workloads.views import connection_for

        conn = connection_for(job, connection)
        if conn is not None:
            link = conn.run_links(job.experiment_id, run_id).get("run", "")
    text = f"attempt {attempt.attempt} started"
    if run_id:
        text += f": MLflow run {link or run_id}"
    print(text, file=sys.stderr, flush=True)


_COLOURS = {"error": "\x1b[31m", "warning": "\x1b[33m"}


def _print_lines(lines: list[LogLine], output: str, job: JobRun) -> None:
    if not lines:
        return
    out = sys.stdout
    if output == "json":
        out.write("".join(json.dumps(line.to_dict()) + "\n" for line in lines))
    else:
        colour = out.isatty()
        parts = []
        for line in lines:
            word = {"info": "INFO ", "warning": "WARN ", "error": "ERROR"}[line.level]
            if colour and line.level in _COLOURS:
                word = f"{_COLOURS[line.level]}{word}\x1b[0m"
            parts.append(f"{line.t} {word} {line.text}\n")
        out.write("".join(parts))
    out.flush()


# air cancel ---------------------------------------------------------------------------------
def cmd_cancel(args: argparse.Namespace) -> int:
    from .workloads.jobs import cancel
    from .workloads.views import job_json

    store = _store()
    job = _job(store, args.id)
    before = job.status
    if job.finished:
        if args.output == "json":
            _json(job_json(job))
        else:
            print(f"Job run {job.id} already ended {job.status}; nothing to cancel.")
        return EXIT_OK
    if args.output != "json":
        print(f"Cancelling job run {job.id} ({before})…", file=sys.stderr, flush=True)
    job = cancel(store, job.id)
    if args.output == "json":
        _json(job_json(job))
    else:
        print(f"Job run {job.id} {job.status}: {job.reason}")
    return EXIT_OK


# output helpers -----------------------------------------------------------------------------
def _json(data: Any, stream: TextIO | None = None, *, compact: bool = False) -> None:
    stream = stream or sys.stdout
    stream.write(json.dumps(data, indent=None if compact else 2, default=str) + "\n")
    stream.flush()


def _table(headers: list[str], rows: list[list[str]], indent: int = 0) -> None:
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(str(cell)))
    pad = " " * indent

    def line(cells: list[str]) -> str:
        text = "  ".join(str(c).ljust(widths[i]) for i, c in enumerate(cells))
        return pad + text.rstrip()

    print(line(headers))
    for row in rows:
        print(line(row))


def _when(t: float | None) -> str:
    if t is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(int(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


if __name__ == "__main__":
    sys.exit(main())
