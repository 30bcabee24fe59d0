"""Sharing an experiment on a team MLflow server that runs MLflow's authentication
(``mlflow server --app-name basic-auth``): give another user READ, EDIT or MANAGE on it.

Through the auth app's REST API, as this user (``identity.py``; the one sharing needs MANAGE on
the experiment, which its creator has): MLflow 3.17's per-user grant
(``POST /api/3.0/mlflow/users/permissions/grant``; a grant that exists is revoked and granted
again, as the API has no update) or, on an older server, the experiment permission API
(``/api/2.0/mlflow/experiments/permissions/create``, ``update`` when it exists). An unknown user
or experiment, a server without authentication and a refused password are each said in one
sentence (``ShareError``). Blocking: run it off an event loop.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .identity import Credentials, refused_message, user_credentials
from .links import redacted
from .rest import Answer, RestClient, RestError

PERMISSIONS = ("READ", "EDIT", "MANAGE")
GRANT = "api/3.0/mlflow/users/permissions/grant"
REVOKE = "api/3.0/mlflow/users/permissions/revoke"
LEGACY_CREATE = "api/2.0/mlflow/experiments/permissions/create"
LEGACY_UPDATE = "api/2.0/mlflow/experiments/permissions/update"
CURRENT_USER = "api/2.0/mlflow/users/current"
TIMEOUT_S = 30.0


class ShareError(RuntimeError):
    """The experiment could not be shared; the message says why and what to do."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status  # what an HTTP endpoint answers for it


@dataclass(frozen=True)
class Shared:
    experiment_id: str
    experiment_name: str
    username: str
    permission: str
    replaced: bool  # the user had another permission on it before


def share_experiment(
    tracking_uri: str,
    experiment: str,
    username: str,
    permission: str,
    credentials: Credentials | None = None,
) -> Shared:
    """Give ``username`` ``permission`` on ``experiment`` (a name or an id)."""
    permission = permission.upper()
    if permission not in PERMISSIONS:
        raise ShareError(f"Permission {permission!r}: use one of {', '.join(PERMISSIONS)}.")
    if not tracking_uri.startswith(("http://", "https://")):
        raise ShareError(
            f"The tracking URI {redacted(tracking_uri)} is no MLflow server: sharing needs a "
            "team server run with `mlflow server --app-name basic-auth`."
        )
    found = credentials if credentials is not None else user_credentials()
    if found is None:
        raise ShareError(
            "No MLflow credentials: set MLFLOW_TRACKING_USERNAME and MLFLOW_TRACKING_PASSWORD "
            "(or write them in ~/.mlflow/credentials, readable by you alone).",
            401,
        )
    api = _Api(tracking_uri, found)
    me = api.call("GET", CURRENT_USER)
    if me.status == 404:
        raise ShareError(
            f"MLflow at {api.shown} runs without authentication: every user may read every "
            "experiment there, and permissions cannot be set. Its administrator starts it with "
            "`mlflow server --app-name basic-auth` (docs/teams.md).",
            409,
        )
    experiment_id, name = _experiment(api, experiment)
    body = {
        "username": username,
        "resource_type": "experiment",
        "resource_id": experiment_id,
        "permission": permission,
    }
    answer = api.call("POST", GRANT, body)
    replaced = False
    if answer.status == 404 and not answer.code:  # an older server: no per-user grants
        legacy = {"experiment_id": experiment_id, "username": username, "permission": permission}
        answer = api.call("POST", LEGACY_CREATE, legacy)
        if answer.code == "RESOURCE_ALREADY_EXISTS":
            replaced = True
            answer = api.call("PATCH", LEGACY_UPDATE, legacy)
    elif answer.code == "RESOURCE_ALREADY_EXISTS":
        replaced = True
        revoke = {k: v for k, v in body.items() if k != "permission"}
        api.ok(api.call("POST", REVOKE, revoke), name, username)
        answer = api.call("POST", GRANT, body)
    api.ok(answer, name, username)
    return Shared(experiment_id, name, username, permission, replaced)


def _experiment(api: _Api, text: str) -> tuple[str, str]:
    """(id, name) of the experiment named or numbered ``text``."""
    if text.isdigit():
        answer = api.call("GET", "api/2.0/mlflow/experiments/get", {"experiment_id": text})
        if answer.status == 200:
            found = answer.body["experiment"]
            return str(found["experiment_id"]), str(found["name"])
    answer = api.call("GET", "api/2.0/mlflow/experiments/get-by-name", {"experiment_name": text})
    if answer.status == 200:
        found = answer.body["experiment"]
        return str(found["experiment_id"]), str(found["name"])
    if answer.status == 401:
        raise ShareError(refused_message(api.shown, api.credentials.username), 401)
    if answer.status in (403, 404):
        raise ShareError(
            f"No experiment {text!r} that user {api.credentials.username} can see on MLflow at "
            f"{api.shown} (give its name or its id).",
            404,
        )
    raise ShareError(f"MLflow at {api.shown} did not find experiment {text!r}: {answer.message}")


class _Api:
    def __init__(self, tracking_uri: str, credentials: Credentials) -> None:
        self.rest = RestClient(
            tracking_uri, credentials=credentials, retries=0, timeout_s=TIMEOUT_S
        )
        self.shown = self.rest.shown
        self.credentials = credentials

    def call(self, method: str, path: str, payload: dict[str, Any] | None = None) -> Answer:
        try:
            answer = self.rest.request(method, path, payload)
        except RestError as error:
            raise ShareError(error.message, 502) from None
        if answer.status == 401:
            raise ShareError(refused_message(self.shown, self.credentials.username), 401)
        return answer

    def ok(self, answer: Answer, experiment: str, username: str) -> None:
        if answer.status == 200:
            return
        if answer.code == "RESOURCE_DOES_NOT_EXIST":
            raise ShareError(f"MLflow at {self.shown} has no user {username!r}.", 404)
        if answer.status == 403:
            raise ShareError(
                f"User {self.credentials.username} may not share experiment {experiment!r} on "
                f"MLflow at {self.shown}: that needs MANAGE on it (its creator has it) or an "
                "administrator.",
                403,
            )
        raise ShareError(f"MLflow at {self.shown} did not share {experiment!r}: {answer.message}")
