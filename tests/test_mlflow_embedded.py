"""The extension starts its own MLflow server, serves its UI behind Jupyter's login, tells
kernels where it is, and stops it with the Jupyter server."""

from __future__ import annotations

import asyncio
import json
import os
import time
from pathlib import Path

import psutil
import pytest
from kernel_support import open_notebook
from tornado.httpclient import HTTPClientError

EXPERIMENTS_API = ("air", "mlflow", "ajax-api", "2.0", "mlflow", "experiments")  # via the proxy


@pytest.fixture
def air_config(tmp_path: Path) -> dict:
    return {
        "gpu_backend": "none",
        "mlflow_embedded": True,
        "data_dir": str(tmp_path / "air-data"),
    }


async def wait_ready(jp_fetch, timeout: float = 150.0) -> dict:
    deadline = time.monotonic() + timeout
    seen = set()
    while time.monotonic() < deadline:
        status = json.loads((await jp_fetch("air", "api", "mlflow")).body)
        seen.add(status["state"])
        if status["state"] == "ready":
            status["seen"] = seen
            return status
        await asyncio.sleep(0.25)
    raise AssertionError(f"MLflow not ready in {timeout} s: {status}")


async def test_embedded_server_lifecycle_proxy_and_kernel_env(
    jp_fetch, jp_serverapp, jp_base_url, tmp_path
):
    from kernel_support import kernel_environ

    service = jp_serverapp.web_app.settings["jupyter_air"]["mlflow"]
    assert service.mode == "embedded"
    # kernels get these through the server's kernel manager
    env = await kernel_environ(jp_serverapp)
    assert env["MLFLOW_TRACKING_URI"] == service.process.url
    assert env["MLFLOW_TRACKING_TOKEN"] == service.process.token
    assert env["JUPYTER_AIR_MLFLOW_UI"] == f"{jp_base_url}air/mlflow/"
    assert env["MLFLOW_SUPPRESS_PRINTING_URL_TO_STDOUT"] == "true"
    assert env["JUPYTER_AIR_BASE_URL"] == jp_base_url
    # and the server's own process keeps its environment: no token in it
    assert os.environ.get("MLFLOW_TRACKING_URI") != service.process.url
    assert os.environ.get("MLFLOW_TRACKING_TOKEN") != service.process.token

    first = json.loads((await jp_fetch("air", "api", "mlflow")).body)
    assert first["state"] in ("starting", "ready")
    if first["state"] == "starting":
        assert first["elapsed_s"] is not None
    status = await wait_ready(jp_fetch)
    assert status["mode"] == "embedded"
    assert status["ui"] == f"{jp_base_url}air/mlflow/"
    assert (tmp_path / "air-data" / "mlflow" / "mlflow.db").exists()

    # the UI and its API through the proxy, with Jupyter's token
    page = await jp_fetch("air", "mlflow/", headers={"Accept": "text/html"})
    assert page.code == 200 and b"<html" in page.body.lower()
    created = await jp_fetch(
        *EXPERIMENTS_API,
        "create",
        method="POST",
        body=json.dumps({"name": "through-the-proxy"}),
        headers={"Origin": "http://localhost:8888", "Content-Type": "application/json"},
    )
    assert json.loads(created.body)["experiment_id"]

    # without a token: no MLflow content
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch(
            *EXPERIMENTS_API,
            "search",
            headers={"Authorization": ""},
            follow_redirects=False,
        )
    assert error.value.code in (302, 403)
    with pytest.raises(HTTPClientError) as error:
        await jp_fetch(
            *EXPERIMENTS_API,
            "create",
            method="POST",
            body="{}",
            headers={"Authorization": ""},
        )
    assert error.value.code == 403

    # a kernel started by this server gets the tracking URI and the UI path
    await jp_fetch("api", "contents", "nb", method="PUT", body=json.dumps({"type": "directory"}))
    session = await open_notebook(jp_fetch, "nb/a.ipynb")
    kernel = jp_serverapp.kernel_manager.get_kernel(session["kernel"]["id"])
    environ = psutil.Process(kernel.provisioner.pid).environ()
    assert environ["MLFLOW_TRACKING_URI"] == service.process.url
    assert environ["MLFLOW_TRACKING_TOKEN"] == service.process.token  # it answers only with it
    assert environ["JUPYTER_AIR_MLFLOW_UI"] == f"{jp_base_url}air/mlflow/"
    notebook = os.path.relpath(environ["JPY_SESSION_NAME"], environ["JUPYTER_AIR_ROOT_DIR"])
    assert notebook == "nb/a.ipynb"
    await jp_fetch("api", "sessions", session["id"], method="DELETE")

    # stopping the Jupyter server stops MLflow's whole process group
    process_pid = service.process.pid
    group = [p for p in psutil.process_iter() if _pgid(p.pid) == process_pid]
    assert group
    (air,) = jp_serverapp.extension_manager.extension_apps["jupyter_air"]
    await air.stop_extension()
    _gone, alive = psutil.wait_procs(group, timeout=15)
    assert not alive, [p.pid for p in alive]
    assert "MLFLOW_TRACKING_URI" not in os.environ  # the server's environment is restored


def _pgid(pid: int) -> int | None:
    try:
        return os.getpgid(pid)
    except OSError:
        return None
