"""Schedules as the REST API (``air/api/schedules``) and ``air schedule … --output json``
answer them: the schedule's settings, when it fires next, its last firings and the job runs
they started. Built from the job store by ``workloads/schedules.py``."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from .base import ApiModel
from .enums import JobStatus
from .workloads import UnixTime


class ScheduleRun(ApiModel):
    """One job run a schedule started (newest first)."""

    id: str = Field(description="the job run's id")
    status: JobStatus
    submitted_at: UnixTime
    link: str | None = Field(None, description="the job run's page in JupyterLab")


class ScheduleFiring(ApiModel):
    """What the schedule did for one slot (or a trigger)."""

    slot: UnixTime | None = Field(None, description="the slot's time; null: air schedule trigger")
    fired_at: UnixTime
    outcome: Literal["submitted", "skipped", "queued", "failed"]
    job_id: str | None = None
    reason: str | None = Field(None, description="why it was skipped, queued or failed")


class Schedule(ApiModel):
    """A workload run on a cron schedule: each firing an ordinary job run."""

    id: str = Field(description="12 hexadecimal digits")
    name: str = Field(description="unique in the data folder")
    cron: str
    timezone: str = Field(description="an IANA timezone the cron expression is read in")
    overlap: Literal["skip", "queue", "allow"]
    catch_up: Literal["latest", "none"]
    paused: bool
    experiment_name: str | None = Field(None, description="the workload's experiment")
    spec_path: str | None = Field(None, description="the workload YAML it was made from")
    user: str | None = None
    created_at: UnixTime
    updated_at: UnixTime
    next_firing_at: UnixTime | None = Field(None, description="null while paused")
    last_slot: UnixTime | None = Field(None, description="the latest slot fired or passed")
    queued_slot: UnixTime | None = Field(
        None, description="overlap queue: the slot waiting for the previous run to end"
    )
    last_runs: list[ScheduleRun] = []
    firings: list[ScheduleFiring] = []


class ScheduleDetail(Schedule):
    """``GET air/api/schedules/{id}``: a schedule with its workload YAML."""

    spec_yaml: str


class SchedulesPage(ApiModel):
    """``GET air/api/schedules``: every schedule of the data folder, by name."""

    schedules: list[Schedule]
