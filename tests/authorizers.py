"""Authorizers for tests: a deployment that grants everything but one jupyter-air resource."""

from __future__ import annotations

from jupyter_server.auth.authorizer import Authorizer


class DenyAirGpu(Authorizer):
    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != "air-gpu"


class DenyAirMlflow(Authorizer):
    """Grants everything except the MLflow UI and the runs API."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource not in ("air-mlflow", "air-runs")


class DenyAirLogs(Authorizer):
    """Grants workloads and experiments but not their logs."""

    def is_authorized(self, handler, user, action, resource) -> bool:
        return resource != "air-logs"


class DenyLogsOfOneWorkload(Authorizer):
    """Decides per job run: the logs of the workload whose id is in DENIED_WORKLOAD are refused."""

    denied: str | None = None

    def is_authorized(self, handler, user, action, resource) -> bool:
        if resource == "air-logs":
            return getattr(handler, "workload_id", None) != DenyLogsOfOneWorkload.denied
        return True
