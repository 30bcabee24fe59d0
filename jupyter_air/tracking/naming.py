"""Names shared by the kernel side and the server side: the default experiment of a notebook and
the tags jupyter-air puts on runs."""

from __future__ import annotations

import getpass
import os

TAG_NOTEBOOK = "jupyter_air.notebook"
TAG_KERNEL_ID = "jupyter_air.kernel_id"
TAG_LAUNCHER = "jupyter_air.launcher"
TAG_JOB = "jupyter_air.workload.job_id"  # runs of workload attempts: the job run
TAG_ATTEMPT = "jupyter_air.workload.attempt"
TAG_ATTEMPTS = "jupyter_air.workload.max_attempts"  # how many attempts the job run may make
TAG_REASON = "jupyter_air.workload.reason"  # how the attempt ended, in words
TAG_RESTARTS = "jupyter_air.restarts"  # torch elastic's restarts of the ranks (max_restarts)


def hub_user() -> str | None:
    """The JupyterHub user of this process (``JUPYTERHUB_USER``), if any."""
    return os.environ.get("JUPYTERHUB_USER") or None


def server_owner() -> str | None:
    """The user a JupyterHub single-user server belongs to (it has the Hub's API token, and
    requests come with the Hub's user names): others may reach it (JupyterHub's sharing), so it
    shows them only what was shared with them. None elsewhere (``JUPYTERHUB_USER`` alone, set by
    hand or an image, does not make a server someone's): whoever it lets in is its owner."""
    return hub_user() if os.environ.get("JUPYTERHUB_API_TOKEN") else None


def current_user() -> str:
    """The person using this Jupyter server: their user on a team MLflow server with
    authentication (``MLFLOW_TRACKING_USERNAME``, what the server knows them as), else the
    JupyterHub user when there is one, else the system's."""
    user = os.environ.get("MLFLOW_TRACKING_USERNAME") or hub_user()
    if user:
        return user
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (some containers)
        return "user"


def default_experiment_name(notebook_path: str | None, user: str | None = None) -> str:
    """``/Users/{user}/{notebook}``: the notebook's path from the server root, without the
    ``.ipynb`` suffix (so two notebooks of the same name in different folders stay apart)."""
    user = user or current_user()
    path = (notebook_path or "").strip().strip("/")
    if path.endswith(".ipynb"):
        path = path[: -len(".ipynb")]
    return f"/Users/{user}/{path or 'notebook'}"
