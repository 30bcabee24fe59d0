"""The supervision core: one place that starts a group of node processes, watches them, stops
them and spends a restart budget — whatever backend runs the nodes.

Shaped like torch elastic's agent (``_start_workers``, ``_monitor_workers``, ``_stop_workers``,
``_shutdown``): each attempt starts every node through the backend, watches them until they all
exit 0, one fails (a non-zero exit, a signal, its node lost), the timeout passes or a cancel is
asked; then stops whatever still runs (SIGTERM, SIGKILL after the grace period), brings the last
log lines home and checks that nothing of the job is left on any node. A failed attempt is
followed by another while the budget lasts. What an attempt means beyond its processes — an
MLflow run, the job store, the logs' index; a ``.distributed()`` call's output in its cell —
is the caller's, through ``AttemptHooks``.

Its callers: a workload's supervisor (every attempt of a job run, on the local or Ray backend)
and a ``.distributed()`` call in the kernel (one attempt: its launcher agents on this machine or
on Ray nodes; an interrupt stops them as a cancel would, and then goes on up).
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from ..api.enums import JobStatus
from ..pids import ignore_sigint
from .base import Backend, GroupLaunch, NodeGroup, NodeState, PlacementError, QueueTimeout

log = logging.getLogger(__name__)

SUCCEEDED, FAILED, CANCELLED = JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.CANCELLED
TICK_S = 2.0  # how often the hooks' tick runs (the log index, heartbeats)


@dataclass
class Outcome:
    status: str  # SUCCEEDED | FAILED | CANCELLED
    reason: str
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    retry: bool = True  # False: another attempt would meet the same (a queue timeout)


class AttemptHooks(Protocol):
    def prepare(self, attempt: int) -> GroupLaunch:
        """What the attempt runs (its MLflow run and log files are made here)."""

    def started(self, attempt: int, group: NodeGroup) -> None: ...

    def tick(self, attempt: int, group: NodeGroup) -> bool | None:
        """Every ``tick_s`` while the nodes run; True: it had work, look again at once."""

    def ended(self, attempt: int, group: NodeGroup | None, outcome: Outcome) -> None: ...


def failure(state: NodeState) -> Outcome:
    """How a failed node is told."""
    if state.lost is not None:
        return Outcome(FAILED, state.lost)
    if state.signal is not None:
        try:
            name = signal.Signals(state.signal).name
        except ValueError:
            name = f"signal {state.signal}"
        return Outcome(FAILED, f"node {state.node} was killed by {name}", signal=state.signal)
    code = state.exit_code
    return Outcome(FAILED, f"node {state.node} exited with code {code}", exit_code=code)


class GroupSupervisor:
    def __init__(
        self,
        backend: Backend,
        hooks: AttemptHooks,
        *,
        max_restarts: int,
        grace_s: float,
        cancelled: Callable[[], bool],
        cancel_reason: Callable[[], str],
        timeout_s: float | None = None,
        poll_s: float = 0.1,
        failing: Callable[[], str | None] | None = None,
        wait_for_room: Callable[[int], bool] | None = None,
        tick_s: float = TICK_S,
        start: Callable[[GroupLaunch], NodeGroup] | None = None,
        release: Callable[[NodeGroup, Outcome], None] | None = None,
        close_backend: bool = True,
        raise_errors: bool = False,
    ) -> None:
        self.backend = backend
        self.tick_s = tick_s
        # how an attempt's nodes start (``backend.start``, or nodes kept from a call before) and
        # how they are released at its end (``group.close()``)
        self.start = start or backend.start
        self.release = release or (lambda group, _outcome: group.close())
        self.close_backend = close_backend  # False: the backend outlives this run
        # True: an error that keeps an attempt from running (placement included) is raised once
        # its nodes are stopped, rather than made the attempt's outcome
        self.raise_errors = raise_errors
        self.stopped_in_s: float | None = None  # the last stop of nodes that still ran
        self.left: list[str] | None = None  # what the last attempt left running (stopped)
        # attempt k's wait in its queue until its resources are held (False: cancelled
        # meanwhile; raises QueueTimeout, PlacementError)
        self.wait_for_room = wait_for_room
        # why the attempt must stop although its nodes run (a full disk), and not be retried
        self.failing = failing
        self.hooks = hooks
        self.max_restarts = max_restarts
        self.grace_s = grace_s
        self.cancelled = cancelled
        self.cancel_reason = cancel_reason
        self.timeout_s = timeout_s
        self.poll_s = poll_s
        self.wake = threading.Event()  # set to look at `cancelled` at once

    def run(self) -> Outcome:
        total = self.max_restarts + 1
        last: Outcome | None = None
        try:
            for attempt in range(1, total + 1):
                if self.cancelled():
                    return Outcome(CANCELLED, self.cancel_reason())
                outcome = self._attempt(attempt)
                log.info(
                    "attempt %d of %d: %s (%s)", attempt, total, outcome.status, outcome.reason
                )
                if outcome.status == SUCCEEDED:
                    if attempt == 1:
                        return Outcome(SUCCEEDED, "the command succeeded")
                    return Outcome(SUCCEEDED, f"the command succeeded on attempt {attempt}")
                if outcome.status == CANCELLED or not outcome.retry:
                    return outcome
                if self.failing is not None and self.failing() is not None:
                    return outcome  # a retry would meet the same
                last = outcome
        finally:
            self._shutdown()
        assert last is not None
        tries = f"{total} attempt{'s' if total != 1 else ''}"
        reason = f"{last.reason} (failed {tries})"
        return Outcome(FAILED, reason, last.exit_code, last.signal, last.timed_out)

    def _attempt(self, attempt: int) -> Outcome:
        waited = self._queue(attempt)
        if waited is not None:
            return waited
        launch = self.hooks.prepare(attempt)
        group: NodeGroup | None = None
        outcome = Outcome(FAILED, "did not start")
        try:
            group = self._start_workers(launch)
            self.hooks.started(attempt, group)
            outcome = self._monitor_workers(attempt, group)
        except Exception as error:
            placement = isinstance(error, PlacementError)
            reason = str(error) if placement else f"could not run the command: {error}"
            outcome = Outcome(FAILED, reason)
            if self.raise_errors:  # stopped, then the caller's to tell
                raise
            if not placement:
                log.exception("attempt %d", attempt)
        except BaseException:  # an interrupt (the kernel's Ctrl-C), an exit: stopped, then raised
            outcome = Outcome(CANCELLED, "interrupted")
            raise
        finally:
            # another interrupt meanwhile does not cut the stop short
            with ignore_sigint():
                if group is not None:
                    self._stop_workers(group)
                self.hooks.ended(attempt, group, outcome)
                if group is not None:
                    self.release(group, outcome)
        return outcome

    def _queue(self, attempt: int) -> Outcome | None:
        """Wait in the cluster's queue until the attempt's resources are held (before its
        MLflow run and logs exist: a queued attempt has none). None: go on."""
        if self.wait_for_room is None:
            return None
        try:
            if not self.wait_for_room(attempt):
                return Outcome(CANCELLED, f"{self.cancel_reason()} while queued")
        except QueueTimeout as error:
            return Outcome(FAILED, str(error), retry=False)
        except PlacementError as error:
            return Outcome(FAILED, str(error))
        return None

    # the four steps ----------------------------------------------------------------------------
    def _start_workers(self, launch: GroupLaunch) -> NodeGroup:
        return self.start(launch)

    def _monitor_workers(self, attempt: int, group: NodeGroup) -> Outcome:
        deadline = time.monotonic() + self.timeout_s if self.timeout_s else None
        next_tick = time.monotonic() + self.tick_s
        poll_s = getattr(group, "poll_s", self.poll_s)
        busy = False
        while True:
            states = group.poll()
            failed = [s for s in states if s.failed]
            if failed:
                first = next((s for s in failed if s.lost), failed[0])
                return failure(first)
            if all(s.exit_code == 0 for s in states):
                return Outcome(SUCCEEDED, "exit code 0", exit_code=0)
            why = self.failing() if self.failing is not None else None
            if why is not None:
                return Outcome(FAILED, why)
            if self.wake.wait(0 if busy else poll_s) or self.cancelled():
                self.wake.clear()
                if self.cancelled():
                    return Outcome(CANCELLED, self.cancel_reason())
            if deadline is not None and time.monotonic() > deadline:
                minutes = f"{(self.timeout_s or 0) / 60:g}"
                return Outcome(
                    FAILED, f"timed out after {minutes} min (timeout_minutes)", timed_out=True
                )
            busy = False
            if time.monotonic() >= next_tick:
                busy = bool(self.hooks.tick(attempt, group))
                next_tick = time.monotonic() + self.tick_s

    def _stop_workers(self, group: NodeGroup) -> None:
        """Stop what still runs, bring the last lines home, and check nothing is left."""
        started = time.monotonic()
        try:
            running = any(state.running for state in group.poll())
            group.stop(self.grace_s)
            if running:
                self.stopped_in_s = time.monotonic() - started
        except Exception:
            log.exception("stopping the nodes")
        try:
            group.sync_logs(final=True)
        except Exception:
            log.exception("bringing the last log lines home")
        try:
            left = self.left = group.leftovers(grace_s=1.0)
            if left:
                log.warning("stopped what the job left running: %s", ", ".join(left))
        except Exception:
            log.exception("looking for what the job left running")

    def _shutdown(self) -> None:
        if not self.close_backend:
            return
        try:
            self.backend.close()
        except Exception:
            log.exception("closing the %s backend", self.backend.name)
