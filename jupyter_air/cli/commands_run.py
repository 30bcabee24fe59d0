"""``air run``: submit a workload YAML as a job run (its fields changed by ``--override``), and
follow it with ``--watch`` (``--follow``)."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from .commands_logs import follow
from .common import (
    EXIT_CAPACITY,
    EXIT_NO_TRACKING,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    connection,
    open_store,
)
from .render import json_out

if TYPE_CHECKING:
    from ..api.workloads import Job
    from ..workloads.connection import Connection


def cmd_run(args: argparse.Namespace) -> int:
    from ..tracking.experiments import ExperimentError
    from ..workloads.capacity import CapacityError
    from ..workloads.jobs import submit
    from ..workloads.spec import MAX_OVERRIDES, SpecError, load_spec_file, overrides_comment

    if len(args.override) > MAX_OVERRIDES:
        raise CliError(f"at most {MAX_OVERRIDES} --override", EXIT_USAGE)
    try:
        spec, text = load_spec_file(args.file, args.override)
    except SpecError as error:
        if args.output == "json":
            problems = {"error": "invalid workload", "problems": error.to_json()}
            json_out(problems, sys.stderr, compact=True)
        raise CliError(str(error), EXIT_USAGE) from None
    store = open_store()
    found: list[Connection] = []

    def connect() -> Connection:  # after the GPU check: the workload's own problems come first
        found_now = connection(require=True, start=True)
        assert found_now is not None
        found.append(found_now)
        return found_now

    try:
        job = submit(
            spec,
            store=store,
            spec_yaml=text + overrides_comment(args.override),
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
    from ..workloads.views import job_view

    view = job_view(job, found[0])
    if args.output == "json":
        json_out(view.model_dump(mode="json"))
    else:
        _print_submitted(view)
    if not args.follow:
        return EXIT_OK
    return follow(store, job, node=0, attempt=None, level=None, q=None, output=args.output)


def _is_mlflow_error(error: Exception) -> bool:
    module = type(error).__module__ or ""
    return module.startswith(("mlflow", "requests", "urllib3")) or isinstance(
        error, (ConnectionError, OSError)
    )


def _print_submitted(job: Job) -> None:
    links = job.links
    print(f"Submitted job run {job.id} (experiment {job.experiment_name!r})")
    rows = [
        ("Job", links.job),
        ("Experiment", links.experiment),
        ("Status", f"air get run {job.id}"),
        ("Logs", f"air logs {job.id} --follow"),
        ("Cancel", f"air cancel {job.id}"),
    ]
    for label, value in rows:
        if value:
            print(f"  {label + ':':<12}{value}")
    if not (links.job or links.experiment):
        print("  (no links: no Jupyter server with jupyter-air was found to serve the MLflow UI)")
