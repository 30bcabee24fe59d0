"""What the MLflow UI proxy forwards: Jupyter's credentials (the browser's token, its login and
XSRF cookies) stay with Jupyter; the tracking server gets its own token and the rest of the
request. Against a loopback server of the user's own that records what it receives."""

from __future__ import annotations

import http.server
import json
import threading

import pytest

RECEIVED: list[dict[str, str]] = []


class Recorder(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        RECEIVED.append({k: v for k, v in self.headers.items()})
        body = json.dumps({"ok": True}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        return None


@pytest.fixture
def users_server():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture
def server_env(users_server) -> dict[str, str]:
    return {"MLFLOW_TRACKING_URI": users_server, "MLFLOW_TRACKING_TOKEN": "the-users-mlflow-token"}


async def test_jupyters_credentials_are_not_forwarded(jp_fetch, users_server):
    RECEIVED.clear()
    status = await jp_fetch("api", "status")
    login = next(
        c.split(";")[0] for c in status.headers.get_list("Set-Cookie") if c.startswith("username-")
    )
    await jp_fetch(
        "air", "mlflow", "ajax-api", "2.0", "mlflow", "experiments", "search",
        headers={"Cookie": f"{login}; _xsrf=2|abc; mlflow-pref=dark"},
    )  # fmt: skip
    (sent,) = RECEIVED
    assert sent["Authorization"] == "Bearer the-users-mlflow-token"  # not Jupyter's token
    assert sent["Cookie"] == "mlflow-pref=dark"  # not the login or XSRF cookie
    assert sent["Host"] == users_server.removeprefix("http://")
