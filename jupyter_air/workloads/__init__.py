"""Workloads: a YAML spec submitted as a job run, run detached with retries by a supervisor, one
MLflow run per attempt, per-node logs with a query API, and retention.

What the CLI, the magics and the Jupyter server use is below; each name is imported on first use
(importing this package imports no mlflow, pydantic or torch, and starts nothing).

- spec: ``load_spec``, ``load_spec_file``, ``WorkloadSpec``, ``SpecError``
- jobs: ``open_store``, ``submit``, ``cancel``, ``get_job``, ``list_jobs``, ``refresh``
- store: ``JobStore``, ``JobRun``, ``Attempt``, ``JobNotFound``
- logs (from ``jupyter_air.logs``): ``query_logs``, ``download_logs``, ``download_to``,
  ``LogPage``, ``LogLine``, ``InvalidQuery``, ``follow``
- retention: ``purge_logs``
- JSON: ``job_json``
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from ..logs.filters import InvalidQuery
    from ..logs.follow import follow
    from ..logs.query import LogPage, download_logs, download_to, query_logs
    from ..logs.scan import LogLine
    from .jobs import cancel, get_job, list_jobs, open_store, refresh, submit
    from .retention import purge_logs
    from .spec import SpecError, WorkloadSpec
    from .spec_loading import load_spec, load_spec_file
    from .store import Attempt, JobNotFound, JobRun, JobStore
    from .views import job_json

_EXPORTS = {
    "follow": ".logs.follow",
    "cancel": "jobs",
    "get_job": "jobs",
    "list_jobs": "jobs",
    "open_store": "jobs",
    "refresh": "jobs",
    "submit": "jobs",
    "InvalidQuery": ".logs.filters",
    "LogLine": ".logs.scan",
    "LogPage": ".logs.query",
    "download_logs": ".logs.query",
    "download_to": ".logs.query",
    "query_logs": ".logs.query",
    "purge_logs": "retention",
    "SpecError": "spec",
    "WorkloadSpec": "spec",
    "load_spec": "spec_loading",
    "load_spec_file": "spec_loading",
    "Attempt": "store",
    "JobNotFound": "store",
    "JobRun": "store",
    "JobStore": "store",
    "job_json": "views",
}

__all__ = [
    "Attempt",
    "InvalidQuery",
    "JobNotFound",
    "JobRun",
    "JobStore",
    "LogLine",
    "LogPage",
    "SpecError",
    "WorkloadSpec",
    "cancel",
    "download_logs",
    "download_to",
    "follow",
    "get_job",
    "job_json",
    "list_jobs",
    "load_spec",
    "load_spec_file",
    "open_store",
    "purge_logs",
    "query_logs",
    "refresh",
    "submit",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
