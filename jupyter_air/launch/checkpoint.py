"""A ``.distributed()`` call's checkpoint folder (docs/checkpoints.md): every rank gets
``config.CHECKPOINT_DIR``, a folder of the call's MLflow run under the data folder
(``checkpoints/<run id>``; without MLflow, one of the call's own). ``resume=True`` continues the
last call of the same function in this kernel — its MLflow run and its folder, so the ranks find
what it saved; ``resume=RUN_ID`` continues that run. A job run (``remote=True``) has the
checkpoints of workloads instead.
"""

from __future__ import annotations

import re
import uuid
from pathlib import Path

from ..config import data_dir
from .errors import DistributedError

KEY = re.compile(r"^[A-Za-z0-9_\-]{1,64}$")
_last: dict[str, str] = {}  # function → the key (run id) of its last call in this kernel


class NothingToResume(DistributedError):
    """``resume=True`` for a function that has not run in this kernel."""


def check_resume(resume: object) -> bool | str:
    """``resume`` as given to ``.distributed()``, checked: True, False or a run id."""
    if isinstance(resume, bool):
        return resume
    if isinstance(resume, str) and KEY.match(resume):
        return resume
    raise ValueError(f"resume must be True, False or an MLflow run id; got {resume!r}")


def resumed_key(function: str, resume: bool | str) -> str | None:
    """The run (or folder) a call continues; None for a new one."""
    if resume is False:
        return None
    if isinstance(resume, str):
        return resume
    key = _last.get(function)
    if key is None:
        raise NothingToResume(
            f"{function}.distributed(resume=True): {function} has not run in this kernel, so "
            "there is nothing to resume; pass resume=RUN_ID to continue an MLflow run."
        )
    return key


def checkpoint_folder(function: str, key: str | None) -> Path:
    """The call's folder (made if missing), remembered as ``function``'s last."""
    key = key or uuid.uuid4().hex
    _last[function] = key
    folder = data_dir() / "checkpoints" / key
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    return folder
