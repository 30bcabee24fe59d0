"""``air run``: submit a workload YAML as a job run (its fields changed by ``--override``), and
follow it with ``--watch`` (``--follow``)."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
from collections.abc import Callable, Iterator
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
from .render import fields, json_out, say

if TYPE_CHECKING:
    from ..api.workloads import Job
    from ..workloads.connection import Connection
    from ..workloads.spec import WorkloadSpec


def cmd_run(args: argparse.Namespace) -> int:
    from ..workloads.jobs import submit
    from ..workloads.overrides import MAX_OVERRIDES, overrides_comment
    from ..workloads.spec import SpecError
    from ..workloads.spec_loading import load_spec_file
    from ..workloads.store import AlreadySubmitted

    if len(args.override) > MAX_OVERRIDES:
        raise CliError(f"at most {MAX_OVERRIDES} --override", EXIT_USAGE)
    if args.dry_run and args.follow:
        raise CliError("--dry-run creates no job run to --watch", EXIT_USAGE)
    try:
        spec, text = load_spec_file(args.file, args.override)
    except SpecError as error:
        if args.output == "json":
            problems = {"error": "invalid workload", "problems": error.to_json()}
            json_out(problems, sys.stderr, compact=True)
        raise CliError(str(error), EXIT_USAGE) from None
    if args.dry_run:
        return _dry_run(args, spec)
    store = open_store()
    found: list[Connection] = []

    def connect() -> Connection:  # after the GPU check: the workload's own problems come first
        found_now = connection(require=True, start=True)
        assert found_now is not None
        found.append(found_now)
        return found_now

    already = False
    with _submission_errors(args.file, lambda: found[0].tracking_uri if found else None):
        try:
            job = submit(
                spec,
                store=store,
                spec_yaml=text + overrides_comment(args.override),
                spec_path=args.file,
                source="cli",
                connection=connect,
                report=lambda message: print(message, file=sys.stderr, flush=True),
                idempotency_key=args.idempotency_key,
            )
        except AlreadySubmitted as error:
            job, already = error.job, True
    from ..workloads.views import job_view

    view = job_view(job, found[0] if found else connection(require=False))
    if args.output == "json":
        out = view.model_dump(mode="json")
        if args.idempotency_key:
            out["already_submitted"] = already
        json_out(out)
    else:
        _print_submitted(view, already)
    if not args.follow:
        return EXIT_OK
    return follow(store, job, node=0, attempt=None, level=None, q=None, output=args.output)


@contextlib.contextmanager
def _submission_errors(file: str, tracking_uri: Callable[[], str | None]) -> Iterator[None]:
    """What ``submit`` (and ``dry_run``) raise, as the CLI's errors and exit codes."""
    from ..backends.base import CapacityError
    from ..tracking.experiments import ExperimentError
    from ..workloads.spec import SpecError

    try:
        yield
    except SpecError as error:  # what the backend or a snapshot cannot take
        raise CliError(f"{file}: {error}", EXIT_USAGE) from None
    except CapacityError as error:
        raise CliError(str(error), EXIT_CAPACITY) from None
    except ExperimentError as error:
        raise CliError(f"{file}: experiment_name: {error}", EXIT_USAGE) from None
    except Exception as error:  # MLflow unreachable or refusing
        uri = tracking_uri()
        if _is_mlflow_error(error) and uri:
            raise CliError(
                f"MLflow at {uri} did not accept the experiment: {error}", EXIT_NO_TRACKING
            ) from None
        raise


def _dry_run(args: argparse.Namespace, spec: WorkloadSpec) -> int:
    from ..workloads.dry_run import dry_run
    from ..workloads.snapshot import CodeRecord, code_text
    from ..workloads.views import compute_text

    with _submission_errors(args.file, lambda: os.environ.get("MLFLOW_TRACKING_URI")):
        plan = dry_run(spec)
    plan.overrides = [o.text for o in args.override]
    if args.output == "json":
        json_out(plan.to_dict())
        return EXIT_OK
    gpus = "; ".join(
        f"node {k}: GPU {','.join(map(str, node))}" for k, node in enumerate(plan.gpus) if node
    )
    experiment = (
        f"{plan.experiment_name} (id {plan.experiment_id})"
        if plan.experiment_id
        else f"{plan.experiment_name} (would be created)"
    )
    tracking = (
        f"{plan.tracking_uri} (reachable)"
        if plan.tracking_uri
        else "jupyter-air's own MLflow server of the data folder (would be started)"
    )
    rows = [
        ("Experiment", experiment),
        ("Artifacts", plan.artifact_location or "(the tracking server's default)"),
        ("Run name", spec.run_name),
        ("Command", spec.command_text()),
        ("Compute", compute_text(spec.compute.model_dump()) + (f" ({gpus})" if gpus else "")),
        ("Backend", plan.backend + (f" (cluster {plan.cluster})" if plan.cluster else "")),
        ("Tracking", tracking),
        ("Working dir", spec.working_dir),
        ("Code", code_text(CodeRecord.from_dict(plan.code))),
        ("Retries", f"up to {spec.max_retries}"),
        ("Timeout", f"{spec.timeout_minutes:g} min per attempt" if spec.timeout_minutes else None),
        ("Env", " ".join(f"{k}={v}" for k, v in spec.env_variables.items())),
        ("Overrides", "  ".join(plan.overrides)),
    ]
    say(f"Dry run of {args.file}: valid; nothing was created.")
    fields(rows, 13)
    return EXIT_OK


def _is_mlflow_error(error: Exception) -> bool:
    module = type(error).__module__ or ""
    return module.startswith(("mlflow", "requests", "urllib3")) or isinstance(
        error, (ConnectionError, OSError)
    )


def _print_submitted(job: Job, already: bool = False) -> None:
    links = job.links
    if already:
        say(
            f"Job run {job.id} already submitted with this idempotency key "
            f"({job.status}; experiment {job.experiment_name!r})"
        )
    else:
        say(f"Submitted job run {job.id} (experiment {job.experiment_name!r})")
    rows = [
        ("Job", links.job),
        ("Experiment", links.experiment),
        ("Status", f"air get run {job.id}"),
        ("Logs", f"air logs {job.id} --follow"),
        ("Cancel", f"air cancel {job.id}"),
    ]
    fields(rows, 12)
    if not (links.job or links.experiment):
        say("(no links: no Jupyter server with jupyter-air was found to serve the MLflow UI)", 2)
