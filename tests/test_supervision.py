"""The supervision core as a ``.distributed()`` call drives it (one attempt, ticks that stream
output, errors and interrupts raised once the nodes are stopped), against a fake node group; the
real calls on this machine, Ray and the rig are in test_launch_*.py and test_netns_rig.py."""

from __future__ import annotations

import signal
import threading

import pytest

from jupyter_air.backends.base import GroupLaunch, NodeInfo, NodeState
from jupyter_air.backends.supervision import GroupSupervisor, Outcome


class Group:
    """Nodes that run until ``finish`` is set; records what the core asked of them."""

    backend = "fake"

    def __init__(self, events: list[str]) -> None:
        self.events = events
        self.nodes = [NodeInfo(0, host="here", pid=1)]
        self.finished = False
        self.sigint_in_stop: object = None

    def poll(self) -> list[NodeState]:
        return [NodeState(0, exit_code=0 if self.finished else None)]

    def sync_logs(self, *, final: bool = False) -> None:
        if final:
            self.events.append("sync final")

    def stop(self, grace_s: float) -> None:
        self.sigint_in_stop = signal.getsignal(signal.SIGINT)
        self.events.append(f"stop {grace_s:g}")
        self.finished = True

    def leftovers(self, grace_s: float) -> list[str]:
        self.events.append("leftovers")
        return ["pid 7 on this machine"]

    def start_metrics(self, metrics: object) -> object:
        return metrics

    def finish_metrics(self) -> None: ...
    def forget_checkpoints(self) -> None: ...

    def close(self) -> None:
        self.events.append("close")


class Backend:
    name = "fake"

    def __init__(self) -> None:
        self.events: list[str] = []
        self.group = Group(self.events)

    def check(self, spec: object) -> None: ...

    def start(self, launch: GroupLaunch) -> Group:
        self.events.append("start")
        return self.group

    def close(self) -> None:
        self.events.append("backend closed")


class Call:
    """A call's hooks: ``ticks`` says what each tick does (True: busy, an exception: raised)."""

    def __init__(self, backend: Backend, ticks: list[object]) -> None:
        self.backend, self.ticks = backend, list(ticks)
        self.ended_with: Outcome | None = None

    def prepare(self, attempt: int) -> GroupLaunch:
        return GroupLaunch(job_id="call-x", attempt=attempt, nodes=[], accelerators=0,
                           accelerator_type="CPU")  # fmt: skip

    def started(self, attempt: int, group: Group) -> None: ...

    def tick(self, attempt: int, group: Group) -> bool:
        step = self.ticks.pop(0) if self.ticks else "finish"
        if step == "finish":
            group.finished = True
            return False
        if isinstance(step, BaseException):
            raise step
        return bool(step)

    def ended(self, attempt: int, group: Group | None, outcome: Outcome) -> None:
        self.ended_with = outcome
        self.backend.events.append(f"ended {outcome.status}")


class Wake:
    """The core's wake event, recording how long each wait would have been."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def wait(self, timeout: float) -> bool:
        self.waits.append(timeout)
        return False

    def clear(self) -> None: ...

    def set(self) -> None: ...


def core(backend: Backend, call: Call, **more: object) -> GroupSupervisor:
    released: list[str] = backend.events
    supervisor = GroupSupervisor(
        backend,
        call,
        max_restarts=0,
        grace_s=3,
        cancelled=lambda: False,
        cancel_reason=lambda: "interrupted",
        poll_s=0.05,
        tick_s=0.0,
        release=lambda group, outcome: released.append(f"release {outcome.status}"),
        close_backend=False,
        raise_errors=True,
        **more,  # type: ignore[arg-type]
    )
    supervisor.wake = Wake()  # type: ignore[assignment]
    return supervisor


def test_a_busy_tick_looks_again_at_once_and_a_quiet_one_waits():
    backend = Backend()
    supervisor = core(backend, Call(backend, [True, True, False, True]))
    outcome = supervisor.run()
    assert outcome.status == "SUCCEEDED"
    assert supervisor.wake.waits[:4] == [0.05, 0, 0, 0.05]  # type: ignore[attr-defined]
    # ended on their own: nothing stopped, the group released by the caller's hook, the backend
    # left open for the caller
    assert supervisor.stopped_in_s is None
    assert backend.events == [
        "start", "stop 3", "sync final", "leftovers", "ended SUCCEEDED", "release SUCCEEDED",
    ]  # fmt: skip
    assert supervisor.left == ["pid 7 on this machine"]


def test_an_error_in_a_tick_is_raised_once_the_nodes_are_stopped():
    backend = Backend()
    call = Call(backend, [False, ValueError("the cell's stream broke")])
    with pytest.raises(ValueError, match="the cell's stream broke"):
        core(backend, call).run()
    assert backend.events == [
        "start", "stop 3", "sync final", "leftovers", "ended FAILED", "release FAILED",
    ]  # fmt: skip
    assert call.ended_with is not None
    assert call.ended_with.reason == "could not run the command: the cell's stream broke"


def test_an_interrupt_stops_the_nodes_unbroken_then_goes_on_up():
    assert threading.current_thread() is threading.main_thread()  # where a kernel's call runs
    before = signal.getsignal(signal.SIGINT)
    backend = Backend()
    call = Call(backend, [KeyboardInterrupt()])
    supervisor = core(backend, call)
    with pytest.raises(KeyboardInterrupt):
        supervisor.run()
    assert backend.group.sigint_in_stop == signal.SIG_IGN  # a second Ctrl-C cannot cut it short
    assert signal.getsignal(signal.SIGINT) == before  # and is as it was after
    assert call.ended_with is not None and call.ended_with.status == "CANCELLED"
    assert supervisor.stopped_in_s is not None  # the nodes still ran: stopped
    assert backend.events[-2:] == ["ended CANCELLED", "release CANCELLED"]


def test_the_timeout_ends_the_attempt_with_its_nodes_stopped():
    backend = Backend()
    supervisor = core(backend, Call(backend, [False] * 1000), timeout_s=-1.0)
    outcome = supervisor.run()
    assert outcome.timed_out and outcome.status == "FAILED"
    assert "stop 3" in backend.events and supervisor.stopped_in_s is not None
