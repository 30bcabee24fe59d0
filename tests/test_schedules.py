"""Scheduled workloads: the schedule block's errors, the store's firings, and the scheduler firing
real job runs on the local backend against the session's tracking server, driven by an injected
clock (slots a minute or more apart, no waiting for them)."""

from __future__ import annotations

import subprocess
import textwrap
import threading

import pytest
from workloads_support import PY, server_config, wait_for, write

from jupyter_air.workloads.schedules import (
    Scheduler,
    create_schedule,
    due_firings,
    overlap_action,
    schedule_runs,
    set_paused,
)
from jupyter_air.workloads.spec import ScheduleSpec, SpecError
from jupyter_air.workloads.spec_loading import load_spec, load_spec_file
from jupyter_air.workloads.store import JobStore, Schedule

T0 = 1_800_000_000  # a whole hour (and a multiple of 10 minutes), UTC


class Clock:
    def __init__(self, t: float) -> None:
        self.t = float(t)

    def __call__(self) -> float:
        return self.t


def _workload(env, command: str = "echo hi", name: str = "w.yaml") -> str:
    path = write(
        env.tmp,
        name,
        f"experiment_name: sched-{env.tmp.name}\ncompute: {{accelerator_type: CPU}}\n"
        f"command: {command}\n",
    )
    return str(path)


def _schedule(env, name: str, cron: str = "* * * * *", command: str = "echo hi", **settings):
    path = _workload(env, command, f"{name}.yaml")
    spec, text = load_spec_file(path)
    schedule = create_schedule(
        env.store,
        name=name,
        settings=ScheduleSpec(cron=cron, **settings),
        spec_yaml=text,
        spec_path=path,
    )
    # made at T0 by the injected clock
    with env.store._write() as conn:
        conn.execute("UPDATE schedules SET created_at = ? WHERE id = ?", (T0, schedule.id))
    return env.store.get_schedule(schedule.id)


def _tick_and_wait(env, scheduler: Scheduler) -> list:
    """One tick, and the job runs it submitted waited for to their end."""
    fired = scheduler.tick()
    for f in fired:
        if f.job_id:
            assert wait_for(env.store, f.job_id).status == "SUCCEEDED"
    return fired


def _stopper(env, name: str) -> tuple[str, object]:
    """A command that runs until the returned file exists."""
    stop = env.tmp / f"{name}.stop"
    return f"sh -c 'while [ ! -e {stop} ]; do sleep 0.1; done'", stop


# the spec's schedule block ------------------------------------------------------------------
def test_invalid_cron_and_unknown_timezone_say_their_lines():
    text = textwrap.dedent(
        """\
        experiment_name: nightly
        command: echo hi
        schedule:
          cron: "61 * * * *"
          timezone: Mars/Olympus
          overlap: sometimes
          catchup: none
        """
    )
    with pytest.raises(SpecError) as error:
        load_spec(text)
    problems = {p["field"]: p["line"] for p in error.value.to_json()}
    assert problems == {
        "schedule.cron": 4,
        "schedule.timezone": 5,
        "schedule.overlap": 6,
        "schedule.catchup": 7,
    }
    shown = str(error.value)
    assert "schedule.cron: must be a cron expression of 5 fields" in shown
    assert '(line 4); got "61 * * * *"' in shown
    assert (
        "schedule.timezone: must be an IANA timezone such as UTC or Europe/Paris (line 5)" in shown
    )
    assert "did you mean 'catch_up'?" in shown
    with pytest.raises(SpecError) as missing:
        load_spec("experiment_name: e\ncommand: x\nschedule:\n  timezone: UTC\n")
    assert "schedule.cron: required" in str(missing.value) and "(line 3)" in str(missing.value)
    spec = load_spec("experiment_name: e\ncommand: x\nschedule: {cron: '0 3 * * *'}\n")
    assert spec.schedule == ScheduleSpec(
        cron="0 3 * * *", timezone="UTC", overlap="skip", catch_up="latest"
    )


# the pure decisions -------------------------------------------------------------------------
def _settings(cron: str = "*/10 * * * *", catch_up: str = "latest", tz: str = "UTC") -> Schedule:
    return Schedule(
        id="0" * 12, name="s", cron=cron, timezone=tz, overlap="skip", catch_up=catch_up,
        paused=False, spec_yaml="", spec_path=None, user=None, created_at=T0, updated_at=T0,
        last_slot=None, queued_slot=None,
    )  # fmt: skip


def test_due_firings_honours_catch_up():
    latest, none = _settings(), _settings(catch_up="none")
    assert due_firings(latest, None, T0 + 599) == []  # nothing since it was made
    assert due_firings(latest, None, T0 + 600) == [T0 + 600]
    assert due_firings(latest, T0 + 600, T0 + 1199) == []  # fired already
    # after an hour without a server: only the latest missed slot, however late
    assert due_firings(latest, T0 + 600, T0 + 4200 - 1) == [T0 + 3600]
    assert due_firings(none, T0 + 600, T0 + 3600 + 30) == [T0 + 3600]  # on time
    assert due_firings(none, T0 + 600, T0 + 4200 - 1) == []  # missed: wait for the next
    paris = _settings("0 3 * * *", tz="Europe/Paris")  # 03:00 in Paris is 02:00 UTC in winter
    day = 1_797_120_000  # 2026-12-11 00:00 UTC
    assert due_firings(paris, day - 1, day + 2 * 3600) == [day + 2 * 3600]
    assert due_firings(paris, day - 1, day + 2 * 3600 - 1) == []


def test_overlap_action():
    assert overlap_action("skip", False, False) == "submit"
    assert overlap_action("skip", True, False) == "skip"
    assert overlap_action("queue", True, False) == "queue"
    assert overlap_action("queue", True, True) == "skip"  # one queued at most
    assert overlap_action("allow", True, True) == "submit"


# firing real job runs -----------------------------------------------------------------------
def test_a_schedule_fires_every_minute_by_the_clock(env, mlflow_server):
    import mlflow

    schedule = _schedule(env, "every-minute", overlap="allow")  # no waiting between slots
    clock = Clock(T0 + 30)
    scheduler = Scheduler(env.store, now=clock)
    assert scheduler.tick() == []
    clock.t = T0 + 61
    (fired,) = scheduler.tick()
    assert (fired.slot, fired.outcome) == (T0 + 60, "submitted")
    assert scheduler.tick() == []  # the same slot once
    clock.t = T0 + 125
    (second,) = scheduler.tick()
    assert (second.slot, second.outcome) == (T0 + 120, "submitted"), second.reason
    for done in (fired, second):
        job = wait_for(env.store, done.job_id)
        assert job.status == "SUCCEEDED"
        assert (job.schedule_id, job.schedule_name, job.source) == (
            schedule.id, "every-minute", "schedule",
        )  # fmt: skip
    runs = schedule_runs(env.store, schedule)
    assert [j.id for j in runs] == [second.job_id, fired.job_id]
    job = env.store.get_job(fired.job_id)
    run = mlflow.MlflowClient(mlflow_server.url).get_run(job.attempts[0].mlflow_run_id)
    assert run.data.tags["jupyter_air.schedule_id"] == schedule.id
    assert run.data.tags["jupyter_air.schedule"] == "every-minute"
    firings = env.store.firings(schedule.id)
    assert [(f.slot, f.outcome, f.job_id) for f in firings] == [
        (T0 + 120, "submitted", second.job_id),
        (T0 + 60, "submitted", fired.job_id),
    ]


def test_overlap_skip_and_queue_while_the_previous_run_runs(env):
    command, stop = _stopper(env, "long")
    skip = _schedule(env, "skipper", command=command, overlap="skip")
    queue = _schedule(env, "queuer", command=command, overlap="queue")
    clock = Clock(T0 + 61)
    scheduler = Scheduler(env.store, now=clock)
    first = {f.schedule: f for f in scheduler.tick()}
    assert {f.outcome for f in first.values()} == {"submitted"}
    for f in first.values():
        wait_for(env.store, f.job_id, status={"RUNNING"})
    clock.t = T0 + 121
    second = {f.schedule: f for f in scheduler.tick()}
    assert second["skipper"].outcome == "skipped"
    assert f"job run {first['skipper'].job_id} of the previous firing" in second["skipper"].reason
    assert second["queuer"].outcome == "queued"
    clock.t = T0 + 181
    third = {f.schedule: f for f in scheduler.tick()}
    assert third["queuer"].outcome == "skipped"  # one slot queued at most
    assert env.store.get_schedule(queue.id).queued_slot == T0 + 120

    stop.write_text("")  # the first runs end
    for f in first.values():
        assert wait_for(env.store, f.job_id).status == "SUCCEEDED"
    stop.unlink()
    fourth = scheduler.tick()  # same clock: only the queued slot fires
    assert [(f.schedule, f.slot, f.outcome) for f in fourth] == [("queuer", T0 + 120, "submitted")]
    assert env.store.get_schedule(queue.id).queued_slot is None
    firing = env.store.firing_for_slot(queue.id, T0 + 120)
    assert (firing.outcome, firing.job_id) == ("submitted", fourth[0].job_id)
    assert [f.outcome for f in env.store.firings(skip.id)] == ["skipped", "skipped", "submitted"]
    stop.write_text("")
    assert wait_for(env.store, fourth[0].job_id).status == "SUCCEEDED"


def test_catch_up_after_a_server_restart(env):
    latest = _schedule(env, "latest", cron="*/10 * * * *", catch_up="latest")
    none = _schedule(env, "none", cron="*/10 * * * *", catch_up="none")
    # a server fired the slot of T0 + 600 for both, then stopped
    for schedule in (latest, none):
        assert env.store.claim_firing(schedule.id, T0 + 600, "submitted") is not None
    # no server for 45 minutes: a new one (a new scheduler on the same store) 5 min after a slot
    after = Scheduler(env.store, now=Clock(T0 + 3000 + 300))
    (caught,) = _tick_and_wait(env, after)
    assert (caught.schedule, caught.slot, caught.outcome) == ("latest", T0 + 3000, "submitted")
    assert after.tick() == []
    assert env.store.get_schedule(none.id).last_slot == T0 + 3000  # passed, not fired
    assert [f.slot for f in env.store.firings(none.id)] == [T0 + 600]
    assert len(schedule_runs(env.store, latest)) == 1
    assert schedule_runs(env.store, none) == []
    assert due_firings(env.store.get_schedule(none.id), T0 + 3000, T0 + 3600 + 5) == [T0 + 3600]


def test_two_servers_on_one_data_folder_fire_each_slot_once(env):
    schedule = _schedule(env, "raced")
    clock = Clock(T0)
    # four servers: each its own store object (own connections) and scheduler on the same file
    servers = [Scheduler(JobStore(env.store.path), now=clock) for _ in range(4)]
    clock.t = T0 + 61
    barrier = threading.Barrier(len(servers))
    fired: list = []

    def run(scheduler: Scheduler) -> None:
        barrier.wait(timeout=30)
        fired.extend(scheduler.tick())

    threads = [threading.Thread(target=run, args=(s,)) for s in servers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert [(f.slot, f.outcome) for f in fired] == [(T0 + 60, "submitted")]
    (job,) = schedule_runs(env.store, schedule)
    assert job.id == fired[0].job_id and len(env.store.firings(schedule.id)) == 1
    wait_for(env.store, job.id)

    # two processes claiming the same 300 slots at once: each slot is claimed once in all
    claim = (
        "import sys; from jupyter_air.workloads.store import JobStore; "
        "s = JobStore(sys.argv[1]); "
        f"print(sum(s.claim_firing(sys.argv[2], {T0} + 60 * k, 'skipped') is not None "
        "for k in range(1000, 1300)))"
    )
    racers = [
        subprocess.Popen(
            [PY, "-c", claim, str(env.store.path), schedule.id], stdout=subprocess.PIPE, text=True
        )
        for _ in range(2)
    ]
    claimed = [int(p.communicate(timeout=120)[0]) for p in racers]
    assert sum(claimed) == 300, claimed
    assert len(env.store.firings(schedule.id, limit=1000)) == 301


def test_the_most_schedules_a_folder_keeps_holds_for_writers_at_once(env, monkeypatch):
    """At the limit, one clear error; eight writers at once cannot go past it together (the
    count is checked in the insert's own transaction)."""
    import jupyter_air.workloads.schedules as schedules
    from jupyter_air.workloads.schedules import ScheduleError

    monkeypatch.setattr(schedules, "MAX_SCHEDULES", 3)
    path = _workload(env)
    _, text = load_spec_file(path)
    barrier = threading.Barrier(8)
    outcomes: list[str] = []

    def make(k: int) -> None:
        barrier.wait()
        try:
            create_schedule(
                env.store, name=f"s{k}", settings=ScheduleSpec(cron="0 * * * *"),
                spec_yaml=text, spec_path=path,
            )  # fmt: skip
            outcomes.append("made")
        except ScheduleError as error:
            assert "has 3 schedules, the most it keeps" in str(error)
            outcomes.append("refused")

    threads = [threading.Thread(target=make, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(outcomes) == ["made"] * 3 + ["refused"] * 5
    assert len(env.store.list_schedules()) == 3


def test_paused_resumed_and_deleted(env):
    schedule = _schedule(env, "pausable")
    clock = Clock(T0 + 30)
    scheduler = Scheduler(env.store, now=clock)
    set_paused(env.store, schedule, True, clock())
    clock.t = T0 + 61
    assert scheduler.tick() == []
    # resumed: the slot that passed while paused is not caught up; the next one fires
    resumed = set_paused(env.store, env.store.get_schedule(schedule.id), False, clock())
    assert not resumed.paused and resumed.last_slot == T0 + 60
    assert scheduler.tick() == []
    clock.t = T0 + 121
    (fired,) = _tick_and_wait(env, scheduler)
    assert fired.slot == T0 + 120
    triggered = scheduler.trigger(env.store.get_schedule("pausable"))
    assert triggered.schedule_id == schedule.id
    trigger_firing = env.store.firings(schedule.id)[0]
    assert (trigger_firing.slot, trigger_firing.job_id) == (None, triggered.id)
    assert scheduler.tick() == []  # a trigger is not a slot
    env.store.delete_schedule(schedule.id)
    clock.t = T0 + 181
    assert scheduler.tick() == []
    jobs = env.store.list_jobs(schedule="pausable")  # its job runs stay, by name
    assert {j.id for j in jobs} == {fired.job_id, triggered.id}
    for job in jobs:
        wait_for(env.store, job.id)


# the air schedule command -------------------------------------------------------------------
def test_the_schedule_commands_through_the_cli(env):
    from workloads_support import air, air_json

    path = write(
        env.tmp,
        "nightly.yaml",
        f"experiment_name: sched-cli-{env.tmp.name}\ncompute: {{accelerator_type: CPU}}\n"
        "command: echo hi\nschedule:\n  cron: '0 3 * * *'\n  overlap: queue\n",
    )
    made = air(
        "schedule", "create", str(path), "--cron", "*/5 * * * *", "--timezone", "Europe/Paris",
        "--name", "nightly",
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    assert "Created schedule nightly (" in made.stdout
    assert "*/5 * * * * (Europe/Paris), overlap queue, catch-up latest" in made.stdout
    assert "Next firing: 20" in made.stdout
    taken = air("schedule", "create", str(path), "--name", "nightly")
    assert taken.returncode == 2 and "a schedule named 'nightly' exists already" in taken.stderr
    bad_flag = air("schedule", "create", str(path), "--cron", "every day", "--name", "x")
    assert bad_flag.returncode == 2
    assert "--cron: must be a cron expression of 5 fields" in bad_flag.stderr
    assert "got 'every day'" in bad_flag.stderr
    bad_zone = air("schedule", "create", str(path), "--timezone", "Nowhere/City", "--name", "x")
    assert bad_zone.returncode == 2 and "--timezone: must be an IANA timezone" in bad_zone.stderr
    broken = write(
        env.tmp, "broken.yaml", "experiment_name: e\ncommand: x\nschedule:\n  cron: '* * *'\n"
    )
    in_file = air("schedule", "create", str(broken))
    assert in_file.returncode == 2
    assert "schedule.cron: must be a cron expression" in in_file.stderr
    assert "(line 4)" in in_file.stderr
    no_cron = write(env.tmp, "plain.yaml", "experiment_name: e\ncommand: x\n")
    missing = air("schedule", "create", str(no_cron))
    assert missing.returncode == 2 and "give --cron" in missing.stderr
    assert [s.name for s in env.store.list_schedules()] == ["nightly"]  # nothing half-made

    listed = air("schedule", "list")
    assert listed.returncode == 0, listed.stderr
    head, row = listed.stdout.splitlines()
    assert head.split() == ["NAME", "CRON", "TIMEZONE", "NEXT", "FIRING", "STATE", "LAST", "RUN"]
    assert row.startswith("nightly") and "Europe/Paris" in row and "active" in row
    assert max(len(line) for line in listed.stdout.splitlines()) <= 80
    (shown,) = air_json("schedule", "list")
    assert shown["name"] == "nightly" and shown["overlap"] == "queue"
    assert shown["next_firing_at"] % 300 == 0 and shown["last_runs"] == []

    paused = air_json("schedule", "pause", "nightly")
    assert paused["paused"] is True and paused["next_firing_at"] is None
    assert env.store.get_schedule("nightly").paused
    assert "paused" in air("schedule", "list").stdout
    resumed = air("schedule", "resume", shown["id"])  # by id
    assert resumed.returncode == 0 and "Resumed schedule nightly: next firing 20" in resumed.stdout

    triggered = air_json("schedule", "trigger", "nightly")
    job = wait_for(env.store, triggered["id"])
    assert job.status == "SUCCEEDED" and job.schedule_name == "nightly"
    assert (triggered["schedule_id"], triggered["schedule_name"]) == (shown["id"], "nightly")
    assert f"Schedule:    nightly ({shown['id']})" in air("get", "run", job.id).stdout
    runs = air_json("list", "runs", "--all-status", "--filter", "schedule=nightly")
    assert [r["id"] for r in runs] == [job.id]
    assert air_json("list", "runs", "--all-status", "--filter", f"schedule={shown['id']}")
    assert air_json("list", "runs", "--all-status", "--filter", "schedule=other") == []
    got = air("schedule", "get", "nightly")
    assert got.returncode == 0
    assert "Cron:        */5 * * * * (Europe/Paris)" in got.stdout
    assert job.id in got.stdout and "(trigger)" in got.stdout
    detail = air_json("schedule", "get", "nightly")
    assert detail["spec_yaml"] == path.read_text()
    assert detail["last_runs"][0] == {
        "id": job.id, "status": "SUCCEEDED", "submitted_at": job.submitted_at, "link": None,
    }  # fmt: skip

    deleted = air("schedule", "delete", "nightly")
    assert deleted.returncode == 0 and "its job runs stay" in deleted.stdout
    gone = air("schedule", "get", "nightly")
    assert gone.returncode == 5 and "No schedule 'nightly'" in gone.stderr
    assert air("schedule", "trigger", "nightly").returncode == 5
    assert air_json("list", "runs", "--all-status", "--filter", "schedule=nightly")


# the Jupyter server: its task fires them, its API serves them -------------------------------
@pytest.fixture
def air_config(tmp_path) -> dict:
    return server_config(tmp_path / "air")


@pytest.fixture
def server_env(mlflow_env) -> dict[str, str]:
    return mlflow_env


async def test_the_jupyter_server_fires_due_schedules_and_serves_them(
    jp_fetch, jp_serverapp, air_config, tmp_path
):
    import asyncio
    import json
    import time

    from tornado.httpclient import HTTPClientError

    store = JobStore.for_data_dir(air_config["data_dir"])
    path = write(
        tmp_path, "served.yaml",
        f"experiment_name: sched-served-{tmp_path.name}\ncompute: {{accelerator_type: CPU}}\n"
        "command: echo hi\n",
    )  # fmt: skip
    spec, text = load_spec_file(path)
    schedule = create_schedule(
        store, name="served", settings=ScheduleSpec(cron="* * * * *"), spec_yaml=text,
        spec_path=str(path),
    )  # fmt: skip
    # made ten minutes ago: its latest slot is due (catch_up latest) at the server's next tick
    with store._write() as conn:
        conn.execute(
            "UPDATE schedules SET created_at = ? WHERE id = ?", (time.time() - 600, schedule.id)
        )
    deadline = time.monotonic() + 60
    while not store.list_jobs(schedule=schedule.id) and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    (job,) = store.list_jobs(schedule=schedule.id)
    assert job.schedule_name == "served" and job.source == "schedule"

    answer = json.loads((await jp_fetch("air", "api", "schedules")).body)
    (shown,) = answer["schedules"]
    assert shown["next_firing_at"] > time.time() - 1 and shown["next_firing_at"] % 60 == 0
    assert shown["last_runs"][0]["id"] == job.id
    assert shown["last_runs"][0]["link"].endswith(f"lab?air-workload={job.id}")
    assert shown["firings"][0]["outcome"] == "submitted"
    paused = await jp_fetch("air", "api", "schedules", "served", "pause", method="POST", body=b"")
    assert json.loads(paused.body)["paused"] is True and store.get_schedule("served").paused
    for method, parts in (
        ("GET", ("schedules",)),
        ("POST", ("schedules", "served", "resume")),
        ("POST", ("schedules", "served", "trigger")),
        ("DELETE", ("schedules", "served")),
    ):
        with pytest.raises(HTTPClientError) as denied:
            await jp_fetch(
                "air", "api", *parts, method=method, headers={"Authorization": ""},
                **({"body": b""} if method == "POST" else {}),
            )  # fmt: skip
        assert denied.value.code == 403, parts
    assert store.get_schedule("served").paused  # nothing was done
    with pytest.raises(HTTPClientError) as missing:
        await jp_fetch("air", "api", "schedules", "nope")
    assert missing.value.code == 404
    await asyncio.get_running_loop().run_in_executor(None, wait_for, store, job.id)
