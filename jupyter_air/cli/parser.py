"""The ``air`` command line: every command, its options, help and examples."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from typing import TYPE_CHECKING

from .. import agent_command
from ..api.enums import JobStatus
from ..tracking.sharing import PERMISSIONS

if TYPE_CHECKING:
    from ..workloads.overrides import Override

MAIN_HELP = """\
examples:
  air run workload.yaml                 submit; prints the job run id and links
  air run workload.yaml --watch         submit and stream node 0's logs until it ends
  air run workload.yaml --override compute.num_accelerators=4
  air list runs                         your active job runs (--all-status: every one)
  air list runs --all-users --filter accelerator_type=H100
  air get run 3f2a9c1b0d4e              status, compute, attempts and their MLflow runs
  air logs 3f2a --follow                logs of node 0, latest attempt, as they come
  air logs 3f2a --level error --grep CUDA
  air logs 3f2a --lines 100 --minutes 10 --retry -1
  air logs 3f2a --download-to ./logs    every node and attempt into ./logs/<id>/
  air cancel 3f2a                       stop it (every process of every node)
  air cancel --all -y                   stop every active job run of yours
  air schedule create w.yaml --cron "0 3 * * *" --timezone Europe/Paris --name nightly
  air schedule list                     schedules, their next firing and last run
  air explain compute.accelerator_type  a YAML field's type, default and help
  air share experiment churn --with bob --permission READ   on a team MLflow server

A job run id can be shortened to a unique prefix of 4 or more digits.
exit codes: 0 ok, 1 job failed or cancelled, 2 usage or spec error, 3 no tracking server
(or it is not ready, or it refuses our credentials),
4 not enough GPUs, 5 no such job run or schedule, 6 no access to the logs, 7 the job store
cannot be read or written (a full disk), 130 interrupted.
"""


FILTER_KEYS = ("experiment", "accelerator_type", "num_accelerators", "status", "user", "schedule")
EXAMPLE = re.compile(r"^(\s+)(\S.*?)\s{2,}(\S.*)$")  # "  air run w.yaml    what it does"


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Descriptions and examples as written, each line wrapped to the terminal when it is
    longer (an example's explanation then goes on the next line, indented)."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        out: list[str] = []
        for line in text.splitlines():
            if len(indent + line) <= width:
                out.append(indent + line)
                continue
            lead = indent + line[: len(line) - len(line.lstrip())]
            example = EXAMPLE.match(line)
            parts = [example[2], example[3]] if example and example[1] else [line.strip()]
            hanging = "    " if lead != indent else ""  # examples hang; prose does not
            for k, part in enumerate(parts):
                first = lead + "    " * k
                out += textwrap.wrap(
                    part,
                    width,
                    initial_indent=first,
                    subsequent_indent=first + hanging,
                    break_long_words=False,
                    break_on_hyphens=False,
                )
        return "\n".join(out)


def build_parser() -> argparse.ArgumentParser:
    formatter = HelpFormatter
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
        epilog="examples:\n  air run workload.yaml\n  air run workload.yaml --watch\n"
        "  air run workload.yaml --override compute.num_accelerators=4 "
        "--override env_variables.LR=3e-5\n"
        "  air run workload.yaml --dry-run --output json\n"
        "  air run workload.yaml --idempotency-key nightly-2026-12-02\n"
        "  air run workload.yaml --output json | jq -r .id\n"
        "  air run -h compute.accelerator_type     a field of the YAML (air explain FIELD)",
        formatter_class=formatter,
    )
    run.add_argument("file", metavar="FILE", help="the workload YAML")
    run.add_argument(
        "--follow",
        "--watch",
        dest="follow",
        action="store_true",
        help="stream node 0's logs until the job ends; exit 0 if it succeeded, 1 if not",
    )
    run.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="FIELD=VALUE",
        type=_override,
        help="set a field of the file (dotted path, YAML value), validated as the file is: "
        "compute.num_accelerators=4, env_variables.FOO=bar, max_retries=2; repeatable",
    )
    run.add_argument(
        "--dry-run",
        action="store_true",
        help="check everything (spec, GPUs or cluster, tracking server, experiment) and print "
        "what the job run would use; create nothing",
    )
    run.add_argument(
        "--idempotency-key",
        metavar="KEY",
        type=_key,
        help="submit at most once: a KEY given before returns that job run (exit 0, "
        '"already submitted") instead of a new one',
    )
    _output(run)

    listing = commands.add_parser("list", help="list job runs (air list runs)")
    what = listing.add_subparsers(dest="what", metavar="runs")
    what.required = True
    runs = what.add_parser(
        "runs",
        help="list job runs, newest first",
        description="List job runs, newest first. By default only active ones (PENDING, "
        "QUEUED, RUNNING) of the current user.",
        epilog="examples:\n  air list runs\n  air list runs --all-status --limit 5\n"
        "  air list runs --status FAILED --experiment my-training --output json\n"
        "  air list runs --all-status --filter 'experiment=nightly-*' "
        "--filter num_accelerators=8\n"
        "  air list runs --all-users --filter accelerator_type=H100\n"
        f"filter keys: {', '.join(FILTER_KEYS)}",
        formatter_class=formatter,
    )
    runs.add_argument("--all-status", action="store_true", help="job runs of every status")
    runs.add_argument(
        "--status",
        action="append",
        metavar="S",
        type=str.upper,
        help=f"only this status ({', '.join(JobStatus)}); repeat or comma-separate for several",
    )
    runs.add_argument("--experiment", metavar="E", help="only job runs of this experiment")
    runs.add_argument(
        "--filter",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="only job runs whose KEY is VALUE; experiment takes a glob (nightly-*), status "
        "implies every status; repeat for several",
    )
    runs.add_argument(
        "--all-users",
        action="store_true",
        help="job runs of every user of this data folder (default: yours)",
    )
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
        "  air logs 3f2a --node 1 --attempt 2 --lines 100\n"
        "  air logs 3f2a --minutes 10 --retry -1\n"
        "  air logs 3f2a --level error --grep 'out of memory'\n"
        "  air logs 3f2a --download-to ./logs     (every node and attempt unless --node/"
        "--attempt)",
        formatter_class=formatter,
    )
    logs.add_argument("id", metavar="ID", help="job run id (or a unique prefix)")
    logs.add_argument("--node", metavar="N", type=_non_negative, help="node (default 0)")
    logs.add_argument("--attempt", metavar="K", type=_positive, help="attempt (default: latest)")
    logs.add_argument(
        "--retry",
        metavar="K",
        type=_retry,
        help="the same as --attempt K (1 is the first attempt); -1: the latest",
    )
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
    logs.add_argument(
        "--lines", "--tail", dest="tail", metavar="N", type=_positive, help="only the last N lines"
    )
    logs.add_argument(
        "--minutes",
        metavar="M",
        type=_minutes,
        help="only the lines of the last M minutes (a number; with --lines: the last N of those)",
    )
    logs.add_argument(
        "--download-to",
        metavar="DIR",
        help="write DIR/<id>/attempt_K/node_N.log files (with the filters given)",
    )
    _output(logs)

    cancel = commands.add_parser(
        "cancel",
        help="cancel job runs",
        description="Cancel job runs: every node's processes get SIGTERM, then SIGKILL after "
        "a grace period; the attempt's MLflow run ends KILLED. Waits until nothing is left.",
        epilog="examples:\n  air cancel 3f2a9c1b0d4e\n  air cancel 3f2a 9b1c\n"
        "  air cancel --all          (asks first; every active job run of yours)\n"
        "  air cancel --all -y       (without asking, e.g. in a script)",
        formatter_class=formatter,
    )
    cancel.add_argument("ids", nargs="*", metavar="ID", help="job run ids (or unique prefixes)")
    cancel.add_argument(
        "--all", action="store_true", help="every active job run of the current user"
    )
    cancel.add_argument(
        "-y", "--yes", action="store_true", help="do not ask before cancelling with --all"
    )
    _output(cancel)
    _share_parser(commands, formatter)
    _schedule_parsers(commands, formatter)

    explain = commands.add_parser(
        "explain",
        help="a workload YAML field: type, default, allowed values, help",
        description="Say what a field of the workload YAML takes: its type, default, allowed "
        "values, limits and help (the spec's own schema). Without FIELD: every field.",
        epilog="examples:\n  air explain compute.accelerator_type\n"
        "  air run -h compute.accelerator_type     (the same)\n"
        "  air explain max_retries --output json\n  air explain",
        formatter_class=formatter,
    )
    explain.add_argument(
        "field", nargs="?", metavar="FIELD", help="a dotted field path (compute.num_nodes)"
    )
    _output(explain)
    agent_command.add_parsers(commands, formatter)
    return parser


def _share_parser(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    formatter: type[argparse.HelpFormatter],
) -> None:
    share = commands.add_parser(
        "share",
        help="share an experiment (team MLflow server) or a job run and its logs",
        description="air share experiment: give another user READ, EDIT or MANAGE on an "
        "experiment of a team MLflow server that runs MLflow's authentication (mlflow server "
        "--app-name basic-auth), as you: MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD, "
        "or ~/.mlflow/credentials (docs/teams.md); it needs MANAGE on the experiment (its "
        "creator has it). air share job: let another JupyterHub user see one of your job runs "
        "and read its logs through your Jupyter server (an experiment's permission does not "
        "include its jobs' logs).",
        epilog="examples:\n  air share experiment churn-model --with bob --permission READ\n"
        "  air share experiment 12 --with carol --permission EDIT\n"
        "  air share job 3f2a91c0d4e1 --with bob\n  air share job 3f2a91c0d4e1 --with bob "
        "--remove\n  air share job 3f2a91c0d4e1            (who it is shared with)",
        formatter_class=formatter,
    )
    what = share.add_subparsers(dest="what", metavar="experiment|job", required=True)
    job = what.add_parser(
        "job", help="share a job run and its logs with a JupyterHub user", formatter_class=formatter
    )
    job.add_argument("id", metavar="ID", help="the job run (id or unique prefix)")
    job.add_argument("--with", dest="username", metavar="USER", help="the JupyterHub user")
    job.add_argument("--remove", action="store_true", help="stop sharing it with USER")
    _output(job)
    experiment = what.add_parser(
        "experiment", help="share an experiment", formatter_class=formatter
    )
    experiment.add_argument("experiment", metavar="NAME_OR_ID", help="the experiment")
    experiment.add_argument(
        "--with", dest="username", required=True, metavar="USER", help="the MLflow user"
    )
    experiment.add_argument(
        "--permission",
        required=True,
        type=str.upper,
        choices=PERMISSIONS,
        help="what the user may do: READ (see), EDIT (log runs), MANAGE (also share, delete)",
    )
    _output(experiment)


def _schedule_parsers(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    formatter: type[argparse.HelpFormatter],
) -> None:
    schedule = commands.add_parser(
        "schedule",
        help="run a workload on a cron schedule",
        description="Schedules: a workload YAML run on a cron schedule, each firing an "
        "ordinary job run tagged with the schedule. They fire from the Jupyter server with "
        "jupyter-air of this data folder while one runs. A schedule is given by its id or its "
        "unique name.",
        epilog="examples:\n"
        '  air schedule create w.yaml --cron "0 3 * * *" --timezone Europe/Paris --name nightly\n'
        "  air schedule create w.yaml            (the file's schedule: block)\n"
        "  air schedule list\n  air schedule get nightly\n  air schedule pause nightly\n"
        "  air schedule resume nightly\n  air schedule trigger nightly   (one run now)\n"
        "  air schedule delete nightly\n"
        "  air list runs --all-status --filter schedule=nightly",
        formatter_class=formatter,
    )
    verbs = schedule.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    create = verbs.add_parser(
        "create",
        help="schedule a workload YAML",
        description="Schedule a workload YAML. The options override the file's schedule: "
        "block (cron, timezone, overlap, catch_up).",
        formatter_class=formatter,
    )
    create.add_argument("file", metavar="FILE", help="the workload YAML")
    create.add_argument("--cron", metavar="EXPR", help="when, e.g. '0 3 * * *' (5 fields)")
    create.add_argument(
        "--timezone", metavar="TZ", help="the cron's timezone, e.g. Europe/Paris (default UTC)"
    )
    create.add_argument(
        "--overlap",
        choices=("skip", "queue", "allow"),
        help="while the previous run still runs: skip the slot (default), queue it (one at "
        "most), or allow it",
    )
    create.add_argument(
        "--catch-up",
        dest="catch_up",
        choices=("latest", "none"),
        help="slots missed while no server ran: run the latest (default) or none",
    )
    create.add_argument("--name", help="a unique name (default: the file's name without .yaml)")
    create.add_argument("--paused", action="store_true", help="create it paused")
    _output(create)
    listing = verbs.add_parser("list", help="every schedule, its next firing and last run")
    _output(listing)
    helps = {
        "get": "a schedule: settings, next firing, last runs and firings",
        "pause": "fire no more until resumed",
        "resume": "fire again from the next slot (slots passed while paused are not run)",
        "delete": "remove the schedule (its job runs stay)",
        "trigger": "one job run now, outside the schedule's slots",
    }
    for verb, text in helps.items():
        parser = verbs.add_parser(verb, help=text, description=text[0].upper() + text[1:] + ".")
        parser.add_argument("id", metavar="NAME|ID", help="the schedule's name or id")
        _output(parser)


def _output(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--output",
        "-o",
        choices=("table", "json"),
        default="table",
        help="table for people (default) or json for scripts",
    )


def _whole(minimum: int) -> Callable[[str], int]:
    """An argument type: a whole number of at least ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"{text!r}: must be {minimum} or more")
        return value

    return parse


def _override(text: str) -> Override:
    from ..workloads.overrides import Override

    try:
        return Override.parse(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _key(text: str) -> str:
    if not text.strip() or len(text) > MAX_KEY or not text.isprintable():
        raise argparse.ArgumentTypeError(f"a key is 1 to {MAX_KEY} printable characters")
    return text


MAX_KEY = 250


def _retry(text: str) -> int:
    value = _whole(-1)(text)
    if value == 0:
        raise argparse.ArgumentTypeError("attempts count from 1; -1 is the latest")
    return value


def _minutes(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of minutes") from None
    if not 0 < value <= 10 * 365 * 24 * 60:
        raise argparse.ArgumentTypeError(f"{text!r}: a positive number of minutes")
    return value


_positive = _whole(1)
_non_negative = _whole(0)
