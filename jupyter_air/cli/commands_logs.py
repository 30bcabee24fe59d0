"""``air logs``: print, follow or download a job run's logs; and following a job run, which
``air run --follow`` shares."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..api.enums import JobStatus
from .common import (
    EXIT_FORBIDDEN,
    EXIT_INTERRUPTED,
    EXIT_JOB_FAILED,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    checked_job,
    connection,
    open_store,
)
from .render import json_out, outcome_text, say

if TYPE_CHECKING:
    from ..logs.follow import AttemptStarted
    from ..logs.scan import LogLine
    from ..workloads.connection import Connection
    from ..workloads.store import JobRun, JobStore


def cmd_logs(args: argparse.Namespace) -> int:
    from ..logs.filters import InvalidQuery
    from ..logs.query import download_to, query_logs

    if args.retry is not None:
        if args.attempt is not None:
            raise CliError("give --attempt or --retry, not both", EXIT_USAGE)
        args.attempt = None if args.retry == -1 else args.retry
    store = open_store()
    job = checked_job(store, args.id)
    node = args.node if args.node is not None else 0
    since = time.time() - args.minutes * 60 if args.minutes else None
    try:
        if args.download_to:
            if args.follow or args.tail or args.minutes:
                raise CliError(
                    "--download-to goes with none of --follow, --lines/--tail, --minutes",
                    EXIT_USAGE,
                )
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
                json_out({"files": [str(p) for p in written]})
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
        filters.update(level=args.level, q=args.grep, since=since)
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
        return follow(
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

    from ..workloads.paths import job_dir

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


def follow(
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
    from ..logs.follow import AttemptStarted, JobEnded, Queued, follow
    from ..logs.scan import LogLine

    found: list[Connection | None] = []  # looked up once, when an attempt is first shown
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
            elif isinstance(event, Queued) and output != "json":
                say(event.text(), stream=sys.stderr)
            elif isinstance(event, AttemptStarted) and output != "json":
                latest = event.attempt.attempt == len(event.job.attempts)
                if latest and event.attempt.ended_at is None:
                    if not found:
                        found.append(connection(require=False))
                    _print_attempt(event, found[0])
            elif isinstance(event, JobEnded):
                ended = event.job
                if output == "json":
                    end = {"event": "end", "id": ended.id, "status": ended.status}
                    json_out({**end, "reason": ended.reason}, compact=True)
                else:
                    say(outcome_text(ended), stream=sys.stderr)
                return EXIT_OK if ended.status == JobStatus.SUCCEEDED else EXIT_JOB_FAILED
    except KeyboardInterrupt:
        print(
            f"\nStopped following; the job run goes on (air cancel {job.id} stops it).",
            file=sys.stderr,
        )
        return EXIT_INTERRUPTED
    return EXIT_OK


def _print_attempt(event: AttemptStarted, found: Connection | None) -> None:
    attempt = event.attempt
    job = event.job
    run_id = attempt.mlflow_run_id
    link = ""
    if run_id:
        from ..workloads.views import connection_for

        conn = connection_for(job, found)
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
        from ..api.logs import LogLine as LineModel

        out.write(
            "".join(
                LineModel.model_validate(line, from_attributes=True).model_dump_json() + "\n"
                for line in lines
            )
        )
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
