"""Wait for a local tracking server that is still starting, saying so, instead of hanging silently.

The embedded MLflow server takes 15 to 55 s to start. Meanwhile MLflow's client retries HTTP
calls with a growing backoff for minutes and prints nothing. Before the first call of a run, we
check ``<tracking URI>/health`` and, while it does not answer, report "MLflow is starting (N s)"
about once a second until it does (or a timeout passes). Only loopback http servers are waited
for: they are the embedded one (or one the user runs beside Jupyter); a remote server that does
not answer is MLflow's to report. A server that answers but refuses our credentials (401, 403) is
not starting: the wait stops at once and says so (``TrackingServerRefused``).

On a team server that runs MLflow's authentication, the user's name and password
(``identity.py``) are checked once per server before the first call (local or remote): a wrong
password is said in one sentence ("MLflow at URL refused user NAME: wrong password or unknown
user"), not as MLflow's stack trace from deep inside a run.
"""

from __future__ import annotations

import os
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable

from ..config import DATA_DIR
from .identity import Credentials, user_credentials
from .identity import refused_message as user_refused_message
from .links import is_loopback_http, redacted

DEFAULT_TIMEOUT_S = 180.0
_HEALTHY_CACHE_S = 30.0

_last_healthy: dict[str, float] = {}
_users_accepted: set[tuple[str, str, int]] = set()  # (server, user, hash of the password)
CURRENT_USER = "api/2.0/mlflow/users/current"  # MLflow's auth app: who these credentials are
_lock = threading.Lock()

# report(elapsed_s, done): called when waiting starts, about every second, and once when done
Reporter = Callable[[float, bool], None]


REFUSED = (401, 403)  # answers, but not to these credentials


class TrackingServerNotReady(RuntimeError):
    """The local tracking server did not answer in time."""


class TrackingServerRefused(TrackingServerNotReady):
    """The tracking server answers, but refuses our credentials (HTTP 401 or 403)."""


def health(url: str, timeout: float = 2.0, token: str | None = None) -> int | None:
    """The HTTP status of ``<url>/health`` asked with ``token`` as MLflow's client would send it
    (default: ``MLFLOW_TRACKING_TOKEN``; jupyter-air's embedded server answers 401 without it),
    or None when nothing answers."""
    token = token if token is not None else os.environ.get("MLFLOW_TRACKING_TOKEN")
    return _status(f"{url.rstrip('/')}/health", f"Bearer {token}" if token else None, timeout)


def _status(url: str, authorization: str | None, timeout: float) -> int | None:
    """The HTTP status of ``GET url``, or None when nothing answers."""
    try:
        request = urllib.request.Request(url)
        if authorization:
            request.add_header("Authorization", authorization)
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, OSError, ValueError):
        return None


def healthy(url: str, timeout: float = 2.0, token: str | None = None) -> bool:
    """Whether the tracking server at ``url`` answers ``/health`` with 200 (``health``)."""
    return health(url, timeout, token) == 200


def refused_message(url: str, status: int, credentials: str | None = None) -> str:
    """What to tell a person whose credentials ``url`` refused (never the token itself)."""
    sent = credentials or (
        "MLFLOW_TRACKING_TOKEN" if os.environ.get("MLFLOW_TRACKING_TOKEN") else "no token"
    )
    return (
        f"MLflow at {redacted(url)} refuses our credentials: HTTP {status} (we sent {sent}). "
        "Set MLFLOW_TRACKING_TOKEN to this server's token, or use the data folder of the "
        f"Jupyter server that runs it ({DATA_DIR}, or its c.JupyterAir.data_dir): "
        "`air` then reads the token there."
    )


def wait_for_tracking_server(
    tracking_uri: str | None,
    *,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    report: Reporter | None = None,
    poll_s: float = 0.5,
    token: str | None = None,
    credentials: str | None = None,
) -> float:
    """Return once ``tracking_uri`` answers (at once for remote or non-http URIs): the seconds
    waited. Raises TrackingServerRefused at once when it answers 401 or 403 (``credentials``
    says what was sent, for the message), TrackingServerNotReady after ``timeout_s``."""
    if not tracking_uri or not tracking_uri.startswith(("http://", "https://")):
        return 0.0
    # a bearer token is jupyter-air's own server's (or the user's) way in: no user to check
    bearer = token if token is not None else os.environ.get("MLFLOW_TRACKING_TOKEN")
    if not is_loopback_http(tracking_uri):
        if not bearer:
            check_user(tracking_uri)
        return 0.0
    now = time.monotonic()
    with _lock:
        if now - _last_healthy.get(tracking_uri, -_HEALTHY_CACHE_S) < _HEALTHY_CACHE_S:
            return 0.0
    start = now
    reported = -1
    while (status := health(tracking_uri, timeout=2.0, token=token)) != 200:
        if status in REFUSED:
            raise TrackingServerRefused(refused_message(tracking_uri, status, credentials))
        elapsed = time.monotonic() - start
        if elapsed > timeout_s:
            raise TrackingServerNotReady(
                f"MLflow at {redacted(tracking_uri)} did not answer within {timeout_s:.0f} s. "
                "JupyterLab's Experiment panel shows the server's state (and its log file); "
                "once it says ready, run this again."
            )
        if report is not None and int(elapsed) != reported:
            reported = int(elapsed)
            report(elapsed, False)
        time.sleep(poll_s)
    waited = time.monotonic() - start
    if not bearer:
        check_user(tracking_uri)
    with _lock:
        _last_healthy[tracking_uri] = time.monotonic()
    if report is not None and reported >= 0:
        report(waited, True)
    return waited


def forget(tracking_uri: str | None = None) -> None:
    """Drop the memory of servers seen healthy (all, or one): the next wait checks again."""
    with _lock:
        if tracking_uri is None:
            _last_healthy.clear()
            _users_accepted.clear()
        else:
            _last_healthy.pop(tracking_uri, None)
            _users_accepted.difference_update(
                {key for key in _users_accepted if key[0] == tracking_uri}
            )


def check_user(
    tracking_uri: str, credentials: Credentials | None = None, timeout: float = 10.0
) -> None:
    """Raise TrackingServerRefused when the server refuses this user's name and password
    (``credentials``, default: the environment's, then the credentials file's). Asked once per
    server and user: an accepted pair is remembered. Nothing is asked without credentials, nor
    of a server that does not answer (MLflow's client says that at its first call)."""
    found = credentials if credentials is not None else user_credentials()
    if found is None or not tracking_uri.startswith(("http://", "https://")):
        return
    key = (tracking_uri.rstrip("/"), found.username, hash(found.password))
    with _lock:
        if key in _users_accepted:
            return
    status = user_status(tracking_uri, found, timeout)
    if status == 401:
        raise TrackingServerRefused(user_refused_message(redacted(tracking_uri), found.username))
    if status is not None and status < 500:
        with _lock:
            _users_accepted.add(key)


def user_status(tracking_uri: str, credentials: Credentials, timeout: float = 10.0) -> int | None:
    """The HTTP status MLflow's auth app answers for ``credentials`` (200: known, 401: wrong
    password or unknown user, 404: no auth app), or None when nothing answers."""
    url = f"{tracking_uri.rstrip('/')}/{CURRENT_USER}"
    return _status(url, credentials.authorization(), timeout)


def starting_message(elapsed_s: float, done: bool, *, embedded: bool = True) -> str:
    if done:
        return f"MLflow is ready (waited {elapsed_s:.0f} s)."
    what = "MLflow is starting" if embedded else "Waiting for the MLflow server"
    return f"{what} ({elapsed_s:.0f} s)…"
