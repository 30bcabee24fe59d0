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
