"""A team MLflow server for the tests: a real ``mlflow server --app-name basic-auth`` on
127.0.0.1 with users alice and bob (the ``team_server`` fixture, registered by conftest.py)."""

from __future__ import annotations

import base64
import json
import os
import secrets
import socket
import subprocess
import sys
import time
from types import SimpleNamespace

import pytest

from jupyter_air.pids import stop_group


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def call(url: str, path: str, user: tuple[str, str], payload: dict | None = None) -> int:
    """POST ``payload`` (or GET) as ``user``; the HTTP status."""
    import urllib.error
    import urllib.request

    data = json.dumps(payload).encode() if payload is not None else None
    request = urllib.request.Request(url + "/" + path, data=data)
    pair = base64.b64encode(f"{user[0]}:{user[1]}".encode()).decode()
    request.add_header("Authorization", f"Basic {pair}")
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return int(response.status)
    except urllib.error.HTTPError as error:
        return int(error.code)
    except (urllib.error.URLError, OSError):
        return 0  # nothing answers (yet)


@pytest.fixture(scope="module")
def team_server(tmp_path_factory: pytest.TempPathFactory):
    """A real ``mlflow server --app-name basic-auth`` on 127.0.0.1 (a free port, a temporary
    folder), no access by default, its admin's password not MLflow's documented example but a
    random one (the auth config file's ``admin_password``); users alice and bob. Stopped by its
    process group at the end."""
    folder = tmp_path_factory.mktemp("team-mlflow")
    admin = ("admin", secrets.token_urlsafe(16))
    config = folder / "basic_auth.ini"
    config.write_text(
        "[mlflow]\n"
        "default_permission = NO_PERMISSIONS\n"
        f"database_uri = sqlite:///{folder / 'auth.db'}\n"
        f"admin_username = {admin[0]}\n"
        f"admin_password = {admin[1]}\n"
        "authorization_function = mlflow.server.auth:authenticate_request_basic_auth\n"
    )
    config.chmod(0o600)
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("MLFLOW_TRACKING_", "MLFLOW_AUTH_"))
    }
    env["MLFLOW_AUTH_CONFIG_PATH"] = str(config)
    env["MLFLOW_FLASK_SERVER_SECRET_KEY"] = secrets.token_urlsafe(32)  # the auth app's CSRF key
    env["MLFLOW_SERVER_ENABLE_JOB_EXECUTION"] = "false"  # 8 processes of MLflow's job runner
    log = folder / "server.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mlflow",
                "server",
                "--app-name",
                "basic-auth",
                "--backend-store-uri",
                f"sqlite:///{folder / 'mlflow.db'}",
                "--artifacts-destination",
                str(folder / "artifacts"),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--workers",
                "1",
            ],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 240
        while call(url, "api/2.0/mlflow/users/current", admin) != 200:
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(
                    "the team MLflow server (basic-auth) did not answer as its admin within "
                    f"240 s:\n{log.read_text()[-3000:]}"
                )
            time.sleep(0.5)
        users = {}
        for name in ("alice", "bob"):
            users[name] = (name, secrets.token_urlsafe(12))
            status = call(
                url,
                "api/2.0/mlflow/users/create",
                admin,
                {"username": name, "password": users[name][1]},
            )
            assert status == 200, f"creating user {name}: HTTP {status}"
        yield SimpleNamespace(url=url, admin=admin, users=users, folder=folder, log=log)
    finally:
        stop_group(process.pid, grace_s=10.0, process=process)
