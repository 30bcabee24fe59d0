"""``air share experiment NAME_OR_ID --with USER --permission READ|EDIT|MANAGE``: give another
user of a team MLflow server a permission on an experiment (``tracking/sharing.py``).
``air share job ID --with USER [--remove]``: let another JupyterHub user see a job run of this
data folder and read its logs through its owner's Jupyter server (docs/teams.md)."""

from __future__ import annotations

import argparse
import json

from ..rendering import control_character
from .common import (
    EXIT_FORBIDDEN,
    EXIT_NO_TRACKING,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    checked_job,
    connection,
    open_store,
)
from .render import say

# an HTTP status of ShareError → the exit code (502: MLflow did not answer)
_EXIT_FOR_STATUS = {
    401: EXIT_NO_TRACKING,
    403: EXIT_FORBIDDEN,
    404: EXIT_NOT_FOUND,
    409: EXIT_NO_TRACKING,
    502: EXIT_NO_TRACKING,
}


def cmd_share(args: argparse.Namespace) -> int:
    from ..tracking.sharing import ShareError, share_experiment

    if args.what == "job":
        return _share_job(args)
    found = connection(require=True)
    assert found is not None
    try:
        shared = share_experiment(
            found.tracking_uri, args.experiment, args.username, args.permission
        )
    except ShareError as error:
        code = _EXIT_FOR_STATUS.get(error.status, EXIT_USAGE)
        raise CliError(str(error), code) from None
    if args.output == "json":
        print(json.dumps(shared.__dict__))
    else:
        was = " (it replaces the permission they had)" if shared.replaced else ""
        print(
            f"{shared.username} has {shared.permission} on experiment {shared.experiment_name!r} "
            f"(id {shared.experiment_id}){was}."
        )
    return EXIT_OK


def _share_job(args: argparse.Namespace) -> int:
    store = open_store()
    job = checked_job(store, args.id)
    if args.username is not None:
        user = args.username.strip()
        if not user or control_character(user) is not None or len(user) > 255:
            raise CliError(f"--with {args.username!r}: give a user name", EXIT_USAGE)
        changed = store.share_job(job.id, user, remove=args.remove)
    elif args.remove:
        raise CliError("--remove goes with --with USER: whom to stop sharing it with", EXIT_USAGE)
    users = store.job_shared_with(job.id)
    if args.output == "json":
        print(json.dumps({"id": job.id, "shared_with": users}))
        return EXIT_OK
    if args.username is not None:
        done = "no longer shared with" if args.remove else "shared with"
        note = "" if changed else " (it already was)" if not args.remove else " (it was not)"
        say(f"Job run {job.id} {done} {user}{note}.")
    listed = ", ".join(users) if users else "nobody"
    say(f"Job run {job.id} is shared with: {listed}.")
    return EXIT_OK
