"""Scheduled workloads: a workload YAML fired on a cron schedule, each firing an ordinary job run
(the same ``jobs.submit`` as ``air run``) tagged with the schedule's id and name.

Schedules live in the job store (``store/schedule_rows.py``); the Jupyter server evaluates them
with one ``Scheduler`` (``tick`` every few seconds, from its executor). What fires is decided by
two pure functions: ``due_firings`` (the slot due now, after ``catch_up``) and
``overlap_action`` (what a due slot does while the schedule's previous run still runs). A slot is
fired by whoever inserts its firing row (``JobStore.claim_firing``: a unique key, not a lock in
memory), so two servers on one data folder never fire it twice.
"""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import KW_ONLY, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .cron import next_slot, previous_slot
from .store import ACTIVE, JobRun, JobStore, Schedule

if TYPE_CHECKING:
    from ..api.schedules import Schedule as ScheduleView
    from .capacity import GpuInventory
    from .connection import Connection
    from .spec import ScheduleSpec, WorkloadSpec

log = logging.getLogger(__name__)

# catch_up none: a slot fired later than this after its time counts as missed
LATE_AFTER_S = 60.0
TICK_EVERY_S = 10.0  # how often the Jupyter server looks at its schedules
MAX_SCHEDULES = 1000  # per data folder
MAX_SCHEDULE_NAME = 100
SCHEDULE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
OVERLAP = ("skip", "queue", "allow")
CATCH_UP = ("latest", "none")
SUBMITTED, SKIPPED, QUEUED, FAILED = "submitted", "skipped", "queued", "failed"


class ScheduleError(ValueError):
    """A schedule that cannot be made as asked (its name, too many schedules)."""


# what fires ---------------------------------------------------------------------------------
def due_firings(schedule: Schedule, last_slot: int | None, now: float) -> list[int]:
    """The slots ``schedule`` fires at ``now`` when it last fired (or passed) ``last_slot``:
    at most the latest slot at or before ``now`` that is after ``last_slot`` (or after the
    schedule's creation). ``catch_up`` latest: that slot however late (after downtime only the
    latest missed slot runs); none: only when it is at most ``LATE_AFTER_S`` late, else nothing
    (missed slots are skipped; the schedule waits for the next)."""
    latest = previous_slot(schedule.cron, schedule.timezone, now)
    since = last_slot if last_slot is not None else int(schedule.created_at)
    if latest <= since:
        return []
    if schedule.catch_up == "none" and now - latest > LATE_AFTER_S:
        return []
    return [latest]


def overlap_action(overlap: str, previous_active: bool, queued: bool) -> str:
    """What a due slot does: ``submit``, ``skip`` or ``queue``. While the previous run still
    runs — skip: record the slot as skipped; queue: wait for it to end (one slot at most: a
    second is skipped); allow: submit anyway."""
    if not previous_active or overlap == "allow":
        return "submit"
    if overlap == "queue" and not queued:
        return "queue"
    return "skip"


def next_firing(schedule: Schedule, now: float) -> int | None:
    """When the schedule fires next (None while paused)."""
    if schedule.paused:
        return None
    return next_slot(schedule.cron, schedule.timezone, now)


# making one ---------------------------------------------------------------------------------
def schedule_settings(spec: WorkloadSpec, source: str | None, **flags: str | None) -> ScheduleSpec:
    """The file's ``schedule:`` block with the command line's ``flags`` (cron, timezone,
    overlap, catch_up) on top; raises SpecError naming the flag (or the field and its line)."""
    from pydantic import ValidationError

    from .spec import FIELD_HELP, REQUIRED_HELP, ScheduleSpec, SpecError
    from .yaml_source import Problem

    given = {name: value for name, value in flags.items() if value is not None}
    if not given:
        if spec.schedule is None:
            raise SpecError(
                [Problem("schedule.cron", REQUIRED_HELP["schedule.cron"] + ": give --cron")],
                source,
            )
        return spec.schedule
    block = spec.schedule.model_dump() if spec.schedule is not None else {}
    try:
        return ScheduleSpec.model_validate({**block, **given})
    except ValidationError as error:
        problems = []
        for item in error.errors():
            field = str(item["loc"][0]) if item["loc"] else "cron"
            flag = f"--{field.replace('_', '-')}" if field in given else f"schedule.{field}"
            if item["type"] == "missing":
                message = REQUIRED_HELP["schedule.cron"] + ": give --cron"
            else:
                message = FIELD_HELP.get(f"schedule.{field}", item["msg"])
            value = given.get(field)
            problems.append(
                Problem(flag, message, hint=f"got {value!r}" if value is not None else None)
            )
        raise SpecError(problems, source) from None


def check_name(name: str) -> str:
    name = name.strip()
    if not name or len(name) > MAX_SCHEDULE_NAME or not SCHEDULE_NAME.match(name):
        raise ScheduleError(
            f"--name {name!r}: a schedule's name is 1 to {MAX_SCHEDULE_NAME} letters, digits, "
            "'_', '.' or '-', starting with a letter or a digit"
        )
    if re.fullmatch(r"[0-9a-f]{12}", name):
        raise ScheduleError(f"--name {name!r}: 12 hexadecimal digits read as a schedule id")
    return name


def create_schedule(
    store: JobStore,
    *,
    name: str,
    settings: ScheduleSpec,
    spec_yaml: str,
    spec_path: str | None,
    paused: bool = False,
) -> Schedule:
    """Record a schedule of a validated workload file. Raises ScheduleError (name, limit) or
    ScheduleExists."""
    from ..tracking.naming import current_user
    from .paths import new_job_id
    from .store import TooManySchedules

    name = check_name(name)
    try:
        return store.create_schedule(
            most=MAX_SCHEDULES,
            id=new_job_id(),
            name=name,
            cron=settings.cron,
            timezone=settings.timezone,
            overlap=settings.overlap,
            catch_up=settings.catch_up,
            paused=paused,
            spec_yaml=spec_yaml,
            spec_path=str(Path(spec_path).resolve()) if spec_path else None,
            user=current_user(),
        )
    except TooManySchedules:
        raise ScheduleError(
            f"this data folder has {MAX_SCHEDULES} schedules, the most it keeps: delete some "
            "(air schedule delete NAME)"
        ) from None


def schedule_runs(store: JobStore, schedule: Schedule, limit: int = 10) -> list[JobRun]:
    """The schedule's job runs, newest first."""
    return store.list_jobs(schedule=schedule.id, limit=limit, with_attempts=False)


# firing -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fired:
    """What one schedule did for one slot in a ``tick`` (or a ``trigger``)."""

    schedule: str  # its name
    slot: int | None
    outcome: str  # submitted | skipped | queued | failed
    job_id: str | None = None
    reason: str | None = None


@dataclass(eq=False)
class Scheduler:
    """Fires the schedules of one job store. ``now``: the clock (unix seconds); the other
    fields are given to ``jobs.submit`` for each firing (by default it finds the tracking
    server as ``air run`` does). Blocking: call ``tick`` from an executor, never on a loop."""

    store: JobStore
    _: KW_ONLY
    now: Callable[[], float] = time.time
    connection: Connection | Callable[[], Connection] | None = None
    environ: Mapping[str, str] | None = None
    inventory: GpuInventory | Callable[[], GpuInventory] | None = None

    def tick(self) -> list[Fired]:
        """Fire what is due now in every schedule that is not paused."""
        now = self.now()
        fired: list[Fired] = []
        for schedule in self.store.list_schedules(paused=False, limit=MAX_SCHEDULES):
            try:
                fired.extend(self._tick_one(schedule, now))
            except Exception:  # one broken schedule does not stop the others
                log.exception("jupyter-air: schedule %s could not be evaluated", schedule.name)
        return fired

    def trigger(self, schedule: Schedule) -> JobRun:
        """One job run now, outside the schedule's slots (paused or not, whatever runs);
        raises what ``jobs.submit`` raises (the firing is recorded failed)."""
        firing = self.store.claim_firing(schedule.id, None, SUBMITTED)
        if firing is None:
            from .store import ScheduleNotFound

            raise ScheduleNotFound(schedule.name)
        try:
            job = self.submit(schedule)
        except Exception as error:
            self.store.record_firing(firing, FAILED, reason=_reason(error))
            raise
        self.store.record_firing(firing, SUBMITTED, job_id=job.id)
        return job

    def _tick_one(self, schedule: Schedule, now: float) -> list[Fired]:
        fired: list[Fired] = []
        previous = self._active_run(schedule)
        queued = schedule.queued_slot
        if queued is not None and previous is None and self.store.take_queued(schedule.id, queued):
            firing = self.store.firing_for_slot(schedule.id, queued)
            if firing is not None:
                done = self._fire(schedule, firing.id, queued)
                fired.append(done)
                previous = self._active_run(schedule) if done.job_id else None
            queued = None
        due = due_firings(schedule, schedule.last_slot, now)
        if not due:
            latest = previous_slot(schedule.cron, schedule.timezone, now)
            if latest > (schedule.last_slot or int(schedule.created_at)):
                self.store.pass_slot(schedule.id, latest)  # missed (catch_up none)
        for slot in due:
            action = overlap_action(schedule.overlap, previous is not None, queued is not None)
            outcome = {"submit": SUBMITTED, "skip": SKIPPED, "queue": QUEUED}[action]
            firing_id = self.store.claim_firing(schedule.id, slot, outcome, queue=action == "queue")
            if firing_id is None:
                continue  # fired by another server, or paused or deleted meanwhile
            if action == "submit":
                done = self._fire(schedule, firing_id, slot)
                fired.append(done)
                continue
            assert previous is not None
            reason = f"job run {previous.id} of the previous firing was still {previous.status}"
            if action == "queue":
                reason += "; runs when it ends"
            self.store.record_firing(firing_id, outcome, reason=reason)
            fired.append(Fired(schedule.name, slot, outcome, reason=reason))
            if action == "queue":
                queued = slot
        return fired

    def _active_run(self, schedule: Schedule) -> JobRun | None:
        from .jobs import list_jobs

        jobs = list_jobs(self.store, status=sorted(ACTIVE), schedule=schedule.id, limit=1)
        return next((job for job in jobs if job.status in ACTIVE), None)

    def _fire(self, schedule: Schedule, firing_id: int, slot: int | None) -> Fired:
        try:
            job = self.submit(schedule)
        except Exception as error:
            reason = _reason(error)
            log.warning("jupyter-air: schedule %s did not fire: %s", schedule.name, reason)
            self.store.record_firing(firing_id, FAILED, reason=reason)
            return Fired(schedule.name, slot, FAILED, reason=reason)
        self.store.record_firing(firing_id, SUBMITTED, job_id=job.id)
        log.info("jupyter-air: schedule %s submitted job run %s", schedule.name, job.id)
        return Fired(schedule.name, slot, SUBMITTED, job_id=job.id)

    def submit(self, schedule: Schedule) -> JobRun:
        """The schedule's workload as a job run, through ``jobs.submit`` (the file as it was
        when the schedule was made, validated again)."""
        from .jobs import submit
        from .spec_loading import load_spec

        base = Path(schedule.spec_path).parent if schedule.spec_path else None
        spec = load_spec(schedule.spec_yaml, base_dir=base, source=schedule.spec_path)
        return submit(
            spec,
            store=self.store,
            spec_yaml=schedule.spec_yaml,
            spec_path=schedule.spec_path,
            source="schedule",
            connection=self.connection,
            inventory=self.inventory,
            environ=self.environ,
            schedule=schedule,
        )


def _reason(error: Exception) -> str:
    return (str(error).strip() or type(error).__name__)[:2000]


def set_paused(store: JobStore, schedule: Schedule, paused: bool, now: float) -> Schedule:
    """Pause or resume a schedule. Slots that passed while it was paused are not caught up:
    a resumed schedule fires from its next slot on."""
    if not paused and schedule.paused:
        store.pass_slot(schedule.id, previous_slot(schedule.cron, schedule.timezone, now))
    return store.set_schedule_paused(schedule.id, paused)


# views --------------------------------------------------------------------------------------
def schedule_view(
    store: JobStore,
    schedule: Schedule,
    now: float,
    connection: Connection | None = None,
    *,
    runs: int = 5,
    firings: int = 10,
    detail: bool = False,
) -> ScheduleView:
    """The API's view of a schedule: its next firing, last job runs and firings."""
    from ..api.schedules import Schedule as View
    from ..api.schedules import ScheduleDetail, ScheduleFiring, ScheduleRun

    last = schedule_runs(store, schedule, limit=runs)
    fields = {
        "id": schedule.id,
        "name": schedule.name,
        "cron": schedule.cron,
        "timezone": schedule.timezone,
        "overlap": schedule.overlap,
        "catch_up": schedule.catch_up,
        "paused": schedule.paused,
        "experiment_name": _experiment_name(schedule.spec_yaml),
        "spec_path": schedule.spec_path,
        "user": schedule.user,
        "created_at": schedule.created_at,
        "updated_at": schedule.updated_at,
        "next_firing_at": next_firing(schedule, now),
        "last_slot": schedule.last_slot,
        "queued_slot": schedule.queued_slot,
        "last_runs": [
            ScheduleRun(
                id=job.id,
                status=job.status,
                submitted_at=job.submitted_at,
                link=connection.job_link(job.id) if connection is not None else None,
            )
            for job in last
        ],
        "firings": [
            ScheduleFiring.model_validate(f, from_attributes=True)
            for f in store.firings(schedule.id, limit=firings)
        ],
    }
    if detail:
        return ScheduleDetail.model_validate({**fields, "spec_yaml": schedule.spec_yaml})
    return View.model_validate(fields)


def _experiment_name(spec_yaml: str) -> str | None:
    import yaml

    try:
        data = yaml.safe_load(spec_yaml)
    except yaml.YAMLError:
        return None
    name = data.get("experiment_name") if isinstance(data, dict) else None
    return str(name) if name is not None else None
