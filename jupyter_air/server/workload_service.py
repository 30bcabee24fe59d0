"""The workloads of this Jupyter server's data folder, as its REST API answers them: job runs
as JSON with links into this server's MLflow UI, log pages, downloads, cancellation, and the
daily purge of old logs.

Every method blocks (SQLite, files, process signals): the handlers call them on a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DAY_S = 86400.0


class WorkloadService:
    def __init__(
        self,
        data_dir: Path,
        *,
        base_url: str,
        mlflow_ui: Callable[[], str | None],
        tracking_uri: Callable[[], str | None],
        retention_days: float = 60.0,
    ) -> None:
        self.data_dir = data_dir
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self._mlflow_ui = mlflow_ui
        self._tracking_uri = tracking_uri
        self.retention_days = retention_days
        self._store: Any = None
        self._purger: asyncio.Task[None] | None = None

    @property
    def store(self) -> Any:
        if self._store is None:
            from ..workloads import JobStore

            self._store = JobStore.for_data_dir(self.data_dir)
        return self._store

    def _connection(self) -> Any:
        from ..workloads.connection import Connection

        return Connection(
            tracking_uri=self._tracking_uri() or "",
            server_url=self.base_url,  # a path: links work from pages of this server
            mlflow_ui=self._mlflow_ui(),
            source="server",
        )

    # job runs ------------------------------------------------------------------------------
    def list(
        self, *, status: list[str] | None, experiment: str | None, limit: int, offset: int
    ) -> dict[str, Any]:
        from ..workloads import job_json, list_jobs

        jobs = list_jobs(
            self.store, status=status, experiment=experiment, limit=limit, offset=offset
        )
        connection = self._connection()
        return {
            "workloads": [job_json(job, connection) for job in jobs],
            "total": self.store.count_jobs(status=status, experiment=experiment),
            "limit": limit,
            "offset": offset,
        }

    def get(self, job_id: str) -> dict[str, Any]:
        from ..workloads import get_job, job_json

        job = get_job(self.store, self._checked(job_id))
        return {**job_json(job, self._connection()), "spec_yaml": job.spec_yaml}

    def cancel(self, job_id: str) -> dict[str, Any]:
        from ..workloads import cancel, job_json

        job = cancel(self.store, self._checked(job_id))
        return job_json(job, self._connection())

    # logs ----------------------------------------------------------------------------------
    def logs(self, job_id: str, **query: Any) -> dict[str, Any]:
        from ..workloads import query_logs

        return query_logs(self.store, self._checked(job_id), **query).to_dict()

    def download(self, job_id: str, **filters: Any) -> tuple[str, Iterator[bytes]]:
        """The attachment's file name and the matching lines, chunk by chunk."""
        from ..workloads import download_logs, get_job

        job = get_job(self.store, self._checked(job_id))
        attempt = filters.get("attempt") or len(job.attempts) or 1
        node = filters.get("node") or 0
        # validated (and the job read) before the response starts
        self.logs(job.id, limit=1, **filters)
        chunks = download_logs(self.store, job.id, job=job, **{**filters, "attempt": attempt})
        return f"{job.id}-attempt{attempt}-node{node}.log", chunks

    def _checked(self, job_id: str) -> str:
        from ..workloads.paths import check_job_id

        check_job_id(job_id)
        return job_id

    # retention -----------------------------------------------------------------------------
    def purge(self) -> Any:
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
        loop = asyncio.get_running_loop()
        while True:
            try:
                report = await loop.run_in_executor(None, self.purge)
                log.info("jupyter-air: log retention: %s", report)
            except Exception:  # never let retention take the server down
                log.exception("jupyter-air: purging old workload logs failed")
            await asyncio.sleep(every_s)

    async def stop(self) -> None:
        purger, self._purger = self._purger, None
        if purger is not None:
            purger.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await purger
