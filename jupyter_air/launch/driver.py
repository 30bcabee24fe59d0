"""One ``.distributed()`` call run from the kernel (``Launch``; launch/cluster.py's
``ClusterLaunch`` places it on Ray nodes), from start to the value or error it gives back.

In order (launch/call.py checked torch is installed, picked the devices and pickled the call,
failing before anything starts): start the MLflow run and show it in the cell, hold GPU sampling
awake, then run the call's launcher agent as one attempt of the supervision core
(backends/supervision.py ``GroupSupervisor``, which a workload's supervisor runs too) on the
local backend — one node, this machine — streaming every rank's output into the cell at each of
its ticks; then collect the results in rank order or raise the first failing rank's error. An
interrupt, the ``timeout`` or any error stops the node as a workload's cancel does (SIGTERM,
then SIGKILL after ``grace_period``, then whatever the call left, found by its group's mark);
the run ends FINISHED, FAILED or KILLED accordingly.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..backends.base import Backend, GroupLaunch, NodeGroup, NodeLaunch
from ..backends.supervision import GroupSupervisor, Outcome
from ..config import CHECKPOINT_DIR, FORK_RANKS
from ..files import write_atomic, write_json
from ..logs.logfile import PREFIX, LogWriter
from ..tracking.naming import TAG_RESTARTS
from ..tracking.system_metrics import quiet_system_metrics_logs
from .at_exit import stopped_at_exit
from .checkpoint import checkpoint_folder, resumed_key
from .devices import DevicePlan
from .errors import DistributedTimeoutError, LauncherError
from .failures import collect_failures, rank_error
from .output import RankOutput
from .processes import RankWatch, signal_name
from .restarts import RestartNews
from .rundir import RunDir, create_run_dir, record_stops

if TYPE_CHECKING:
    from ..notebook.live_widget import LiveCall
    from ..tracking.display import RunDisplay
    from ..tracking.runs import ManagedRun
    from .options import LaunchOptions

POLL_S = 0.05
TAG_FUNCTION = "jupyter_air.function"
TAG_RANKS = "jupyter_air.ranks"
TAG_ERROR = "jupyter_air.error"


class Launch:
    """The call, and the supervision core's hooks for its one attempt (``AttemptHooks``)."""

    def __init__(
        self,
        name: str,
        options: LaunchOptions,
        plan: DevicePlan,
        payload: bytes,
        backend: Backend | None = None,  # None: the local backend, this machine
    ) -> None:
        self.name = name
        self.options = options
        self.plan = plan
        self.payload = payload
        self.backend = backend
        self.run_dir: RunDir | None = None
        self.mlflow_run: ManagedRun | None = None
        self.group: NodeGroup | None = None  # the call's nodes, once started
        self.supervisor: GroupSupervisor | None = None  # the supervision core, running the call
        self.ended_with: Outcome | None = None  # how it saw the nodes end
        self.writers: list[LogWriter] = []  # the nodes' launcher logs
        self.output: RankOutput | None = None
        self.ranks: RankWatch | None = None  # this machine's ranks, by their pid files
        self.stopped_in_s: float | None = None
        self._error_text: str | None = None  # tagged on a FAILED run
        self._display: RunDisplay | None = None
        self.live: LiveCall | None = None  # the widget in the cell, where one can be shown
        self.checkpoint_dir: Path | None = None  # every rank's config.CHECKPOINT_DIR
        self.restarts: RestartNews | None = None  # with max_restarts: those said in the cell
        self._left: list[str] | None = None  # what the end's check found running, and stopped
        self._failing_since: float | None = None  # a rank failed; the others may hang
        self._next_check = 0.0

    # the call -----------------------------------------------------------------------------------
    def run(self) -> list[Any]:
        __tracebackhide__ = True
        self.run_dir = create_run_dir(self.name)
        write_atomic(self.run_dir.payload, self.payload)
        status = "FAILED"
        try:
            resumed = resumed_key(self.name, self.options.resume)
            self.mlflow_run = self._start_mlflow_run(resumed)
            run_id = self.mlflow_run.run_id if self.mlflow_run is not None else resumed
            self.checkpoint_dir = checkpoint_folder(self.name, run_id)
            reason = f"distributed {self.name}()" + (
                f" — run {self.mlflow_run.run_name}" if self.mlflow_run is not None else ""
            )
            with _hold_gpu_sampling(reason), stopped_at_exit(self):
                self._start_live()
                self._supervise()
                results = self._finish(self._outcome())
            status = "FINISHED"
            return results
        except KeyboardInterrupt:
            status = "KILLED"
            if self.group is not None:
                print(self._stopped_message("Interrupted"), file=sys.stderr, flush=True)
            raise
        except DistributedTimeoutError:
            status = "KILLED"
            raise
        finally:
            self._end_run(status)
            if self.live is not None:  # the run card, as it ended, takes the widget's place
                self.live.finish(self._display.bundle if self._display is not None else None)
            if self.output is not None:
                self.output.close()
            self.close()
            if status == "FINISHED" or self.group is None:  # nothing to inspect
                self.run_dir.remove()

    def _supervise(self) -> None:
        """The call's nodes as one attempt of the supervision core, which starts them, ticks
        (the output, into the cell) while they run, and stops them on the timeout, an interrupt
        or an error (raised once they are stopped)."""
        __tracebackhide__ = True
        from ..backends.local import LocalBackend

        if self.backend is None:
            self.backend = LocalBackend(_kernel_environment())
        supervisor = self.supervisor = GroupSupervisor(
            self.backend,
            self,
            max_restarts=0,  # torch elastic restarts the ranks (max_restarts), not the node
            grace_s=self.options.grace_period,
            cancelled=lambda: False,  # an interrupt is the call's cancel
            cancel_reason=lambda: "interrupted",
            timeout_s=self.options.timeout,
            poll_s=POLL_S,
            tick_s=0.0,
            start=self._start_group,
            release=self._release,
            close_backend=False,
            raise_errors=True,
        )
        try:
            outcome = supervisor.run()
        finally:
            self.stopped_in_s, self._left = supervisor.stopped_in_s, supervisor.left
        if self._left:
            print(f"jupyter-air: stopped what the call left running: {', '.join(self._left)}",
                  file=sys.stderr)  # fmt: skip
        if outcome.timed_out:
            raise DistributedTimeoutError(
                self._stopped_message(
                    f"{self.name}.distributed() timed out after {self.options.timeout:g} s"
                )
            )

    def _start_mlflow_run(self, resumed: str | None = None) -> ManagedRun | None:
        """The call's run: a new one, or ``resumed`` (``resume=``)."""
        if not self.options.mlflow:
            return None
        from ..tracking.runs import ManagedRun

        with quiet_system_metrics_logs():
            run = ManagedRun.start(
                "distributed",
                run_name=self.options.run_name,
                experiment=self.options.experiment,
                tags={TAG_FUNCTION: self.name, TAG_RANKS: self.description},
                run_id=resumed,
                # on several nodes each samples itself (system/node_k/…); on one machine, the
                # kernel's machine is node 0
                system_metrics=self.samples_here,
            )
        with contextlib.suppress(Exception):  # the run matters; its display is a nicety
            self._display = run.show()
        return run

    def _start_live(self) -> None:
        """The status line, Cancel (an interrupt: the path of Ctrl-C) and the metrics chart in
        place of the run card, where the frontend shows widgets (notebook/live_widget.py)."""
        run = self.mlflow_run
        if run is None:
            return
        from ..notebook.live_widget import start_live

        self.live = start_live(
            self._display,
            where=self.description,
            tracking_uri=run.tracking_uri,
            run_id=run.run_id,
            cancel={"action": "interrupt"},
        )

    def _end_run(self, status: str) -> None:
        run = self.mlflow_run
        if run is None or run.ended:
            return
        try:
            if self._error_text and status == "FAILED":
                with contextlib.suppress(Exception):
                    run.client.set_tag(run.run_id, TAG_ERROR, self._error_text[:500])
            if self.options.max_restarts:
                with contextlib.suppress(Exception):
                    said = self.restarts.said if self.restarts is not None else 0
                    run.client.set_tag(run.run_id, TAG_RESTARTS, str(said))
            with quiet_system_metrics_logs():
                run.end(status)
        except Exception as failure:
            print(f"jupyter-air: could not end MLflow run: {failure}", file=sys.stderr)

    @property
    def description(self) -> str:
        """The ranks, in words (tagged on the run)."""
        return self.plan.description

    @property
    def samples_here(self) -> bool:
        """Whether the system metrics are sampled in this kernel (one machine: node 0 is it)."""
        return True

    def close(self) -> None:
        """Release what the call holds beyond its nodes (nothing on one machine)."""

    def _where(self, rank: int) -> tuple[int, str] | None:
        """The node a rank ran on and its host, on several nodes."""
        return None

    def _rank_node(self, rank: int) -> int | None:
        """The node a rank runs on, on several nodes."""
        return None

    def _sync(self, *, final: bool = False) -> None:
        """Bring the ranks' files to the run folder (on one machine they are written there);
        ``final``: everything, now."""

    def _outcome(self) -> dict[str, Any] | None:
        assert self.run_dir is not None
        return self.run_dir.read_json(self.run_dir.outcome)

    # the nodes ----------------------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        run = self.mlflow_run
        return {
            "nproc": self.plan.nproc,
            "function": self.name,
            "grace_period": self.options.grace_period,
            "max_restarts": self.options.max_restarts,
            "monitor_interval": 0.1,
            "fork_ranks": FORK_RANKS.text() != "0",
            "rdzv_id": uuid.uuid4().hex,
            "driver_pid": os.getpid(),
            "mlflow_run_id": run.run_id if run is not None else None,
            "mlflow_tracking_uri": run.tracking_uri if run is not None else None,
            "mlflow_experiment": run.experiment_name if run is not None else None,
        }

    def worker_env(self) -> dict[str, str]:
        """jupyter-air's part of the ranks' environment (the backend adds the node's own)."""
        env: dict[str, str] = {"PYTHONUNBUFFERED": "1"}
        if self.mlflow_run is not None:
            env.update(self.mlflow_run.env())
        if self.plan.nproc > 1 and "OMP_NUM_THREADS" not in os.environ:
            env["OMP_NUM_THREADS"] = "1"  # as torchrun does: no oversubscription
        return self._with_call_env(env)

    def _with_call_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with what every rank gets last: the checkpoint folder and the call's ``env``."""
        if self.checkpoint_dir is not None:
            env[CHECKPOINT_DIR.name] = str(self.checkpoint_dir)
        env.update({str(k): str(v) for k, v in self.options.env.items()})
        return env

    def prepare(self, attempt: int) -> GroupLaunch:
        """The launcher agent on each node (``python -m jupyter_air.launch.agent``), and the
        cell's view of the ranks' output."""
        run_dir = self.run_dir
        assert run_dir is not None
        self.output = RankOutput(
            run_dir, self.plan.nproc, self.options.output, node_of=self._rank_node
        )
        if self.options.max_restarts:
            self.restarts = RestartNews(run_dir, self.options.max_restarts)
        self.ranks = RankWatch(run_dir, self.plan.nproc, restarted=bool(self.options.max_restarts))
        return self._group_launch(run_dir)

    def _group_launch(self, run_dir: RunDir) -> GroupLaunch:
        """One node, this machine: the agent works in the run folder itself."""
        write_json(run_dir.launch, self._settings())
        self.writers = [LogWriter(run_dir.agent_log)]
        visible = self.plan.cuda_visible_devices
        node = NodeLaunch(
            node=0,
            argv=[sys.executable, "-m", "jupyter_air.launch.agent", str(run_dir.path)],
            env=self.worker_env(),
            cwd=os.getcwd(),
            writer=self.writers[0],
            gpus=None if visible is None else tuple(visible.split(",")),
        )
        return self._shape(run_dir, [node], self.plan.nproc)

    def _shape(self, run_dir: RunDir, nodes: list[NodeLaunch], per_node: int) -> GroupLaunch:
        """The call's nodes, ``per_node`` ranks each, as a backend places them."""
        gpu = self.plan.kind == "gpu"
        return GroupLaunch(
            job_id=f"call-{run_dir.path.name}"[-60:],
            attempt=1,
            nodes=nodes,
            accelerators=per_node if gpu else 0,
            accelerator_type="GPU" if gpu else "CPU",
            grace_s=self.options.grace_period,
        )

    def _start_group(self, launch: GroupLaunch) -> NodeGroup:
        assert self.backend is not None
        return self.backend.start(launch)

    def started(self, attempt: int, group: NodeGroup) -> None:
        self.group = group
        assert self.run_dir is not None
        pid = group.nodes[0].pid  # the agent, as a run folder left behind says (rundir.py)
        write_json(self.run_dir.agent_info, {"pid": pid, "started": time.time()})

    def tick(self, attempt: int, group: NodeGroup) -> bool:
        """While the ranks run: their new output into the cell; True when there was some."""
        assert self.output is not None
        self._sync()
        self._report_restarts()  # before the next round's lines
        busy = self.output.pump()
        self._stop_stragglers(group)
        return busy

    def _stop_stragglers(self, group: NodeGroup) -> None:
        """After a rank failed, the others get ``grace_period`` to end (elastic stops them, or
        they fail in their next collective); SIGKILL those still running then. With
        max_restarts, elastic stops and starts the ranks itself, keeping to grace_period."""
        if self.options.max_restarts:
            return
        now = time.monotonic()
        if self._failing_since is None:
            if now >= self._next_check:
                self._next_check = now + 0.25
                if self._some_rank_failed(group):
                    self._failing_since = now
        elif now - self._failing_since > self.options.grace_period + 1:
            self._kill_ranks(group)
            self._failing_since = now

    def ended(self, attempt: int, group: NodeGroup | None, outcome: Outcome) -> None:
        """The nodes are stopped: the last of the ranks' output into the cell."""
        self.ended_with = outcome
        with contextlib.suppress(Exception):
            self._sync(final=True)
        self._pump_quietly(final=True)
        with contextlib.suppress(Exception):
            self._report_restarts()
        for writer in self.writers:
            writer.close()

    def _release(self, group: NodeGroup, outcome: Outcome) -> None:
        group.close()

    def _report_restarts(self) -> None:
        """Say in the cell each restart of the ranks torch elastic made since the last look."""
        if self.restarts is not None:
            self.restarts.say(self.output)

    def _finish(self, outcome: dict[str, Any] | None) -> list[Any]:
        __tracebackhide__ = True
        import cloudpickle

        run_dir, nproc = self.run_dir, self.plan.nproc
        assert run_dir is not None
        state = (outcome or {}).get("state")
        if state == "succeeded":
            missing = [r for r in range(nproc) if not run_dir.result(r).exists()]
            if not missing:
                return [cloudpickle.loads(run_dir.result(r).read_bytes()) for r in range(nproc)]
        failures = collect_failures(run_dir, nproc, outcome)
        if failures:
            first = failures[0]
            if self.output is not None:
                for failure in failures:
                    self.output.show_tail(failure.rank)
            error, remote = rank_error(
                first,
                function_name=self.name,
                nproc=nproc,
                run_dir=run_dir,
                node=self._where(first.rank),
            )
            self._error_text = f"rank {first.rank}: {error}".splitlines()[0]
            raise error from remote
        self._error_text = "the launcher failed"
        raise LauncherError(self._launcher_problem(outcome))

    def _launcher_problem(self, outcome: dict[str, Any] | None) -> str:
        ended = self.ended_with
        if outcome is None and ended is not None and ended.signal is not None:
            what = f"the launcher process was killed by {signal_name(ended.signal)}"
        elif outcome is None:
            code = ended.exit_code if ended is not None else None
            what = f"the launcher process ended with code {code} and no outcome"
        elif outcome.get("state") == "error":
            what = f"torch elastic failed: {outcome.get('error')}"
        elif outcome.get("state") == "stopped":
            what = f"the launcher was stopped by {outcome.get('signal')}"
        else:
            what = "the ranks ended without results"
        logs = "\n".join(
            f"--- {writer.path}\n{_log_tail(Path(writer.path))}" for writer in self.writers
        )
        return f"{self.name}.distributed() on {self.description}: {what}. Launcher logs:\n{logs}"

    # stopping ---------------------------------------------------------------------------------
    def _some_rank_failed(self, group: NodeGroup) -> bool:
        assert self.ranks is not None
        return self.ranks.failed()

    def _kill_ranks(self, group: NodeGroup) -> None:
        """SIGKILL to every rank still running, noting first that the launch stopped them."""
        assert self.ranks is not None
        alive = self.ranks.alive()
        self._record_stops([p.rank for p in alive])
        for process in alive:
            process.kill()

    def _record_stops(self, ranks: list[int]) -> None:
        if self.run_dir is not None:
            with contextlib.suppress(OSError):
                record_stops(self.run_dir, "driver", ranks, "SIGKILL")

    def stop_now(self) -> None:
        """Stop the call's nodes at once (the kernel is exiting)."""
        group = self.group
        if group is not None:
            group.stop(self.options.grace_period)
            group.leftovers(grace_s=1.0)

    def _pump_quietly(self, final: bool = False) -> None:
        if self.output is not None:
            with contextlib.suppress(Exception):
                self.output.pump(final=final)

    def _stopped_message(self, what: str) -> str:
        n = self.plan.nproc
        took = f" in {self.stopped_in_s:.1f} s" if self.stopped_in_s is not None else ""
        kept = f" Logs: {self.run_dir}" if self.run_dir is not None else ""
        marked = " the MLflow run is marked KILLED." if self.mlflow_run is not None else ""
        return (
            f"{what}: stopped {n} rank{'s' if n != 1 else ''}{took} (SIGTERM, then SIGKILL "
            f"after {self.options.grace_period:g} s); no process is left.{marked}{kept}"
        )


def _kernel_environment() -> dict[str, str]:
    """What the call's node on this machine starts from: the kernel's environment, less its
    inline plotting backend (which means nothing in a rank)."""
    env = dict(os.environ)
    backend = env.get("MPLBACKEND", "")
    if "matplotlib_inline" in backend or "ipympl" in backend:
        del env["MPLBACKEND"]
    return env


def _log_tail(path: Path, size: int = 3000) -> str:
    """The end of a launcher's log, its lines without their level and time."""
    text = path.read_text(errors="replace")[-size:] if path.exists() else ""
    return "\n".join(line[PREFIX:] for line in text.splitlines())


def _hold_gpu_sampling(reason: str) -> contextlib.AbstractContextManager[Any]:
    """Keep the Jupyter server's GPU sampling awake while the ranks run."""
    try:
        from ..telemetry.hold_files import HoldFile
    except ImportError:  # pragma: no cover - an install without the telemetry package
        return contextlib.nullcontext()
    return HoldFile.create(reason)
