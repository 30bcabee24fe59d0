"""``air share experiment NAME_OR_ID --with USER --permission READ|EDIT|MANAGE``: give another
user of a team MLflow server a permission on an experiment (``tracking/sharing.py``)."""

from __future__ import annotations

import argparse
import json

from .common import (
    EXIT_FORBIDDEN,
    EXIT_NO_TRACKING,
    EXIT_NOT_FOUND,
    EXIT_OK,
    EXIT_USAGE,
    CliError,
    connection,
)

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
