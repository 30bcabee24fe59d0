"""One node of a ``.distributed(remote=True)`` job run: ``python -m jupyter_air.launch.job_node
<folder>``, the node command the supervisor starts for such a job.

The folder holds what the kernel left for every attempt (``payload.pkl``: the cloudpickled call;
``call.json``: ranks per node, nodes, the function's name, grace period, output mode). This
process is to the launcher agent what the kernel is to it for an ordinary ``.distributed()``
call: it writes the agent's settings (rendezvous on the node's ``MASTER_ADDR`` when there are
several nodes, the attempt's MLflow run from ``MLFLOW_RUN_ID``), starts it, and prints its ranks'
output prefixed ``[rank r]`` — which makes it the node's log, with every feature of job logs.
The ranks' results and error records stay in the folder, which the job run keeps (on another
machine, the backend brings it back when the attempt ends); the kernel or ``jupyter_air.job(ID)``
reads them from there. Its exit code is the node's: 0 when every rank of the node succeeded.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from ..config import ATTEMPT, JOB_ID
from ..files import write_json
from ..tracking.naming import TAG_RESTARTS
from .restarts import RestartNews
from .rundir import RunDir

CALL_FILE = "call.json"
POLL_S = 0.05


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m jupyter_air.launch.job_node <folder>", file=sys.stderr)
        return 2
    run_dir = RunDir(argv[0])
    call = run_dir.read_json(run_dir.path / CALL_FILE)
    if call is None or not run_dir.payload.exists():
        print(f"jupyter-air: no call to run in {run_dir.path}", file=sys.stderr)
        return 2
    nproc, nnodes = int(call["nproc"]), int(call["nnodes"])
    node = int(os.environ.get("NODE_RANK", "0"))
    write_json(run_dir.launch, _settings(call))
    from .output import RankOutput

    # every rank's output: the node's log is where a job's output is read, searched, downloaded
    output = RankOutput(run_dir, nproc, "all", first_rank=node * nproc if nnodes > 1 else 0)
    agent = subprocess.Popen(
        [sys.executable, "-m", "jupyter_air.launch.agent", str(run_dir.path)],
        stdin=subprocess.DEVNULL,
        stdout=open(run_dir.agent_log, "wb"),  # noqa: SIM115 - the agent holds it
        stderr=subprocess.STDOUT,
    )
    _forward_stops(agent)
    most = int(call.get("max_restarts", 0))
    news = RestartNews(run_dir, most) if most else None
    while agent.poll() is None:
        if news is not None:
            news.say(output)
        if not output.pump():
            time.sleep(POLL_S)
    output.pump(final=True)
    if news is not None:
        news.say(output)
        _tag_restarts(news.said)
    outcome = run_dir.read_json(run_dir.outcome) or {}
    if outcome.get("state") == "succeeded":
        return 0
    print(f"jupyter-air: node {node}: {_describe(outcome, run_dir)}", file=sys.stderr)
    return 1


def _describe(outcome: dict[str, Any], run_dir: RunDir) -> str:
    state = outcome.get("state")
    if state == "failed":
        ranks = sorted(int(r) for r in outcome.get("failures") or {})
        return f"rank{'s' if len(ranks) != 1 else ''} {', '.join(map(str, ranks))} failed"
    if state == "stopped":
        return f"stopped by {outcome.get('signal')}"
    if state == "error":
        return f"the launcher failed: {outcome.get('error')}"
    log = run_dir.agent_log.read_text(errors="replace") if run_dir.agent_log.exists() else ""
    log = log[-2000:]
    return f"the launcher ended without an outcome\n{log}"


def _settings(call: dict[str, Any]) -> dict[str, Any]:
    job, attempt = JOB_ID.text() or "", ATTEMPT.text()
    return {
        "nproc": int(call["nproc"]),
        "nnodes": int(call["nnodes"]),
        "function": call.get("function", "f"),
        "grace_period": float(call.get("grace_period", 5.0)),
        "max_restarts": int(call.get("max_restarts", 0)),
        "monitor_interval": 0.1,
        "rdzv_id": f"{job}-{attempt}",
        "driver_pid": os.getpid(),
        "mlflow_run_id": os.environ.get("MLFLOW_RUN_ID"),
        "mlflow_tracking_uri": os.environ.get("MLFLOW_TRACKING_URI"),
        "mlflow_experiment": os.environ.get("MLFLOW_EXPERIMENT_NAME"),
    }


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


def _forward_stops(agent: subprocess.Popen[bytes]) -> None:
    """SIGTERM/SIGINT to this process (the supervisor stopping the node) stop the agent, which
    stops its ranks within the grace period; this process then ends with it."""

    def forward(signum: int, _frame: Any) -> None:
        if agent.poll() is None:
            agent.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
