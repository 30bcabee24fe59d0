"""``%%air_run`` and ``%air_run``: run a cell, or a workload YAML, as a job run from a notebook.

``%%air_run [--gpus N] [--experiment E] [--run-name R] [--max-retries K]`` saves the cell as a
script and submits ``python -m torch.distributed.run --standalone --nproc_per_node=N script.py``
(N GPUs, or N CPU processes on a machine without a GPU); ``%air_run workload.yaml`` submits a
file. Either way the job's logs stream into the cell (prefixed by node when there are several),
each attempt's MLflow run is shown with its links, and a failed job ends the cell with an error.
Ctrl-C (interrupt the kernel) cancels the job run. The job runs detached: if the kernel goes away
it goes on, and ``air logs``/``air get run`` find it.

Registered by ``%load_ext jupyter_air``; importing this module imports nothing heavy.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from typing import TYPE_CHECKING, Any

from ..config import BASE_URL, SERVER_URL

if TYPE_CHECKING:
    from ..workloads.store import JobRun, JobStore

MAGIC_NAME = "air_run"

CELL_USAGE = """\
%%air_run [--gpus N] [--experiment E] [--run-name R] [--max-retries K]
    Run this cell's code as a workload: python -m torch.distributed.run with N processes
    (N GPUs; N CPU processes where there is no GPU), one MLflow run per attempt.
%air_run WORKLOAD.yaml
    Submit a workload file and follow it here."""


class AirRunError(Exception):
    """A job run that failed or was cancelled, or a submission that was refused: shown as one
    short error in the cell, without a Python traceback."""

    def _render_traceback_(self) -> list[str]:
        return [f"\x1b[31m{type(self).__name__}\x1b[0m: {self}"]


class WorkloadFailed(AirRunError):
    pass


class WorkloadCancelled(AirRunError):
    pass


class _UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> Any:  # no SystemExit in a kernel
        raise _UsageError(message)

    def exit(self, status: int = 0, message: str | None = None) -> Any:
        raise _UsageError(message or "")


def _cell_parser() -> _Parser:
    parser = _Parser(prog="%%air_run", add_help=False)
    parser.add_argument("--gpus", type=int, default=1)
    parser.add_argument("--experiment")
    parser.add_argument("--run-name")
    parser.add_argument("--max-retries", type=int, default=0)
    return parser


def air_run(line: str, cell: str | None = None) -> None:
    """The ``%air_run`` / ``%%air_run`` magic."""
    try:
        argv = shlex.split(line or "")
    except ValueError as error:
        _usage(str(error))
        return
    if cell is None:
        if len(argv) != 1 or argv[0].startswith("-"):
            _usage("%air_run takes one argument: a workload YAML file")
            return
        _run_file(argv[0])
        return
    if not cell.strip():
        _usage("the cell is empty: write the code to run below %%air_run")
        return
    try:
        args = _cell_parser().parse_args(argv)
    except _UsageError as error:
        _usage(str(error))
        return
    if args.gpus < 1:
        _usage("--gpus must be 1 or more")
        return
    if args.max_retries < 0:
        _usage("--max-retries must be 0 or more")
        return
    _run_cell(cell, args)


def _usage(problem: str) -> None:
    text = f"UsageError: {problem}\n" if problem.strip() else ""
    print(f"{text}{CELL_USAGE}", file=sys.stderr)


# submitting ---------------------------------------------------------------------------------
def _run_cell(cell: str, args: argparse.Namespace) -> None:
    from ..private import private_folder
    from ..tracking.context import kernel_context
    from ..workloads.capacity import gpu_inventory
    from ..workloads.jobs import open_store
    from ..workloads.paths import job_dir, new_job_id
    from ..workloads.spec import Compute, WorkloadSpec

    store = open_store()
    context = kernel_context()
    inventory = gpu_inventory()
    on_gpus = bool(inventory.gpus)
    if not on_gpus:
        print(
            f"No GPU here ({inventory.describe()}): running {args.gpus} CPU process"
            f"{'es' if args.gpus != 1 else ''} (gloo).",
            file=sys.stderr,
        )
    experiment = args.experiment or _notebook_experiment()
    job_id = new_job_id()
    folder = private_folder(job_dir(store.data_dir, job_id))
    script = folder / "cell.py"
    script.write_text(cell, encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc_per_node={args.gpus}",
        str(script),
    ]
    spec = WorkloadSpec(
        experiment_name=experiment,
        mlflow_run_name=args.run_name,
        compute=Compute(num_accelerators=args.gpus, accelerator_type="GPU" if on_gpus else "CPU"),
        command=command,
        max_retries=args.max_retries,
        working_dir=os.getcwd(),
        code_source="live",  # what runs is in the job's folder already
        # what torchrun would set anyway, given here so it does not print a banner about it
        env_variables={"OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")},
    )
    job = _submit(
        store,
        spec,
        job_id=job_id,
        notebook=context.notebook_path,
        inventory=inventory,
        spec_yaml=None,
        spec_path=None,
    )
    _watch(store, job)


def _run_file(path: str) -> None:
    from ..workloads.jobs import open_store
    from ..workloads.spec import SpecError
    from ..workloads.spec_loading import load_spec_file

    try:
        spec, text = load_spec_file(path)
    except SpecError as error:
        raise AirRunError(str(error)) from None
    store = open_store()
    from ..tracking.context import kernel_context

    job = _submit(
        store,
        spec,
        job_id=None,
        notebook=kernel_context().notebook_path,
        inventory=None,
        spec_yaml=text,
        spec_path=path,
    )
    _watch(store, job)


def _submit(store: JobStore, spec: Any, **kwargs: Any) -> JobRun:
    from ..backends.base import CapacityError
    from ..tracking.experiments import ExperimentError
    from ..tracking.identity import CredentialsError
    from ..tracking.readiness import TrackingServerNotReady
    from ..workloads.connection import NoTrackingServer
    from ..workloads.jobs import submit

    try:
        return submit(
            spec,
            store=store,
            source="magic",
            report=lambda message: print(message, file=sys.stderr),
            **kwargs,
        )
    except (
        CapacityError,
        NoTrackingServer,
        TrackingServerNotReady,
        ExperimentError,
        CredentialsError,
    ) as error:
        raise AirRunError(str(error)) from None


def _notebook_experiment() -> str:
    """The experiment runs of this notebook go to (docs/mlflow.md), created if missing."""
    from ..tracking.experiments import resolve_experiment

    return resolve_experiment().name


# following ----------------------------------------------------------------------------------
def _watch(store: JobStore, job: JobRun) -> None:
    from ..api.enums import JobStatus
    from ..rendering import outcome_text
    from ..workloads.jobs import cancel

    _show_job(job)
    try:
        final = _stream(store, job)
    except KeyboardInterrupt:
        print(f"\nInterrupted: cancelling job run {job.id}…", file=sys.stderr, flush=True)
        ended = cancel(store, job.id)
        raise WorkloadCancelled(
            f"job run {job.id} {ended.status} (interrupted): {ended.reason}"
        ) from None
    if final.status == JobStatus.SUCCEEDED:
        print(outcome_text(final), flush=True)
        return
    error = WorkloadCancelled if final.status == JobStatus.CANCELLED else WorkloadFailed
    raise error(f"job run {final.id} {final.status}: {final.reason}. Logs: air logs {final.id}")


def _stream(store: JobStore, job: JobRun) -> JobRun:
    from ..api.enums import JobStatus
    from ..logs.follow import AttemptEnded, AttemptStarted, JobEnded, Queued, follow
    from ..logs.scan import LogLine
    from .live_widget import LiveCall, start_live, start_queued

    nodes = list(range(job.num_nodes))
    prefix = len(nodes) > 1
    displays: dict[int, Any] = {}
    lives: dict[int, LiveCall | None] = {}
    total = job.max_retries + 1
    queued: LiveCall | None = None  # the widget while the job run waits in its queue
    cancel_job = {"action": "cancel-job", "job_id": job.id}
    try:
        for event in follow(store, job.id, node=nodes):
            if isinstance(event, LogLine):
                text = f"[node {event.node}] {event.text}" if prefix else event.text
                stream = sys.stderr if event.stream == "stderr" else sys.stdout
                print(text, file=stream, flush=True)
            elif isinstance(event, Queued):
                print(event.text(), file=sys.stderr, flush=True)
                if queued is None:
                    queued = start_queued(
                        job.id, where=event.where(), cancel=cancel_job, attempts=total
                    )
                else:
                    queued.set(where=event.where())
            elif isinstance(event, AttemptStarted):
                if queued is not None:
                    queued.finish({"text/plain": f"Job run {job.id} waited in its queue"})
                    queued = None
                number = event.attempt.attempt
                if number > 1:
                    print(f"Attempt {number} of {total}", file=sys.stderr, flush=True)
                displays[number] = shown = _show_run(event.job, event.attempt, None)
                if event.attempt.ended_at is None:
                    # Cancel asks the server to cancel the job run (as the Workloads panel does)
                    lives[number] = start_live(
                        shown,
                        where=_job_where(event.job),
                        tracking_uri=event.job.tracking_uri,
                        run_id=event.attempt.mlflow_run_id,
                        cancel=cancel_job,
                        attempt=number,
                        attempts=total,
                    )
            elif isinstance(event, AttemptEnded):
                attempt = event.attempt
                shown = _show_run(event.job, attempt, displays.get(attempt.attempt))
                live = lives.pop(attempt.attempt, None)
                if live is not None:
                    live.finish(shown.bundle if shown is not None else None)
                if attempt.status == JobStatus.FAILED and attempt.attempt < total:
                    print(
                        f"Attempt {attempt.attempt} failed ({attempt.reason}); retrying.",
                        file=sys.stderr,
                        flush=True,
                    )
            elif isinstance(event, JobEnded):
                return event.job
        return store.get_job(job.id)  # pragma: no cover - follow always ends with JobEnded
    finally:  # interrupted, or the job run ended without its attempt's end read
        if queued is not None:
            queued.finish({"text/plain": f"Job run {job.id} left its queue"})
        for number, live in lives.items():
            if live is not None:
                shown = displays.get(number)
                live.finish(shown.bundle if shown is not None else None)


def _job_where(job: JobRun) -> str:
    """``1 node x 2 CPU processes``: where a job run's attempt runs, in words."""
    compute = job.compute or {}
    count = int(compute.get("num_accelerators") or 1)
    kind = str(compute.get("accelerator_type") or "CPU")
    if kind.upper() == "GPU":
        unit = "GPU" if count == 1 else "GPUs"
    else:
        unit = "CPU process" if count == 1 else "CPU processes"
    nodes = job.num_nodes
    return f"{nodes} node{'s' if nodes != 1 else ''} x {count} {unit}"


def _show_job(job: JobRun) -> None:
    import html

    from IPython.display import display

    base = SERVER_URL.text() or BASE_URL.text()
    text = f"Job run {job.id} submitted (experiment {job.experiment_name!r})"
    hint = f"air logs {job.id} · air get run {job.id} · air cancel {job.id}"
    bundle = {"text/plain": f"{text}\n{hint}"}
    if base:
        link = base.rstrip("/") + f"/lab?air-workload={job.id}"
        bundle["text/html"] = (
            f'<div class="jp-air-workload">Job run <a href="{html.escape(link)}" '
            f'target="_blank" rel="noopener">{html.escape(job.id)}</a> submitted (experiment '
            f"<code>{html.escape(job.experiment_name)}</code>) · <code>{html.escape(hint)}</code>"
            "</div>"
        )
    display(bundle, raw=True)


def _show_run(job: JobRun, attempt: Any, shown: Any) -> Any:
    """The attempt's MLflow run in the cell output (updated in place when it ends)."""
    if not attempt.mlflow_run_id:
        return shown
    try:
        from mlflow.tracking import MlflowClient

        from ..tracking.display import RunDisplay, run_payload

        client = MlflowClient(tracking_uri=job.tracking_uri)
        run = client.get_run(attempt.mlflow_run_id)
        payload = run_payload(
            run, experiment_name=job.experiment_name, tracking_uri=job.tracking_uri
        )
        if shown is None:
            shown = RunDisplay(run.info.run_id, server_url=SERVER_URL.text())
            shown.show(payload)
        else:
            shown.update(payload)
    except Exception as error:  # a display is not worth failing the cell for
        print(f"(MLflow run {attempt.mlflow_run_id}: {error})", file=sys.stderr)
    return shown


# registration -------------------------------------------------------------------------------
def register_magics(ipython: Any) -> None:
    ipython.register_magic_function(air_run, magic_kind="line_cell", magic_name=MAGIC_NAME)


def unregister_magics(ipython: Any) -> None:
    magics = getattr(getattr(ipython, "magics_manager", None), "magics", {})
    for kind in ("line", "cell"):
        magics.get(kind, {}).pop(MAGIC_NAME, None)
