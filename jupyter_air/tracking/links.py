"""Links to runs in the MLflow UI, and where that UI is for a given tracking URI.

The UI's routes are hash routes of its single-page app, so a link is the UI's base followed by
``#/experiments/...``. The base comes from ``config.MLFLOW_UI`` (set by the server for the
tracking server it told the kernel about); a kernel that switched to another tracking server with
``mlflow.set_tracking_uri`` gets links to that server when it is a remote http(s) one, else none,
with the reason.
"""

from __future__ import annotations

import urllib.parse

from ..config import MLFLOW_UI
from .context import KernelContext

_LOOPBACK = {"127.0.0.1", "localhost", "::1"}


# MLflow 3's UI has a GenAI and a model-training view; runs of training belong in the latter
TRAINING_VIEW = "?workflowType=machine_learning"


def run_links(experiment_id: str, run_id: str) -> dict[str, str]:
    """Links to a run, relative to the MLflow UI (hash routes of its single-page app), opening
    its model-training view."""
    run = f"#/experiments/{experiment_id}/runs/{run_id}"
    return {
        "run": run + TRAINING_VIEW,
        "system_metrics": f"{run}/system-metrics{TRAINING_VIEW}",
        "experiment": f"#/experiments/{experiment_id}/runs{TRAINING_VIEW}",
    }


def mlflow_ui(tracking_uri: str | None, context: KernelContext) -> tuple[str | None, str | None]:
    """``(ui, None)``: where the browser reaches the UI of ``tracking_uri`` (a path on the Jupyter
    server or a URL, ending with '/'); or ``(None, why)`` when there is no such place."""
    uri = tracking_uri or context.tracking_uri
    same_server = context.tracking_uri is None or _same_uri(uri, context.tracking_uri)
    if context.mlflow_ui and same_server:
        return _with_slash(context.mlflow_ui), None
    scheme, host = _scheme_host(uri)
    if not same_server:
        if scheme in ("http", "https") and host not in _LOOPBACK:
            return _with_slash(uri or ""), None
        return None, (
            f"this kernel's tracking URI ({redacted(uri)}) is not the one jupyter-air serves "
            f"a UI for ({redacted(context.tracking_uri)})"
        )
    if not context.under_jupyter_air:
        return None, (
            "this kernel was not started by a Jupyter server running jupyter-air "
            f"({MLFLOW_UI} is not set)"
        )
    if not uri:
        return None, "MLflow is turned off on this Jupyter server (no tracking URI)"
    return None, f"the tracking store ({redacted(uri)}) has no web UI"


def absolute_ui(ui: str, server_url: str | None) -> str:
    """The UI base as a link that works outside the page too (exported notebooks): a path on the
    Jupyter server is joined to its public URL when one is configured."""
    if server_url and ui.startswith("/"):
        return urllib.parse.urljoin(_with_slash(server_url), ui)
    return ui


def redacted(uri: str | None) -> str | None:
    """A URI fit to show: without a password."""
    if not uri:
        return uri
    parsed = urllib.parse.urlparse(uri)
    if parsed.password:
        netloc = f"{parsed.username}:***@{parsed.hostname}"
        if parsed.port:
            netloc += f":{parsed.port}"
        return urllib.parse.urlunparse(parsed._replace(netloc=netloc))
    return uri


def is_loopback_http(uri: str | None) -> bool:
    scheme, host = _scheme_host(uri)
    return scheme in ("http", "https") and host in _LOOPBACK


def _scheme_host(uri: str | None) -> tuple[str, str]:
    if not uri:
        return "", ""
    parsed = urllib.parse.urlparse(uri)
    return parsed.scheme.lower(), (parsed.hostname or "").lower()


def _same_uri(a: str | None, b: str | None) -> bool:
    return (a or "").rstrip("/") == (b or "").rstrip("/")


def _with_slash(url: str) -> str:
    return url if url.endswith("/") else url + "/"
