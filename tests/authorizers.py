"""Authorizers for tests: a deployment that grants everything but one jupyter-air resource;
an identity provider for one server reached by two users."""

from __future__ import annotations

from jupyter_server.auth import User
from jupyter_server.auth.authorizer import Authorizer
from jupyter_server.auth.identity import IdentityProvider


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


class TwoUsers(IdentityProvider):
    """alice's server reached by bob too, as JupyterHub lets a user's server be shared: each
    request is alice's or bob's by its token (``Authorization: token alice-…`` / ``bob-…``)."""

    TOKENS = {"alice-token-4f1c": "alice", "bob-token-9e2d": "bob"}

    def get_user(self, handler):
        scheme, _, token = handler.request.headers.get("Authorization", "").partition(" ")
        name = self.TOKENS.get(token.strip()) if scheme.lower() == "token" else None
        if name is None:
            return None
        handler._token_authenticated = True  # an API client: no XSRF cookie, as with a token
        return User(username=name, name=name)
