"""One ``.distributed()`` call run from the kernel (``Launch``; launch/cluster.py's
``ClusterLaunch`` extends it to Ray nodes), from start to the value or error it gives back.

In order (launch/call.py checked torch is installed, picked the devices and pickled the call,
failing before anything starts): start the MLflow run and show it in the cell, hold GPU
sampling awake, start the agent process, stream every rank's output into the cell while it runs,
then collect the results in rank order or raise the first failing rank's error. An interrupt,
the ``timeout`` or any error here stops every rank (SIGTERM, then SIGKILL after
``grace_period``) and checks each pid is gone; the run ends FINISHED, FAILED or KILLED
accordingly.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..config import CHECKPOINT_DIR
from ..files import write_atomic, write_json
from ..pids import kill_group
from ..tracking.naming import TAG_RESTARTS
from ..tracking.system_metrics import quiet_system_metrics_logs
from .checkpoint import checkpoint_folder, resumed_key
from .devices import DevicePlan
from .errors import DistributedTimeoutError, LauncherError
from .failures import collect_failures, rank_error
from .output import RankOutput
from .processes import (
    RankProcess,
    ignore_sigint,
    signal_group,
    signal_name,
    stop_signal_name,
)
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

_live: set[Launch] = set()  # launches running in this process, stopped at exit
_live_lock = threading.Lock()
_atexit_registered = False


class Launch:
    def __init__(self, name: str, options: LaunchOptions, plan: DevicePlan, payload: bytes) -> None:
        self.name = name
        self.options = options
        self.plan = plan
        self.payload = payload
        self.run_dir: RunDir | None = None
        self.mlflow_run: ManagedRun | None = None
        self.agent: subprocess.Popen[bytes] | None = None
        self.output: RankOutput | None = None
        self.ranks: dict[int, RankProcess] = {}
        self.stopped_in_s: float | None = None
        self._error_text: str | None = None  # tagged on a FAILED run
        self._display: RunDisplay | None = None
        self.live: LiveCall | None = None  # the widget in the cell, where one can be shown
        self.checkpoint_dir: Path | None = None  # every rank's config.CHECKPOINT_DIR
        self.restarts: RestartNews | None = None  # with max_restarts: those said in the cell

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
            with _hold_gpu_sampling(reason), self._registered():
                self._start_live()
                self._start_agent()
                outcome = self._wait()
                results = self._finish(outcome)
            status = "FINISHED"
            return results
        except KeyboardInterrupt:
            status = "KILLED"
            if self.agent is not None:
                self._stop("interrupted")
                print(self._stopped_message("Interrupted"), file=sys.stderr, flush=True)
            raise
        except DistributedTimeoutError:
            status = "KILLED"
            raise
        except BaseException:
            self._stop("error")
            raise
        finally:
            self._end_run(status)
            if self.live is not None:  # the run card, as it ended, takes the widget's place
                self.live.finish(self._display.bundle if self._display is not None else None)
            if self.output is not None:
                self.output.close()
            self.close()
            if status == "FINISHED" or self.agent is None:  # nothing to inspect
                self.run_dir.remove()

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
        """Release what the call holds beyond its processes (nothing on one machine)."""

    def _where(self, rank: int) -> tuple[int, str] | None:
        """The node a rank ran on and its host, on several nodes."""
        return None

    def _sync(self, *, final: bool = False) -> None:
        """Bring the ranks' files to the run folder (on one machine they are written there);
        ``final``: everything, now."""

    def _outcome(self) -> dict[str, Any] | None:
        assert self.run_dir is not None
        return self.run_dir.read_json(self.run_dir.outcome)

    # the agent ----------------------------------------------------------------------------------
    def _settings(self) -> dict[str, Any]:
        run = self.mlflow_run
        return {
            "nproc": self.plan.nproc,
            "function": self.name,
            "grace_period": self.options.grace_period,
            "max_restarts": self.options.max_restarts,
            "monitor_interval": 0.1,
            "rdzv_id": uuid.uuid4().hex,
            "driver_pid": os.getpid(),
            "mlflow_run_id": run.run_id if run is not None else None,
            "mlflow_tracking_uri": run.tracking_uri if run is not None else None,
            "mlflow_experiment": run.experiment_name if run is not None else None,
        }

    def worker_env(self) -> dict[str, str]:
        env = dict(os.environ)
        backend = env.get("MPLBACKEND", "")
        if "matplotlib_inline" in backend or "ipympl" in backend:
            del env["MPLBACKEND"]  # the kernel's inline backend means nothing in a rank
        if self.mlflow_run is not None:
            env.update(self.mlflow_run.env())
        env.update({"NODE_RANK": "0", "PYTHONUNBUFFERED": "1"})
        if self.plan.cuda_visible_devices is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.plan.cuda_visible_devices
        if self.plan.nproc > 1:
            env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun does: no oversubscription
        return self._with_call_env(env)

    def _with_call_env(self, env: dict[str, str]) -> dict[str, str]:
        """``env`` with what every rank gets last: the checkpoint folder and the call's ``env``."""
        if self.checkpoint_dir is not None:
            env[CHECKPOINT_DIR.name] = str(self.checkpoint_dir)
        env.update({str(k): str(v) for k, v in self.options.env.items()})
        return env

    def _start_agent(self) -> None:
        run_dir = self.run_dir
        assert run_dir is not None
        write_json(run_dir.launch, self._settings())
        self.output = RankOutput(run_dir, self.plan.nproc, self.options.output)
        if self.options.max_restarts:
            self.restarts = RestartNews(run_dir, self.options.max_restarts)
        with open(run_dir.agent_log, "wb") as log:
            self.agent = subprocess.Popen(
                [sys.executable, "-m", "jupyter_air.launch.agent", str(run_dir.path)],
                env=self.worker_env(),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # the kernel's interrupt (SIGINT to its group) is ours
                cwd=os.getcwd(),
            )
        write_json(run_dir.agent_info, {"pid": self.agent.pid, "started": time.time()})

    def _wait(self) -> dict[str, Any] | None:
        __tracebackhide__ = True
        assert self.agent is not None and self.output is not None and self.run_dir is not None
        deadline = (
            time.monotonic() + self.options.timeout if self.options.timeout is not None else None
        )
        failing_since: float | None = None
        next_check = time.monotonic()
        while True:
            self._sync()
            self._report_restarts()  # before the next round's lines
            busy = self.output.pump()
            if self.agent.poll() is not None:
                break
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                self._stop("timeout")
                raise DistributedTimeoutError(
                    self._stopped_message(
                        f"{self.name}.distributed() timed out after {self.options.timeout:g} s"
                    )
                )
            # elastic waits 30 s for the other ranks after a failure; we keep to grace_period
            # (with max_restarts, elastic stops and starts the ranks itself: the agent keeps
            # to grace_period there)
            if failing_since is None and now >= next_check:
                next_check = now + 0.25
                if not self.options.max_restarts and self._some_rank_failed():
                    failing_since = now
            elif failing_since is not None and now - failing_since > self.options.grace_period + 1:
                self._kill_ranks(last_resort=True)
                failing_since = now
            if not busy:
                time.sleep(POLL_S)
        self._sync(final=True)
        self.output.pump(final=True)
        self._report_restarts()
        self._wait_ranks_gone(timeout_s=self.options.grace_period + 2)
        return self._outcome()

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
        run_dir = self.run_dir
        assert run_dir is not None and self.agent is not None
        log = (
            run_dir.agent_log.read_text(errors="replace")[-3000:]
            if run_dir.agent_log.exists()
            else ""
        )
        code = self.agent.returncode
        if outcome is None and code is not None and code < 0:
            what = f"the launcher process was killed by {signal_name(-code)}"
        elif outcome is None:
            what = f"the launcher process ended with code {code} and no outcome"
        elif outcome.get("state") == "error":
            what = f"torch elastic failed: {outcome.get('error')}"
        elif outcome.get("state") == "stopped":
            what = f"the launcher was stopped by {outcome.get('signal')}"
        else:
            what = "the ranks ended without results"
        return f"{self.name}.distributed(): {what}. Launcher log ({run_dir.agent_log}):\n{log}"

    # stopping -----------------------------------------------------------------------------------
    def _some_rank_failed(self) -> bool:
        run_dir = self.run_dir
        assert run_dir is not None
        self._read_ranks()
        for rank in range(self.plan.nproc):
            if run_dir.error(rank).exists():
                return True
            process = self.ranks.get(rank)
            if process is not None and not run_dir.result(rank).exists() and not process.alive():
                return True
        return False

    def _read_ranks(self) -> None:
        run_dir = self.run_dir
        assert run_dir is not None
        for rank in range(self.plan.nproc):
            known = self.ranks.get(rank)
            if known is None or self.options.max_restarts:  # a restart starts a new process
                info = run_dir.read_json(run_dir.pid(rank))
                if info and (known is None or known.pid != int(info["pid"])):
                    self.ranks[rank] = RankProcess(rank, int(info["pid"]), float(info["started"]))

    def _kill_ranks(self, last_resort: bool = False) -> None:
        """SIGTERM (SIGKILL as the ``last_resort``) to every rank still running, noting first
        that the launch stopped them."""
        self._read_ranks()
        alive = [process for process in self.ranks.values() if process.alive()]
        if self.run_dir is not None:
            with contextlib.suppress(OSError):
                sent = stop_signal_name(last_resort)
                record_stops(self.run_dir, "driver", [p.rank for p in alive], sent)
        for process in alive:
            if last_resort:
                process.kill()
            else:
                process.signal(signal.SIGTERM)

    def _stop(self, why: str) -> None:
        """Stop the agent and every rank: SIGTERM, then SIGKILL after the grace period; return
        when each of them is gone. Another interrupt meanwhile does not cut this short."""
        agent = self.agent
        if agent is None:
            return
        started = time.monotonic()
        with ignore_sigint():
            self._read_ranks()
            if agent.poll() is None:
                signal_group(agent.pid, signal.SIGTERM)  # elastic stops its ranks (SIGTERM)
            self._kill_ranks()  # and directly, those the agent may not reach
            deadline = started + self.options.grace_period
            while (agent.poll() is None or self._any_rank_alive()) and (
                time.monotonic() < deadline
            ):
                self._pump_quietly()
                time.sleep(POLL_S)
            if agent.poll() is None:
                kill_group(agent.pid)
            self._kill_ranks(last_resort=True)  # only those still alive
            with contextlib.suppress(subprocess.TimeoutExpired):
                agent.wait(timeout=2)
            self._wait_ranks_gone(timeout_s=2)
            self._pump_quietly(final=True)
        self.stopped_in_s = time.monotonic() - started

    def _any_rank_alive(self) -> bool:
        self._read_ranks()
        return any(p.alive() for p in self.ranks.values())

    def _wait_ranks_gone(self, timeout_s: float) -> None:
        """Wait for every rank to be gone; SIGKILL those left at the deadline, and say so if
        even that fails (a process stuck in the kernel, e.g. on a hung GPU)."""
        deadline = time.monotonic() + timeout_s
        killed = False
        while self._any_rank_alive():
            if time.monotonic() >= deadline:
                if killed:
                    left = [p.pid for p in self.ranks.values() if p.alive()]
                    print(
                        f"jupyter-air: rank processes {left} did not exit after SIGKILL "
                        "(stuck in the operating system, e.g. on a hung device).",
                        file=sys.stderr,
                    )
                    return
                self._kill_ranks(last_resort=True)
                killed, deadline = True, time.monotonic() + 5
            time.sleep(POLL_S)

    def _pump_quietly(self, final: bool = False) -> None:
        if self.output is not None:
            with contextlib.suppress(Exception):
                self.output.pump(final=final)

    def _stopped_message(self, what: str) -> str:
        n = len(self.ranks) or self.plan.nproc
        took = f" in {self.stopped_in_s:.1f} s" if self.stopped_in_s is not None else ""
        kept = f" Logs: {self.run_dir}" if self.run_dir is not None else ""
        marked = " the MLflow run is marked KILLED." if self.mlflow_run is not None else ""
        return (
            f"{what}: stopped {n} rank{'s' if n != 1 else ''}{took} (SIGTERM, then SIGKILL "
            f"after {self.options.grace_period:g} s); no process is left.{marked}{kept}"
        )

    # process exit ---------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _registered(self) -> Iterator[None]:
        global _atexit_registered
        with _live_lock:
            _live.add(self)
            if not _atexit_registered:
                atexit.register(_stop_live_launches)
                _atexit_registered = True
        try:
            yield
        finally:
            with _live_lock:
                _live.discard(self)


def _stop_live_launches() -> None:
    """The kernel is exiting while a call runs: stop its ranks (its run ends KILLED by the
    tracking module's own exit hook)."""
    with _live_lock:
        launches = list(_live)
    for launch in launches:
        with contextlib.suppress(Exception):
            launch._stop("exit")


def _hold_gpu_sampling(reason: str) -> contextlib.AbstractContextManager[Any]:
    """Keep the Jupyter server's GPU sampling awake while the ranks run."""
    try:
        from ..telemetry.hold_files import HoldFile
    except ImportError:  # pragma: no cover - an install without the telemetry package
        return contextlib.nullcontext()
    return HoldFile.create(reason)
