"""MLflow's server app behind a bearer token: the ``jupyter-air`` MLflow app plugin.

``mlflow server --app-name jupyter-air`` runs ``create_app()`` under uvicorn. Every HTTP and
websocket request must carry ``Authorization: Bearer <token>`` with the token the guard passes
in ``config.MLFLOW_SERVER_TOKEN``; anything else gets 401 before MLflow sees it. So the
port on 127.0.0.1 is no way around Jupyter's login for other users of the machine: Jupyter's
proxy adds the header for the browser, and kernels, ranks and supervisors get the token as
``MLFLOW_TRACKING_TOKEN``, which MLflow's client sends as that header. The nodes of a cluster
on other machines reach it through a relay on this host's address toward them (``relay.py``),
with the same token.
"""

from __future__ import annotations

import hmac
import json
import os
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from ..config import MLFLOW_SERVER_TOKEN

SERVER_TOKEN_ENV = MLFLOW_SERVER_TOKEN.name

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

_DENIED = json.dumps(
    {
        "error_code": "UNAUTHENTICATED",
        "message": "This MLflow server is jupyter-air's embedded server: requests need its token "
        "(MLFLOW_TRACKING_TOKEN), which jupyter-air gives kernels, jobs and its own proxy.",
    }
).encode()


class TokenGate:
    """ASGI middleware: only requests with ``Authorization: Bearer <token>`` reach ``app``."""

    def __init__(self, app: App, token: str) -> None:
        if not token:
            raise ValueError("the embedded MLflow server needs a token")
        self.app = app
        self._expected = f"Bearer {token}".encode()

    def allowed(self, scope: Scope) -> bool:
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                return hmac.compare_digest(bytes(value), self._expected)
        return False

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "http" and not self.allowed(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="jupyter-air MLflow"'),
                        (b"content-length", str(len(_DENIED)).encode()),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": _DENIED})
            return
        if kind == "websocket" and not self.allowed(scope):
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)


def create_app() -> App:
    """The app uvicorn serves (a factory: MLflow's app is imported in the server process only)."""
    token = os.environ.get(SERVER_TOKEN_ENV, "")
    if not token:
        raise RuntimeError(
            f"{SERVER_TOKEN_ENV} is not set: the jupyter-air MLflow app runs only under "
            "jupyter-air's guard (python -m jupyter_air.mlflow_server.guard)"
        )
    os.environ.setdefault(ALLOWED_HOSTS_ENV, ",".join(allowed_hosts()))  # read at MLflow's import
    from mlflow.server.fastapi_app import app as mlflow_app

    return TokenGate(mlflow_app, token)


ALLOWED_HOSTS_ENV = "MLFLOW_SERVER_ALLOWED_HOSTS"


def allowed_hosts() -> list[str]:
    """The ``Host`` headers MLflow accepts (it refuses others against DNS rebinding): loopback,
    as Jupyter's proxy sends, and every address of this host, since the nodes of a cluster may
    reach the server through a relay on any of them (``relay.py``) — with its token, like every
    request here. (Computed without importing MLflow's server, which reads the setting once.)"""
    import socket

    import psutil

    hosts = ["localhost", "127.0.0.1"]
    for addresses in psutil.net_if_addrs().values():
        hosts += [a.address for a in addresses if a.family == socket.AF_INET]
    unique = list(dict.fromkeys(hosts))
    # a name with "*" is a pattern (fnmatch: "[" opens a class, so "[[]" is a "[")
    return [*unique, "[::1]", *(f"{host}:*" for host in unique), "[[]::1]:*"]
