"""The script of ours on MLflow's pages: the Logs tab of a job-backed run's page.

The MLflow proxy adds one ``<script src="<base_url>air/static/mlflow-page.js" defer>`` to each
MLflow HTML page it serves, after the XSRF script (mlflow_xsrf.py); artifacts never get it. The
script (src/mlflow-page/, bundled by ``jlpm build`` into ``jupyter_air/static/mlflow-page.js``)
is served here, behind Jupyter's login and the authorizer's ``air-mlflow`` resource like the UI
it runs in. The file is read off the event loop.
"""

from __future__ import annotations

import asyncio
import html
from pathlib import Path

import tornado.web
from jupyter_server.auth.decorator import authorized
from jupyter_server.base.handlers import JupyterHandler
from jupyter_server.extension.handler import ExtensionHandlerMixin

from ..api import endpoints

SCRIPT_FILE = Path(__file__).resolve().parent.parent / "static" / "mlflow-page.js"
SCRIPT_PATH = "air/static/mlflow-page.js"  # under the server's base URL


def script_tag(base_url: str) -> str:
    """The tag the proxy adds to MLflow's pages (after the XSRF script)."""
    base = base_url if base_url.endswith("/") else base_url + "/"
    src = html.escape(base + SCRIPT_PATH, quote=True)
    return (
        f'<script data-jupyter-air="mlflow-page" src="{src}" '
        f'data-base-url="{html.escape(base, quote=True)}" defer></script>'
    )


class MlflowPageScriptHandler(ExtensionHandlerMixin, JupyterHandler):
    """``GET <base_url>air/static/mlflow-page.js``: the Logs tab's script."""

    auth_resource = endpoints.MLFLOW

    @tornado.web.authenticated
    @authorized
    async def get(self) -> None:
        try:
            body = await asyncio.get_running_loop().run_in_executor(None, SCRIPT_FILE.read_bytes)
        except FileNotFoundError:
            raise tornado.web.HTTPError(
                404, "The MLflow page script is not built: run `jlpm build` (or `make setup`)."
            ) from None
        self.set_header("Content-Type", "text/javascript; charset=utf-8")
        self.set_header("X-Content-Type-Options", "nosniff")
        # revalidated on each page load (ETag): a rebuilt script is used at once
        self.set_header("Cache-Control", "no-cache")
        self.finish(body)
