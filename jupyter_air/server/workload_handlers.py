"""REST handlers for workloads (job runs) and their logs.

Resources for the authorizer: ``air-workloads`` (list, read, cancel job runs; list, read, pause,
resume, trigger and delete schedules) and ``air-logs``
(read and download their logs). Access to an experiment does not include access to logs: a
deployment grants ``air-logs`` separately. A custom authorizer that decides per job run finds
its id as ``handler.workload_id`` (set before authorisation). Paths are built by the job store
from a checked 12-hex id and integer attempt/node numbers only, so no request can reach a file
outside a job's log folder.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Callable
from typing import Any, TypeVar

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import APIHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin

from ..api import endpoints
from ..api.enums import JobStatus
from .workload_service import WorkloadService

WORKLOADS_RESOURCE = endpoints.WORKLOADS
LOGS_RESOURCE = endpoints.LOGS
NO_LOG_ACCESS = (
    "You don't have access to these logs. Access to an experiment does not include the logs of "
    "its workloads: ask the workload's owner or the administrator of this Jupyter server for "
    "the 'air-logs' permission."
)
# the files themselves: the Jupyter server's own user may not read them (another user's job)
UNREADABLE_LOGS = (
    "You don't have access to these logs: the user this Jupyter server runs as cannot read the "
    "job's log files. Ask the workload's owner or the administrator of this machine for read "
    "access to its log folder."
)
NOT_SHARED = (
    "You don't have access to this job run: it is {owner}'s, and they have not shared it with "
    "you ({owner} can: air share job {job} --with {user})."
)
OWNER_ONLY = "Only {owner} can {what} on this server: it is theirs."
MAX_WAIT_S = 30.0
_JOB_ID = r"(?P<workload_id>[^/]+)"
_RUN_ID = r"(?P<run_id>[0-9a-f]{32})"  # an MLflow run id
_SCHEDULE = r"(?P<schedule_id>[^/]+)"
T = TypeVar("T")


class _WorkloadBase(ExtensionHandlerMixin, APIHandler):
    auth_resource = WORKLOADS_RESOURCE
    workload_id: str | None = None

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        # known before authorisation, for authorizers that decide per job run
        self.workload_id = (self.path_kwargs or {}).get("workload_id")
        await super().prepare(*args, **kwargs)

    @property
    def service(self) -> WorkloadService:
        return self.settings["jupyter_air"]["workloads"]

    def _int(self, name: str, default: int | None, low: int, high: int) -> int | None:
        raw = self.get_query_argument(name, None)
        if raw is None or raw == "":
            return default
        try:
            value = int(raw)
        except ValueError:
            value = low - 1
        if not low <= value <= high:
            raise tornado.web.HTTPError(
                400, f"'{name}' must be a whole number from {low} to {high} (got {raw!r})"
            )
        return value

    @property
    def _user(self) -> str:
        return str(self.current_user.username)

    async def _check_shared(self, workload_id: str, message: str | None = None) -> None:
        """On a JupyterHub user's server, anyone else reaches a job run only when it is shared
        with them (``air share job``): 403 with ``message`` (or why) otherwise."""
        user = self._user
        if self.service.sees_all(user) or await self._call(self.service.shared, workload_id, user):
            return
        owner = self.service.owner
        raise tornado.web.HTTPError(
            403, message or NOT_SHARED.format(owner=owner, job=workload_id, user=user)
        )

    def _owner_only(self, what: str) -> None:
        if not self.service.sees_all(self._user):
            raise tornado.web.HTTPError(403, OWNER_ONLY.format(owner=self.service.owner, what=what))

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """Run a blocking store/log call on the service's executor, mapping its errors to
        HTTP."""
        from ..workloads import InvalidQuery, JobNotFound
        from ..workloads.paths import InvalidJobId

        try:
            return await self.service.call(fn, *args, **kwargs)
        except (JobNotFound, InvalidJobId):
            raise tornado.web.HTTPError(
                404, f"No workload {self.workload_id!r} on this server"
            ) from None
        except InvalidQuery as error:
            raise tornado.web.HTTPError(400, str(error)) from None


class WorkloadsHandler(_WorkloadBase):
    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        statuses = [s.strip().upper() for s in self.get_query_argument("status", "").split(",")]
        statuses = [s for s in statuses if s]
        unknown = [s for s in statuses if s not in list(JobStatus)]
        if unknown:
            raise tornado.web.HTTPError(
                400, f"'status' must be among {', '.join(JobStatus)} (got {unknown[0]!r})"
            )
        experiment = self.get_query_argument("experiment", None) or None
        limit = self._int("limit", 50, 1, 500)
        offset = self._int("offset", 0, 0, 10**9)
        shared_with = None if self.service.sees_all(self._user) else self._user
        answer = await self._call(
            self.service.list, status=statuses or None, experiment=experiment,
            limit=limit, offset=offset, shared_with=shared_with,
        )  # fmt: skip
        self.finish(answer.model_dump_json())


class WorkloadHandler(_WorkloadBase):
    @tornado.web.authenticated
    @authorized
    async def get(self, workload_id: str) -> None:
        await self._check_shared(workload_id)
        self.finish((await self._call(self.service.get, workload_id)).model_dump_json())


class WorkloadCancelHandler(_WorkloadBase):
    """Asks for the cancellation and answers at once: 202 with the job run while it stops
    (the panel follows it with ``GET``), 200 when it had already ended."""

    @tornado.web.authenticated
    @authorized
    async def post(self, workload_id: str) -> None:
        self._owner_only("cancel job runs")
        job, asked = await self._call(self.service.cancel, workload_id)
        self.set_status(202 if asked else 200)
        self.finish(job.model_dump_json())


class _LogsBase(_WorkloadBase):
    auth_resource = LOGS_RESOURCE

    @tornado.web.authenticated
    @authorized(message=NO_LOG_ACCESS)
    async def get(self, workload_id: str) -> None:
        await self._serve(workload_id)

    async def _serve(self, workload_id: str) -> None:
        """Answer for the job run ``workload_id`` (the authorizer's access already checked)."""
        await self._check_shared(workload_id, NO_LOG_ACCESS)
        await self._answer(workload_id, self._filters())

    async def _answer(self, workload_id: str, filters: dict[str, Any]) -> None:
        """Answer for the job run ``workload_id`` (any access checked), with the query's
        filters."""
        raise NotImplementedError

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return await super()._call(fn, *args, **kwargs)
        except PermissionError:  # the log files, not the job store
            raise tornado.web.HTTPError(403, UNREADABLE_LOGS) from None

    def _filters(self) -> dict[str, Any]:
        level = self.get_query_argument("level", None) or None
        return {
            "node": self._int("node", 0, 0, 10_000),
            "attempt": self._int("attempt", None, 1, 100_000),
            "level": level.split(",") if level else None,
            "q": self.get_query_argument("q", None) or None,
            "since": _time_bound(self.get_query_argument("since", None)),
            "until": _time_bound(self.get_query_argument("until", None)),
        }


class WorkloadLogsHandler(_LogsBase):
    async def _answer(self, workload_id: str, filters: dict[str, Any]) -> None:
        from ..logs.query import MAX_LIMIT

        after = self.get_query_argument("after", None) or None
        before = self.get_query_argument("before", None) or None
        tail = self.get_query_argument("tail", "") in ("1", "true", "yes")
        limit = self._int("limit", 500, 1, MAX_LIMIT)
        wait = _bounded_float(self.get_query_argument("wait", None), 0.0, MAX_WAIT_S, "wait")
        deadline = time.monotonic() + wait
        while True:
            page = await self._call(
                self.service.logs, workload_id, after=after, before=before, tail=tail,
                limit=limit, **filters,
            )  # fmt: skip
            if page.lines or page.complete or after is None or time.monotonic() >= deadline:
                break
            stream = getattr(self.request.connection, "stream", None)  # HTTP/1's IOStream
            if stream is None or stream.closed():
                return  # the client went away while waiting
            await asyncio.sleep(0.5)
        self.set_header("Cache-Control", "no-store")
        self.finish(page.model_dump_json())


class WorkloadLogsDownloadHandler(_LogsBase):
    async def _answer(self, workload_id: str, filters: dict[str, Any]) -> None:
        name, chunks = await self._call(self.service.download, workload_id, **filters)
        self.set_header("Content-Type", "text/plain; charset=utf-8")
        self.set_header("Content-Disposition", f'attachment; filename="{name}"')
        self.set_header("X-Content-Type-Options", "nosniff")
        done = object()
        while True:
            try:
                chunk = await self.service.call(next, chunks, done)
            except PermissionError:
                if self._headers_written:
                    raise
                raise tornado.web.HTTPError(403, UNREADABLE_LOGS) from None
            if chunk is done:
                break
            self.write(chunk)
            await self.flush()
        self.finish()


class _RunLogs(_LogsBase):
    """The logs of the job run and attempt that an MLflow run records (the run page's Logs
    tab): the job's logs, with the same query, access rule and answers, the attempt preset."""

    run_attempt: int | None = None

    async def _resolve(self, run_id: str) -> str:
        found = await self.service.call(self.service.store.attempt_of_run, run_id)
        if found is None:
            raise tornado.web.HTTPError(
                404,
                f"MLflow run {run_id} is not a job run's attempt (a workload, a "
                ".distributed(remote=True) call or a scheduled run): it has no logs here.",
            )
        self.workload_id, self.run_attempt = found
        return found[0]

    def _filters(self) -> dict[str, Any]:
        return {**super()._filters(), "attempt": self.run_attempt}

    @tornado.web.authenticated
    async def get(self, run_id: str) -> None:
        await self._resolve(run_id)  # the job run: what the access rule decides on
        await self._authorized()

    @authorized(message=NO_LOG_ACCESS)
    async def _authorized(self) -> None:
        assert self.workload_id is not None
        await self._serve(self.workload_id)


class RunLogsHandler(_RunLogs, WorkloadLogsHandler):
    pass


class RunLogsDownloadHandler(_RunLogs, WorkloadLogsDownloadHandler):
    pass


def _time_bound(raw: str | None) -> str | float | None:
    """A unix time stays a number; anything else (ISO 8601) is left to the log query to check."""
    if raw is None or raw == "":
        return None
    try:
        return float(raw)
    except ValueError:
        return raw


def _bounded_float(raw: str | None, low: float, high: float, name: str) -> float:
    if raw is None or raw == "":
        return low
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not low <= value <= high:
        raise tornado.web.HTTPError(400, f"'{name}' must be from {low:g} to {high:g} seconds")
    return value


class _ScheduleBase(_WorkloadBase):
    """Schedules (``air schedule``): the ``air-workloads`` resource; a custom authorizer finds
    the schedule's id or name as ``handler.schedule_id``."""

    schedule_id: str | None = None

    async def prepare(self, *args: Any, **kwargs: Any) -> None:
        self.schedule_id = (self.path_kwargs or {}).get("schedule_id")
        await super().prepare(*args, **kwargs)
        if self.current_user is not None:  # (not logged in: refused by the method's decorator)
            self._owner_only("see and change the schedules")

    async def _call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        from ..backends.base import CapacityError
        from ..workloads.connection import NoTrackingServer
        from ..workloads.spec import SpecError
        from ..workloads.store import ScheduleNotFound

        try:
            return await super()._call(fn, *args, **kwargs)
        except ScheduleNotFound:
            raise tornado.web.HTTPError(
                404, f"No schedule {self.schedule_id!r} on this server"
            ) from None
        except SpecError as error:
            raise tornado.web.HTTPError(
                400, f"the schedule's workload is no longer valid: {error}"
            ) from None
        except CapacityError as error:
            raise tornado.web.HTTPError(409, str(error)) from None
        except NoTrackingServer as error:
            raise tornado.web.HTTPError(503, str(error)) from None


class SchedulesHandler(_ScheduleBase):
    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        self.finish((await self._call(self.service.schedules)).model_dump_json())


class ScheduleHandler(_ScheduleBase):
    @tornado.web.authenticated
    @authorized
    async def get(self, schedule_id: str) -> None:
        self.finish((await self._call(self.service.schedule, schedule_id)).model_dump_json())

    @tornado.web.authenticated
    @authorized
    async def delete(self, schedule_id: str) -> None:
        answer = await self._call(self.service.delete_schedule, schedule_id)
        self.finish(answer.model_dump_json())


class SchedulePauseHandler(_ScheduleBase):
    paused = True

    @tornado.web.authenticated
    @authorized
    async def post(self, schedule_id: str) -> None:
        answer = await self._call(self.service.pause_schedule, schedule_id, self.paused)
        self.finish(answer.model_dump_json())


class ScheduleResumeHandler(SchedulePauseHandler):
    paused = False


class ScheduleTriggerHandler(_ScheduleBase):
    """One job run now (201 with it), submitted as ``air run`` submits it."""

    @tornado.web.authenticated
    @authorized
    async def post(self, schedule_id: str) -> None:
        job = await self._call(self.service.trigger_schedule, schedule_id)
        self.set_status(201)
        self.finish(job.model_dump_json())


def workload_handlers() -> list[tuple[str, type]]:
    return [
        (r"/air/api/schedules", SchedulesHandler),
        (rf"/air/api/schedules/{_SCHEDULE}", ScheduleHandler),
        (rf"/air/api/schedules/{_SCHEDULE}/pause", SchedulePauseHandler),
        (rf"/air/api/schedules/{_SCHEDULE}/resume", ScheduleResumeHandler),
        (rf"/air/api/schedules/{_SCHEDULE}/trigger", ScheduleTriggerHandler),
        (r"/air/api/workloads", WorkloadsHandler),
        (rf"/air/api/workloads/{_JOB_ID}", WorkloadHandler),
        (rf"/air/api/workloads/{_JOB_ID}/cancel", WorkloadCancelHandler),
        (rf"/air/api/workloads/{_JOB_ID}/logs", WorkloadLogsHandler),
        (rf"/air/api/workloads/{_JOB_ID}/logs/download", WorkloadLogsDownloadHandler),
        (rf"/air/api/runs/{_RUN_ID}/logs", RunLogsHandler),
        (rf"/air/api/runs/{_RUN_ID}/logs/download", RunLogsDownloadHandler),
    ]
