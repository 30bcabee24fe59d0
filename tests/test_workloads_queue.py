"""The queue without a cluster: the line's order, renewal and loss (``backends/queue_line.py``);
the supervision core waiting for room before an attempt exists, cancelled or timed out while
waiting (a backend with ``wait_for_room``, as the Ray one); the job store's QUEUED status and
place; ``follow`` telling the place. On a real Ray cluster: test_workloads_ray_queue.py."""

from __future__ import annotations

import threading

import pytest
from fake_nvml import FakeGpu, FakeNvml
from test_workloads_store import new_job
from workloads_support import PY, submit_yaml, wait_for, wait_until, write

from jupyter_air.backends.base import GroupLaunch, NodeInfo, NodeState, QueueTimeout, Waiter
from jupyter_air.backends.queue_line import MAX_TICKETS, LineFull, QueueLine, Ticket
from jupyter_air.backends.supervision import GroupSupervisor
from jupyter_air.logs.follow import JobEnded, Queued, follow
from jupyter_air.logs.query import query_logs
from jupyter_air.workloads.capacity import gpu_inventory
from jupyter_air.workloads.store import JobStore


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def ticket(job: str, since: float, attempt: int = 1, user: str = "") -> Ticket:
    return Ticket(id=f"{job}/{attempt}", job_id=job, since=since, user=user)


def test_the_line_is_first_come_first_served_and_renewing_keeps_a_place():
    line = QueueLine(clock=Clock())
    assert line.beat(ticket("b", since=20)).position == 1
    a = line.beat(ticket("a", since=10))  # submitted earlier, asked later: ahead
    assert (a.position, a.total, a.ahead) == (1, 2, [])
    b = line.beat(ticket("b", since=20, user="bob"))
    assert (b.position, b.total) == (2, 2)
    assert b.ahead == [ticket("a", since=10).to_dict()]
    assert line.beat(ticket("c", since=30)).position == 3
    assert line.leave("a/1") and not line.leave("a/1")
    assert line.beat(ticket("b", since=20)).position == 1
    assert [t["job_id"] for t in line.listing()] == ["b", "c"]


def test_a_waiter_that_stops_renewing_leaves_the_line():
    clock = Clock()
    line = QueueLine(stale_s=30, clock=clock)
    line.beat(ticket("gone", since=1))
    line.beat(ticket("alive", since=2))
    for _ in range(4):  # alive renews every 10 s; gone's supervisor died
        clock.now += 10
        place = line.beat(ticket("alive", since=2))
    assert place.position == 1 and place.total == 1


def test_a_lost_line_is_rebuilt_in_the_same_order_by_its_waiters():
    line = QueueLine(clock=Clock())  # the queue actor made again: empty
    for job, since in (("c", 3.0), ("a", 1.0), ("b", 2.0)):  # renewing in any order
        line.beat(ticket(job, since))
    assert [t["job_id"] for t in line.listing()] == ["a", "b", "c"]


def test_a_full_line_refuses_a_new_ticket_but_renews_the_ones_in_it():
    line = QueueLine(clock=Clock())
    for n in range(MAX_TICKETS):
        line.beat(ticket(f"j{n}", since=n))
    with pytest.raises(LineFull, match=f"holds {MAX_TICKETS} job runs already"):
        line.beat(ticket("late", since=1e9))
    assert line.beat(ticket("j5", since=5)).position == 6


# the supervision core --------------------------------------------------------------------------
class Group:
    """Nodes that exit 0 at once."""

    backend = "fake"

    def __init__(self, launch: GroupLaunch) -> None:
        self.nodes = [NodeInfo(node=n.node, host="h") for n in launch.nodes]

    def poll(self) -> list[NodeState]:
        return [NodeState(node=n.node, exit_code=0) for n in self.nodes]

    def stop(self, grace_s: float) -> None: ...
    def sync_logs(self, *, final: bool = False) -> None: ...
    def leftovers(self, grace_s: float) -> list[str]:
        return []

    def forget_checkpoints(self) -> None: ...
    def close(self) -> None: ...


class QueueingBackend:
    """A backend with a queue: each attempt waits ``rounds`` turns, told its place each."""

    name = "fake"

    def __init__(self, rounds: int = 2, timeout: bool = False) -> None:
        self.rounds, self.timeout = rounds, timeout
        self.events: list[str] = []

    def wait_for_room(self, waiter: Waiter) -> bool:
        for left in range(self.rounds, 0, -1):
            waiter.queued({"position": left, "reason": f"{left} ahead"})
            self.events.append(f"queued {left}")
            if waiter.cancelled():
                return False
            waiter.pause(0)
        if self.timeout:
            raise QueueTimeout("queued for longer than 1 min (queue_timeout_minutes), 1 ahead")
        waiter.placed()
        self.events.append("placed")
        return True

    def start(self, launch: GroupLaunch) -> Group:
        self.events.append(f"start {launch.attempt}")
        return Group(launch)

    def close(self) -> None: ...


class Hooks:
    def __init__(self, events: list[str]) -> None:
        self.events = events

    def prepare(self, attempt: int) -> GroupLaunch:
        self.events.append(f"prepare {attempt}")  # the MLflow run, the logs
        return GroupLaunch(job_id="j", attempt=attempt, nodes=[], accelerators=0,
                           accelerator_type="CPU")  # fmt: skip

    def started(self, attempt: int, group: Group) -> None: ...
    def tick(self, attempt: int, group: Group) -> None: ...
    def ended(self, attempt: int, group: Group | None, outcome: object) -> None:
        self.events.append(f"ended {attempt}")


def supervisor(backend: QueueingBackend, cancel: threading.Event, **more) -> GroupSupervisor:
    def waiter(attempt: int) -> Waiter:
        return Waiter(job_id="j", attempt=attempt, since=1.0, user="u", nodes=2, accelerators=8,
                      queued=lambda place: None, placed=lambda: None, cancelled=cancel.is_set,
                      pause=lambda s: None)  # fmt: skip

    return GroupSupervisor(backend, Hooks(backend.events), max_restarts=2, grace_s=1,
                      cancelled=cancel.is_set, cancel_reason=lambda: "cancelled (air cancel)",
                      wait_for_room=lambda attempt: backend.wait_for_room(waiter(attempt)),
                      **more)  # fmt: skip


def test_an_attempt_exists_only_once_its_resources_are_held():
    backend = QueueingBackend(rounds=2)
    outcome = supervisor(backend, threading.Event()).run()
    assert outcome.status == "SUCCEEDED", outcome.reason
    assert backend.events == ["queued 2", "queued 1", "placed", "prepare 1", "start 1", "ended 1"]


def test_cancelled_while_queued_nothing_is_made():
    cancel = threading.Event()
    cancel.set()
    backend = QueueingBackend(rounds=3)
    gate = supervisor(backend, cancel)
    outcome = gate._attempt(1)  # the first attempt, as run() makes it
    assert (outcome.status, outcome.reason) == ("CANCELLED", "cancelled (air cancel) while queued")
    assert backend.events == ["queued 3"]


def test_a_queue_timeout_ends_the_job_run_without_a_retry():
    backend = QueueingBackend(rounds=1, timeout=True)
    outcome = supervisor(backend, threading.Event()).run()
    assert outcome.status == "FAILED"
    assert outcome.reason == "queued for longer than 1 min (queue_timeout_minutes), 1 ahead"
    assert backend.events == ["queued 1"]  # max_restarts=2, yet no other attempt, no run


def test_a_waiter_says_what_it_waits_for():
    one = Waiter("j", 1, 0.0, "u", 1, 0, print, print, bool, print)
    assert one.describe() == "1 node with 1 CPU free"
    many = Waiter("j", 1, 0.0, "u", 2, 8, print, print, bool, print)
    assert many.describe() == "2 nodes with 8 GPU and 1 CPU free, each on a different machine"


# the store and what reads it -------------------------------------------------------------------
def test_the_store_keeps_a_queued_job_runs_place_until_it_runs_or_ends(tmp_path):
    store = JobStore(tmp_path / "jobs.db")
    job = new_job(store)
    place = {"position": 2, "total": 3, "ahead": ["x"], "reason": "2nd in line", "since": 1.0}
    assert not store.mark_queued(job.id, place)  # PENDING: its supervisor has not started
    assert store.mark_running(job.id)
    assert store.mark_queued(job.id, place)
    queued = store.get_job(job.id)
    assert (queued.status, queued.queue) == ("QUEUED", place)
    assert [j.id for j in store.list_jobs(status=["QUEUED"])] == [job.id]
    store.mark_dequeued(job.id)
    running = store.get_job(job.id)
    assert (running.status, running.queue) == ("RUNNING", None)
    assert running.started_at >= queued.started_at  # it started when it left the queue
    assert store.mark_queued(job.id, place)  # a retry that waits again
    assert store.finish_job(job.id, "CANCELLED", "cancelled (air cancel) while queued")
    ended = store.get_job(job.id)
    assert (ended.status, ended.queue) == ("CANCELLED", None)
    assert not store.mark_queued(job.id, place)  # an ended job run stays ended


def test_following_a_job_run_tells_its_place_each_time_it_changes(tmp_path):
    store = JobStore(tmp_path / "jobs.db")
    job = new_job(store)
    store.mark_running(job.id)
    store.mark_queued(job.id, {"position": 2, "total": 2, "reason": "2nd in line, behind x"})
    events = follow(store, job.id, poll_s=0.01)
    first = next(events)
    assert isinstance(first, Queued)
    assert first.text() == "Queued (2nd of 2): 2nd in line, behind x"
    store.mark_queued(job.id, {"position": 1, "total": 1, "reason": "Waiting for 1 node"})
    assert next(events).text() == "Queued (1st of 1): Waiting for 1 node"
    store.finish_job(job.id, "FAILED", "queued for longer than 1 min")
    assert isinstance(next(events), JobEnded)


# the local queue, end to end ---------------------------------------------------------------------
HOLD = """
import os, sys, time
print("gpus", os.environ["CUDA_VISIBLE_DEVICES"], flush=True)
deadline = time.monotonic() + 120
while not os.path.exists(sys.argv[1]) and time.monotonic() < deadline:
    time.sleep(0.1)
"""


def test_on_one_machine_a_job_run_waits_for_gpus_other_job_runs_hold(env):
    (env.tmp / "work").mkdir()
    write(env.tmp, "work/hold.py", HOLD)
    inventory = gpu_inventory(FakeNvml([FakeGpu(uuid="GPU-a"), FakeGpu(uuid="GPU-b")]), {})

    def run(name: str, gpus: int, more: str = "") -> str:
        kind = (
            f"num_accelerators: {gpus}, accelerator_type: GPU" if gpus else "accelerator_type: CPU"
        )
        text = (f"experiment_name: local-queue-{env.tmp.name}\nmlflow_run_name: {name}\n"
                f"compute: {{{kind}}}\nworking_dir: work\n{more}"
                f"command: {PY} hold.py {env.tmp / ('release-' + name)}\n")  # fmt: skip
        return submit_yaml(env, text, inventory).id

    def lines(job_id: str) -> list[str]:
        return [line.text for line in query_logs(env.store, job_id).lines]

    both = run("both", 2)  # every GPU of the machine
    wait_until(lambda: lines(both) == ["gpus 0,1"], 60, "the first job run to hold both GPUs")
    one = run("one", 1)
    wait_until(lambda: env.store.get_job(one).status == "QUEUED", 60, "the second to queue")
    queued = env.store.get_job(one).queue
    assert queued["position"] == 1
    assert queued["reason"] == (
        f"Waiting for 1 GPU of this machine (GPUs 0, 1); none free now, the others held by "
        f"job run {both}"
    )
    other = run("other", 1)
    wait_until(lambda: env.store.get_job(other).status == "QUEUED", 60, "the third to queue")
    place = env.store.get_job(other).queue
    assert (place["position"], place["total"], place["ahead"]) == (2, 2, [one])
    assert place["reason"].startswith(f"2nd in line, behind job run {one} (")
    cpu = run("cpu", 0)  # needs no GPU: never waits
    (env.tmp / "release-cpu").write_text("")
    assert wait_for(env.store, cpu, timeout=60).status == "SUCCEEDED"
    assert env.store.get_job(other).status == "QUEUED"

    (env.tmp / "release-both").write_text("")  # both GPUs free: the two queued ones start
    assert wait_for(env.store, both, timeout=60).status == "SUCCEEDED"
    wait_until(lambda: lines(one) and lines(other), 60, "the queued job runs to start")
    assert sorted(lines(one) + lines(other)) == ["gpus 0", "gpus 1"]  # never the same GPU
    for name, job_id in (("one", one), ("other", other)):
        (env.tmp / f"release-{name}").write_text("")
        ended = wait_for(env.store, job_id, timeout=60)
        assert ended.status == "SUCCEEDED" and ended.queue is None
        assert ended.attempts[0].started_at >= env.store.get_job(both).attempts[0].ended_at


def test_the_first_in_line_says_when_the_cluster_lost_what_it_needs():
    """A job run that waits for 3 nodes on a cluster that has 2 that could hold one (a node lost
    since the submission) keeps waiting, for nodes to join, and says so."""
    from jupyter_air.backends.ray_backend import RayNode
    from jupyter_air.backends.ray_queue import RayQueue

    class Cluster:
        address = "10.0.0.5:6379"

        def nodes(self) -> list[RayNode]:
            return [RayNode("a", "10.0.0.6", 2, 2), RayNode("b", "10.0.0.7", 2, 2),
                    RayNode("c", "10.0.0.8", 2, 0)]  # fmt: skip

    waiter = Waiter("j", 1, 0.0, "u", 3, 2, print, print, bool, print)
    reason = RayQueue(Cluster(), waiter)._free_now()  # type: ignore[arg-type]
    assert reason == (
        "the cluster has 2 nodes that could hold one now: it waits for nodes to join "
        "(queue_timeout_minutes limits the wait)"
    )
