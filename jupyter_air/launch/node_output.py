"""A node of a ``.distributed(remote=True)`` job run: the launcher agent
(``python -m jupyter_air.launch.agent <folder>``) run as the node's command.

The folder holds what the kernel left for every attempt (``payload.pkl``: the cloudpickled call;
``call.json``: ranks per node, nodes, the function's name, grace period; workloads/calls.py) and
no ``launch.json``: the agent then takes its settings from the call and the attempt's environment
(``job_settings``: rendezvous on the node's ``MASTER_ADDR`` when there are several nodes, the
attempt's MLflow run from ``MLFLOW_RUN_ID``) and, while torch elastic runs, prints every rank's
output prefixed ``[rank r]`` on its own stdout (``NodeOutput``) — which makes it the node's log,
with every feature of job logs. The job run's supervisor watches and stops this process as any
node's command. The ranks' results and error records stay in the folder, which the job run keeps
(on another machine, the backend brings it back when the attempt ends); the kernel or
``jupyter_air.job(ID)`` reads them from there. The agent's exit code is the node's: 0 when every
rank of the node succeeded.
"""

from __future__ import annotations

import os
import sys
import threading
from typing import Any

from ..config import ATTEMPT, JOB_ID
from ..tracking.naming import TAG_RESTARTS
from .restarts import RestartNews
from .rundir import RunDir

CALL_FILE = "call.json"
POLL_S = 0.05


def job_settings(run_dir: RunDir) -> dict[str, Any] | None:
    """The agent's settings for the call in ``run_dir`` on this node of a job run's attempt;
    None where the folder holds no call."""
    call = run_dir.read_json(run_dir.path / CALL_FILE)
    if call is None or not run_dir.payload.exists():
        return None
    job, attempt = JOB_ID.text() or "", ATTEMPT.text()
    return {
        "nproc": int(call["nproc"]),
        "nnodes": int(call["nnodes"]),
        "function": call.get("function", "f"),
        "grace_period": float(call.get("grace_period", 5.0)),
        "max_restarts": int(call.get("max_restarts", 0)),
        "monitor_interval": 0.1,
        "fork_ranks": bool(call.get("fork_ranks", True)),
        "rdzv_id": f"{job}-{attempt}",  # the same on every node of the attempt
        "driver_pid": None,  # the supervisor stops this node as any other command
        "mlflow_run_id": os.environ.get("MLFLOW_RUN_ID"),
        "mlflow_tracking_uri": os.environ.get("MLFLOW_TRACKING_URI"),
        "mlflow_experiment": os.environ.get("MLFLOW_EXPERIMENT_NAME"),
    }


class NodeOutput:
    """Every rank's output on this process's stdout while the ranks run, torch elastic's
    restarts said between rounds; at the end, the node's last word."""

    def __init__(self, run_dir: RunDir, settings: dict[str, Any]) -> None:
        from .output import RankOutput

        nproc, nnodes = int(settings["nproc"]), int(settings.get("nnodes", 1))
        self.run_dir = run_dir
        self.node = int(os.environ.get("NODE_RANK", "0"))
        first = self.node * nproc if nnodes > 1 else 0
        self.output = RankOutput(run_dir, nproc, "all", first_rank=first)
        most = int(settings.get("max_restarts", 0))
        self.news = RestartNews(run_dir, most) if most else None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="jupyter-air-output", daemon=True)

    def start(self) -> NodeOutput:
        self._thread.start()
        return self

    def _run(self) -> None:
        while not self._done.is_set():
            if self.news is not None:
                self.news.say(self.output)
            if not self.output.pump():
                self._done.wait(POLL_S)

    def finish(self, outcome: dict[str, Any]) -> None:
        """The ranks are gone: the rest of their output, the restarts recorded on the
        attempt's run, and what failed."""
        self._done.set()
        self._thread.join(timeout=10)
        self.output.pump(final=True)
        if self.news is not None:
            self.news.say(self.output)
            _tag_restarts(self.news.said)
        if outcome.get("state") != "succeeded":
            print(f"jupyter-air: node {self.node}: {_describe(outcome)}", file=sys.stderr)


def _describe(outcome: dict[str, Any]) -> str:
    state = outcome.get("state")
    if state == "failed":
        ranks = sorted(int(r) for r in outcome.get("failures") or {})
        return f"rank{'s' if len(ranks) != 1 else ''} {', '.join(map(str, ranks))} failed"
    if state == "stopped":
        return f"stopped by {outcome.get('signal')}"
    return f"the launcher failed: {outcome.get('error')}"


def _tag_restarts(restarts: int) -> None:
    """The attempt's MLflow run records torch elastic's restarts of the ranks, as a kernel's
    call records them."""
    run_id = os.environ.get("MLFLOW_RUN_ID")
    if not run_id:
        return
    try:
        from ..tracking.rest import client_for

        client = client_for(os.environ.get("MLFLOW_TRACKING_URI") or "")
        client.set_tag(run_id, TAG_RESTARTS, str(restarts))
    except Exception as error:
        print(
            f"jupyter-air: could not record the restarts on run {run_id}: {error}", file=sys.stderr
        )
