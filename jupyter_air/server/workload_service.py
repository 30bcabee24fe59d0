"""The workloads of this Jupyter server's data folder, as its REST API answers them: job runs
as JSON with links into this server's MLflow UI, log pages, downloads, cancellation; and two
background tasks: the daily purge of old logs, and the reconciliation of MLflow runs that ended
job runs left open while MLflow did not answer (at start, then every 30 s while there are
some; in a process of its own, ``python -m jupyter_air.workloads.reconcile``).

Every method blocks (SQLite, files, process signals): the handlers call them on a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

log = logging.getLogger(__name__)

DAY_S = 86400.0
RECONCILE_EVERY_S = 30.0


class WorkloadService:
    def __init__(
        self,
        data_dir: Path,
        *,
        base_url: str,
        mlflow_ui: Callable[[], str | None],
        tracking_uri: Callable[[], str | None],
        retention_days: float = 60.0,
        mlflow_ready: Callable[[], bool] = lambda: True,
    ) -> None:
        self.data_dir = data_dir
        self.base_url = base_url if base_url.endswith("/") else base_url + "/"
        self._mlflow_ui = mlflow_ui
        self._tracking_uri = tracking_uri
        self.retention_days = retention_days
        self._mlflow_ready = mlflow_ready
        self._store: Any = None
        self._purger: asyncio.Task[None] | None = None
        self._reconciler: asyncio.Task[None] | None = None
        self.reconciled: list[str] = []  # what the passes said (the last few), for people

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

    # reconciliation -------------------------------------------------------------------------
    def start_reconciling(self, every_s: float = RECONCILE_EVERY_S) -> None:
        """Close MLflow runs of ended job runs that MLflow missed, on the running loop."""
        if self._reconciler is None:
            self._reconciler = asyncio.get_running_loop().create_task(
                self._reconcile_loop(every_s), name="jupyter-air-reconcile"
            )

    async def _reconcile_loop(self, every_s: float) -> None:
        loop = asyncio.get_running_loop()
        while True:
            try:
                if self._mlflow_ready() and await loop.run_in_executor(None, self._open_runs):
                    await self.reconcile_once()
            except Exception:  # never let it take the server down
                log.exception("jupyter-air: reconciling MLflow runs failed")
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
            process.kill()
            await process.wait()
            output = b"(stopped: it took too long)"
        text = output.decode(errors="replace").strip().splitlines()
        said = text[-1] if text else f"exit code {process.returncode}"
        self.reconciled = [*self.reconciled, said][-10:]
        log.info("jupyter-air: MLflow runs of ended job runs: %s", said)
        return said

    async def stop(self) -> None:
        for name in ("_purger", "_reconciler"):
            task = getattr(self, name)
            setattr(self, name, None)
            if task is not None:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
