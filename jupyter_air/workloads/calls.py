"""Where a ``.distributed(remote=True)`` job run keeps its call and its ranks' results.

Such a job run is an ordinary one (store, supervisor, retries, logs, panels) whose ``source`` is
``"distributed"``: its folder holds ``call/`` — the cloudpickled call (``payload.pkl``) and how
to run it (``call.json``) — and, per attempt and node, the node's run folder
(``attempt_k/node_n/``): the ranks' output, ``result-<rank>.pkl``, ``error-<rank>.pkl``, the
launcher's outcome. The supervisor gives each node the call and that folder; the kernel and
``jupyter_air.job(ID)`` read the results from it. One place for these names.
"""

from __future__ import annotations

import sys
from pathlib import Path

from .paths import attempt_dir, job_dir

SOURCE = "distributed"
CALL_FILES = ("payload.pkl", "call.json")
MAX_RESULTS_BYTES = 256 << 20  # the ranks' return values of one attempt, all together


def call_dir(data: Path, job_id: str) -> Path:
    return job_dir(data, job_id) / "call"


def node_dir(data: Path, job_id: str, attempt: int, node: int) -> Path:
    return attempt_dir(data, job_id, attempt) / f"node_{node}"


def node_command() -> list[str]:
    """What every node of such a job runs; ``{folder}`` is the node's run folder there."""
    return [sys.executable, "-m", "jupyter_air.launch.agent", "{folder}"]
