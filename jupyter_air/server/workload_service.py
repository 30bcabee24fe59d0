"""The workloads of this Jupyter server's data folder, as its REST API answers them: job runs
(``jupyter_air.api.workloads``) with links into this server's MLflow UI, log pages, downloads,
cancellation; and the two background tasks: the daily purge of old logs, and the watch that
every ``WATCH_EVERY_S`` ends the job runs whose supervisor is gone or did not carry out a
cancellation in time (``jobs.check_active``: process scans and signals), and every
``RECONCILE_EVERY_S`` closes the MLflow runs that ended job runs left open while MLflow did not
answer (in a process of its own, ``python -m jupyter_air.workloads.reconcile``).

Reads only read: a job run is answered as the store has it, with its supervisor's staleness from
its heartbeat (``workloads/heartbeat.py``). Every blocking call (SQLite, files, process signals)
runs on this service's own bounded executor (``call``), never on the event loop and never on its
default executor, so slow workload calls cannot hold up other endpoints, nor they these.
"""

from __future__ import annotations

import asyncio
import logging
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import KW_ONLY, InitVar, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..tasks import cancel_and_wait

if TYPE_CHECKING:
    from ..api.logs import LogPage
    from ..api.schedules import Schedule as ScheduleView
    from ..api.schedules import ScheduleDetail, SchedulesPage
    from ..api.workloads import Job, JobDetail, WorkloadsPage
    from ..tracking.identity import Credentials
    from ..workloads.connection import Connection
    from ..workloads.retention import PurgeReport
    from ..workloads.schedules import Fired, Scheduler
    from ..workloads.store import JobStore

log = logging.getLogger(__name__)

DAY_S = 86400.0
WATCH_EVERY_S = 5.0
RECONCILE_EVERY_S = 30.0
WORKERS = 4  # at most this many workload calls at once; more wait their turn

T = TypeVar("T")


@dataclass(eq=False)
class WorkloadService:
    data_dir: Path
    _: KW_ONLY
    base_url: str
    mlflow_ui: Callable[[], str | None]
    tracking_uri: Callable[[], str | None]
    retention_days: float = 60.0
    mlflow_ready: Callable[[], bool] = lambda: True
    workers: InitVar[int] = WORKERS
    tracking_token: Callable[[], str | None] = lambda: None
    tracking_embedded: Callable[[], bool] = lambda: False
    tracking_identity: Callable[[], Credentials | None] = lambda: None
    # the JupyterHub user whose server this is: anyone else sees only the job runs shared with
    # them (air share job); None: whoever is let in is the owner
    owner: str | None = None
    # what the passes said (the last few), for people
    reconciled: list[str] = field(default_factory=list, init=False)
    watch_passes: int = field(default=0, init=False)
    _store: JobStore | None = field(default=None, init=False)
    _scheduler: Scheduler | None = field(default=None, init=False)
    _purger: asyncio.Task[None] | None = field(default=None, init=False)
    _watcher: asyncio.Task[None] | None = field(default=None, init=False)
    _scheduling: asyncio.Task[None] | None = field(default=None, init=False)

    def __post_init__(self, workers: int) -> None:
        if not self.base_url.endswith("/"):
            self.base_url += "/"
        # threads start on the first call, not here
        self._executor = ThreadPoolExecutor(workers, thread_name_prefix="air-workloads")

    @property
    def store(self) -> JobStore:
        if self._store is None:
            from ..workloads.store import JobStore

            self._store = JobStore.for_data_dir(self.data_dir)
        return self._store

    async def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on this service's executor."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._executor, lambda: fn(*args, **kwargs))

    def _connection(self) -> Connection:
        from ..workloads.connection import Connection

        return Connection(
            tracking_uri=self.tracking_uri() or "",
            server_url=self.base_url,  # a path: links work from pages of this server
            mlflow_ui=self.mlflow_ui(),
            source="server",
        )

    # who sees what -------------------------------------------------------------------------
    def sees_all(self, user: str) -> bool:
        """The owner (or anyone, outside JupyterHub) sees every job run of the data folder."""
        return self.owner is None or user == self.owner

    def shared(self, job_id: str, user: str) -> bool:
        """Whether the job run is shared with ``user`` (air share job)."""
        return user in self.store.job_shared_with(self._checked(job_id))

    # job runs (blocking: call them through `call`) -------------------------------------------
    def list(
        self,
        *,
        status: list[str] | None,
        experiment: str | None,
        limit: int,
        offset: int,
        shared_with: str | None = None,
    ) -> WorkloadsPage:
        """A page of job runs; ``shared_with``: only those shared with that user."""
        from ..api.workloads import WorkloadsPage
        from ..workloads.views import job_view

        store = self.store
        only: dict[str, Any] = {"shared_with": shared_with} if shared_with else {}
        jobs = store.list_jobs(
            status=status, experiment=experiment, limit=limit, offset=offset, **only
        )
        connection = self._connection()
        return WorkloadsPage(
            workloads=[job_view(job, connection) for job in jobs],
            total=store.count_jobs(status=status, experiment=experiment, **only),
            limit=limit,
            offset=offset,
        )

    def get(self, job_id: str) -> JobDetail:
        from ..workloads.views import job_detail

        return job_detail(self.store.get_job(self._checked(job_id)), self._connection())

    def cancel(self, job_id: str) -> tuple[Job, bool]:
        """Ask for the cancellation (``jobs.request_cancel``): the job run at once, and whether
        it was still active (the background watch follows it through)."""
        from ..workloads.jobs import request_cancel
        from ..workloads.views import job_view

        job = request_cancel(self.store, self._checked(job_id))
        return job_view(job, self._connection()), not job.finished

    # logs ----------------------------------------------------------------------------------
    def logs(self, job_id: str, **query: Any) -> LogPage:
        from ..api.logs import LogPage
        from ..workloads import query_logs

        page = query_logs(self.store, self._checked(job_id), **query)
        return LogPage.model_validate(page, from_attributes=True)

    def download(self, job_id: str, **filters: Any) -> tuple[str, Iterator[bytes]]:
        """The attachment's file name and the matching lines, chunk by chunk."""
        from ..workloads import download_logs, query_logs

        store = self.store
        job = store.get_job(self._checked(job_id))
        attempt = filters.get("attempt") or len(job.attempts) or 1
        node = filters.get("node") or 0
        # validated (and the job read) before the response starts
        query_logs(store, job.id, limit=1, job=job, **filters)
        chunks = download_logs(store, job.id, job=job, **{**filters, "attempt": attempt})
        return f"{job.id}-attempt{attempt}-node{node}.log", chunks

    def _checked(self, job_id: str) -> str:
        from ..workloads.paths import check_job_id

        check_job_id(job_id)
        return job_id

    # retention -----------------------------------------------------------------------------
    def purge(self) -> PurgeReport:
        from ..workloads import purge_logs

        return purge_logs(self.store, days=self.retention_days)

    def start_purging(self, first_after_s: float = 60.0, every_s: float = DAY_S) -> None:
        """Purge logs older than the retention period now and then, on the running loop."""
        if self._purger is None:
            self._purger = asyncio.get_running_loop().create_task(
                self._purge_loop(first_after_s, every_s), name="jupyter-air-log-retention"
            )

    async def _purge_loop(self, first_after_s: float, every_s: float) -> None:
        await asyncio.sleep(first_after_s)
        while True:
            try:
                report = await self.call(self.purge)
                log.info("jupyter-air: log retention: %s", report)
            except Exception:  # never let retention take the server down
                log.exception("jupyter-air: purging old workload logs failed")
            await asyncio.sleep(every_s)

    # the watch -----------------------------------------------------------------------------
    def start_watching(
        self, every_s: float | None = None, reconcile_every_s: float | None = None
    ) -> None:
        """On the running loop: end job runs whose supervisor is gone, finish cancellations
        left undone, and close the MLflow runs MLflow missed (every ``WATCH_EVERY_S`` and
        ``RECONCILE_EVERY_S`` unless told)."""
        if self._watcher is None:
            every = WATCH_EVERY_S if every_s is None else every_s
            reconcile = RECONCILE_EVERY_S if reconcile_every_s is None else reconcile_every_s
            self._watcher = asyncio.get_running_loop().create_task(
                self._watch_loop(every, reconcile), name="jupyter-air-workloads-watch"
            )

    async def _watch_loop(self, every_s: float, reconcile_every_s: float) -> None:
        from ..workloads.jobs import check_active

        next_reconcile = 0.0  # at start: what ended while no server was there
        while True:
            try:
                ended = await self.call(check_active, self.store)
                for job in ended:
                    log.warning("jupyter-air: job run %s %s: %s", job.id, job.status, job.reason)
                due = time.monotonic() >= next_reconcile or bool(ended)
                if due and self.mlflow_ready() and await self.call(self._open_runs):
                    next_reconcile = time.monotonic() + reconcile_every_s
                    await self.reconcile_once()
            except Exception:  # never let it take the server down
                log.exception("jupyter-air: watching the workloads failed")
            self.watch_passes += 1
            await asyncio.sleep(every_s)

    def _open_runs(self) -> bool:
        return bool(self.store.jobs_with_open_runs(limit=1))

    async def reconcile_once(self, timeout_s: float = 120.0) -> str:
        """One pass, in a process of its own (MLflow's client blocks and retries)."""
        process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "jupyter_air.workloads.reconcile",
            "--data-dir", str(self.data_dir), "--budget", f"{timeout_s / 2:g}",
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )  # fmt: skip
        try:
            output, _ = await asyncio.wait_for(process.communicate(), timeout_s)
        except asyncio.TimeoutError:
            from ..pids import kill_process

            kill_process(process.pid)  # our child, not yet reaped: the pid is still its own
            await process.wait()
            output = b"(stopped: it took too long)"
        text = output.decode(errors="replace").strip().splitlines()
        said = text[-1] if text else f"exit code {process.returncode}"
        self.reconciled = [*self.reconciled, said][-10:]
        log.info("jupyter-air: MLflow runs of ended job runs: %s", said)
        return said

    # schedules -----------------------------------------------------------------------------
    @property
    def scheduler(self) -> Scheduler:
        """Fires the data folder's schedules; their job runs use this server's tracking
        server."""
        if self._scheduler is None:
            from ..workloads.schedules import Scheduler

            self._scheduler = Scheduler(self.store, connection=self._submit_connection)
        return self._scheduler

    def schedules(self) -> SchedulesPage:
        from ..api.schedules import SchedulesPage
        from ..workloads.schedules import MAX_SCHEDULES, schedule_view

        now, connection = time.time(), self._connection()
        found = self.store.list_schedules(limit=MAX_SCHEDULES)
        return SchedulesPage(
            schedules=[schedule_view(self.store, s, now, connection) for s in found]
        )

    def schedule(self, text: str) -> ScheduleDetail:
        from ..api.schedules import ScheduleDetail
        from ..workloads.schedules import schedule_view

        view = schedule_view(
            self.store, self.store.get_schedule(text), time.time(), self._connection(),
            detail=True,
        )  # fmt: skip
        assert isinstance(view, ScheduleDetail)
        return view

    def pause_schedule(self, text: str, paused: bool) -> ScheduleView:
        from ..workloads.schedules import schedule_view, set_paused

        now = time.time()
        schedule = set_paused(self.store, self.store.get_schedule(text), paused, now)
        return schedule_view(self.store, schedule, now, self._connection())

    def delete_schedule(self, text: str) -> ScheduleView:
        """The schedule as it was; its job runs stay."""
        from ..workloads.schedules import schedule_view

        schedule = self.store.get_schedule(text)
        view = schedule_view(self.store, schedule, time.time(), self._connection())
        self.store.delete_schedule(schedule.id)
        return view

    def trigger_schedule(self, text: str) -> Job:
        from ..workloads.views import job_view

        job = self.scheduler.trigger(self.store.get_schedule(text))
        return job_view(job, self._connection())

    def _submit_connection(self) -> Connection:
        from ..workloads.connection import HOW_TO_FIX, NoTrackingServer

        connection = self._connection()
        if not connection.tracking_uri:
            raise NoTrackingServer(HOW_TO_FIX)
        connection.token = self.tracking_token()
        connection.embedded = self.tracking_embedded()
        connection.identity = self.tracking_identity()
        return connection

    def start_scheduling(self, every_s: float | None = None) -> None:
        """On the running loop: fire the schedules that are due (``workloads/schedules.py``),
        every ``TICK_EVERY_S`` unless told."""
        if self._scheduling is None:
            from ..workloads.schedules import TICK_EVERY_S

            every = TICK_EVERY_S if every_s is None else every_s
            self._scheduling = asyncio.get_running_loop().create_task(
                self._schedule_loop(every), name="jupyter-air-schedules"
            )

    async def _schedule_loop(self, every_s: float) -> None:
        while True:
            try:
                fired: list[Fired] = await self.call(self.scheduler.tick)
                for firing in fired:
                    log.info(
                        "jupyter-air: schedule %s, slot %s: %s %s",
                        firing.schedule, firing.slot, firing.outcome,
                        firing.job_id or firing.reason or "",
                    )  # fmt: skip
            except Exception:  # never let it take the server down
                log.exception("jupyter-air: firing the schedules failed")
            await asyncio.sleep(every_s)

    async def stop(self) -> None:
        for name in ("_purger", "_watcher", "_scheduling"):
            task = getattr(self, name)
            setattr(self, name, None)
            await cancel_and_wait(task)
        self._executor.shutdown(wait=False, cancel_futures=True)
