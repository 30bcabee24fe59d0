"""The ``air`` command: submit workloads and come back to them.

``air run`` submits a workload YAML as a job run (detached: it goes on when the shell closes);
``air list runs``, ``air get run``, ``air logs`` and ``air cancel`` read and act on the job store
of jupyter-air's data folder; ``air schedule`` runs a workload on a cron schedule. Tables for
people, ``--output json`` for scripts (the REST API's models, ``jupyter_air.api``). Exit codes:
0 ok (a followed job succeeded), 1 the job failed or was cancelled, 2 usage or spec error, 3 no
tracking server (or MLflow not answering or refusing), 4 not enough GPUs, 5 no such job run or
schedule, 6 no access to the logs, 7 the job store cannot be read or written (a full disk),
130 interrupted.

The parser is ``parser.py``, the commands ``commands_*.py``, what they print ``render.py``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence

from .common import (
    EXIT_CAPACITY,
    EXIT_FORBIDDEN,
    EXIT_INTERRUPTED,
    EXIT_JOB_FAILED,
    EXIT_NO_TRACKING,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_STORE,
    EXIT_USAGE,
    CliError,
)
from .parser import build_parser
from .render import printable

__all__ = [
    "EXIT_CAPACITY",
    "EXIT_FORBIDDEN",
    "EXIT_INTERRUPTED",
    "EXIT_JOB_FAILED",
    "EXIT_NOT_FOUND",
    "EXIT_NO_TRACKING",
    "EXIT_OK",
    "EXIT_STORE",
    "EXIT_USAGE",
    "CliError",
    "build_parser",
    "main",
]


def main(argv: Sequence[str] | None = None) -> int:
    from ..backends.ray_import import without_slow_optional_imports

    without_slow_optional_imports()
    from .. import agent_command
    from .commands_explain import cmd_explain, field_help_argv
    from .commands_jobs import cmd_cancel, cmd_get, cmd_list
    from .commands_logs import cmd_logs
    from .commands_run import cmd_run
    from .commands_schedule import cmd_schedule
    from .commands_share import cmd_share

    given = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(field_help_argv(given))
    os.environ.setdefault("MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT", "true")
    from ..workloads.tracking_calls import bound_mlflow_calls

    bound_mlflow_calls()  # a tracking server that does not answer is said at once, not in 4 min
    handlers = {
        "run": cmd_run,
        "list": cmd_list,
        "get": cmd_get,
        "logs": cmd_logs,
        "cancel": cmd_cancel,
        "schedule": cmd_schedule,
        "explain": cmd_explain,
        "share": cmd_share,
        **agent_command.HANDLERS,
    }
    try:
        from ..tracking.identity import CredentialsError, use_credentials

        try:  # MLflow's client here and every process started from here send them
            use_credentials()
        except CredentialsError as error:  # said, and not used: only what needs them fails
            print(printable(f"air: {error}", lines=True), file=sys.stderr)
        return int(handlers[args.command](args))
    except CliError as error:
        print(printable(f"air: {error}", lines=True), file=sys.stderr)
        return error.code
    except KeyboardInterrupt:
        print("\nair: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `air logs ... | head`
        with contextlib.suppress(Exception):
            sys.stdout.close()
        return EXIT_OK
    except Exception as error:
        import sqlite3

        from ..config import data_dir
        from ..disk import no_space, no_space_text
        from ..tracking.identity import CredentialsError
        from ..tracking.readiness import TrackingServerNotReady

        # MLflow not answering, or refusing us; credentials we cannot use
        if isinstance(error, (TrackingServerNotReady, CredentialsError)):
            print(printable(f"air: {error}", lines=True), file=sys.stderr)
            return EXIT_NO_TRACKING
        if isinstance(error, (sqlite3.Error, OSError)) and no_space(error, data_dir()):
            why = no_space_text(data_dir())
        elif isinstance(error, sqlite3.Error):
            why = str(error)
        else:
            raise
        print(f"air: the job store cannot be read or written: {why}", file=sys.stderr)
        return EXIT_STORE
