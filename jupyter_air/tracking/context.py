"""Where this process runs, as the jupyter-air server described it in a kernel's environment: the
notebook, the kernel id, the user and where the browser reaches the MLflow UI.

Read at call time (never at import) from the environment the server gives kernels (see
docs/mlflow.md). Outside a kernel, or under a Jupyter server without jupyter-air, the fields are
None: nothing here fails for lack of them.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass

from ..config import BASE_URL, MLFLOW_UI, NOTEBOOK_PATH, ROOT_DIR, SERVER_URL
from .naming import current_user

ENV_MLFLOW_UI = MLFLOW_UI.name
ENV_BASE_URL = BASE_URL.name
ENV_SERVER_URL = SERVER_URL.name
ENV_ROOT_DIR = ROOT_DIR.name
ENV_SESSION_NAME = "JPY_SESSION_NAME"
# set in the kernel by the JupyterLab extension at load and on every rename (kernel-extension.ts)
ENV_NOTEBOOK_PATH = NOTEBOOK_PATH.name

_CONNECTION_FILE = re.compile(r"kernel-(?P<id>[^/\\]+)\.json$")


@dataclass(frozen=True)
class KernelContext:
    """What jupyter-air knows about the process it runs in; every field but ``user`` may be None."""

    notebook_path: str | None  # as JupyterLab shows it: relative to the server root, '/'-separated
    kernel_id: str | None
    user: str
    tracking_uri: str | None  # MLFLOW_TRACKING_URI as the server gave it (not set_tracking_uri)
    mlflow_ui: str | None  # config.MLFLOW_UI: a path on the Jupyter server, or a URL
    base_url: str | None  # set only by a Jupyter server running jupyter-air
    server_url: str | None  # the Jupyter server's public URL, when configured

    @property
    def under_jupyter_air(self) -> bool:
        """Whether a Jupyter server running jupyter-air started this process (or its parent)."""
        return self.base_url is not None


def kernel_context(environ: Mapping[str, str] | None = None) -> KernelContext:
    env = os.environ if environ is None else environ
    return KernelContext(
        notebook_path=notebook_path(env),
        kernel_id=kernel_id(),
        user=current_user(),
        tracking_uri=env.get("MLFLOW_TRACKING_URI") or None,
        mlflow_ui=env.get(ENV_MLFLOW_UI) or None,
        base_url=env.get(ENV_BASE_URL) or None,
        server_url=env.get(ENV_SERVER_URL) or None,
    )


def notebook_path(environ: Mapping[str, str] | None = None) -> str | None:
    """The notebook of this kernel, relative to the server's root folder.

    JupyterLab (with jupyter-air) tells the kernel its notebook's current path in
    ``config.NOTEBOOK_PATH``, also after a rename. Otherwise Jupyter's ``JPY_SESSION_NAME``,
    set when the kernel started: the notebook's absolute OS path (jupyter-server ≥ 2.11), or for
    consoles a name that is no file. Only notebooks count."""
    env = os.environ if environ is None else environ
    told = env.get(ENV_NOTEBOOK_PATH)
    if told and told.endswith(".ipynb"):
        return told.lstrip("/")  # an API path: '/'-separated, relative to the root
    session = env.get(ENV_SESSION_NAME)
    if not session:
        return None
    root = env.get(ENV_ROOT_DIR)
    path = session
    if os.path.isabs(session) and root:
        relative = os.path.relpath(session, root)
        if not relative.startswith(os.pardir + os.sep) and relative != os.pardir:
            path = relative
    if not (path.endswith(".ipynb") or os.path.isfile(session)):
        return None  # a console or another kind of session
    return path.replace(os.sep, "/").lstrip("/")


def kernel_id() -> str | None:
    """The id of the ipykernel this code runs in (from its connection file), else None."""
    if "ipykernel" not in sys.modules:
        return None
    try:
        from ipykernel.kernelapp import IPKernelApp

        if not IPKernelApp.initialized():
            return None
        connection_file = IPKernelApp.instance().connection_file
    except Exception:  # an embedded or unusual kernel: no id rather than an error
        return None
    match = _CONNECTION_FILE.search(os.path.basename(connection_file or ""))
    return match.group("id") if match else None
