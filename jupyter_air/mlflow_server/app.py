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
from .scoped_tokens import MOST_BODY, Grant, Grants, allows, needs_body

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
    """ASGI middleware: only requests with ``Authorization: Bearer <token>`` reach ``app``: the
    server's token, or one that opens one run (``scoped_tokens``: what the nodes of a cluster on
    other hosts get), for the requests of that run."""

    def __init__(self, app: App, token: str, grants: Grants | None = None) -> None:
        if not token:
            raise ValueError("the embedded MLflow server needs a token")
        self.app = app
        self._expected = f"Bearer {token}".encode()
        self.grants = grants

    def bearer(self, scope: Scope) -> bytes | None:
        for name, value in scope.get("headers") or ():
            if name.lower() == b"authorization":
                return bytes(value)
        return None

    def allowed(self, scope: Scope) -> bool:
        given = self.bearer(scope)
        return given is not None and hmac.compare_digest(given, self._expected)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope.get("type")
        if kind == "http" and not self.allowed(scope):
            grant = self._grant(scope)
            if grant is None:
                await _answer(send, 401, _DENIED, [(b"www-authenticate", _REALM)])
                return
            await self._scoped(grant, scope, receive, send)
            return
        if kind == "websocket" and not self.allowed(scope):
            await receive()  # websocket.connect
            await send({"type": "websocket.close", "code": 1008})
            return
        await self.app(scope, receive, send)

    def _grant(self, scope: Scope) -> Grant | None:
        given = self.bearer(scope) or b""
        if self.grants is None or not given.startswith(b"Bearer "):
            return None
        return self.grants.find(given[7:].decode("latin-1"))

    async def _scoped(self, grant: Grant, scope: Scope, receive: Receive, send: Send) -> None:
        """A request with a token of one run: on to MLflow when it is that run's, else 403."""
        method, path = str(scope.get("method", "GET")), str(scope.get("path", ""))
        body: bytes | None = None
        if needs_body(method, path):
            body = await _read_body(receive)
            if body is None:
                await _answer(send, 413, _message("REQUEST_LIMIT_EXCEEDED", "body too large"))
                return
        why = allows(grant, method, path, scope.get("query_string", b"").decode(), body)
        if why is not None:
            await _answer(send, 403, _message("PERMISSION_DENIED", why))
            return
        if body is not None:
            receive = _replay(body, receive)
        await self.app(scope, receive, send)


_REALM = b'Bearer realm="jupyter-air MLflow"'


def _message(code: str, text: str) -> bytes:
    return json.dumps({"error_code": code, "message": text}).encode()


async def _answer(
    send: Send, status: int, body: bytes, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                *(headers or []),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


async def _read_body(receive: Receive) -> bytes | None:
    """The whole request body; None past ``MOST_BODY``."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return b"".join(chunks)
        chunk = bytes(message.get("body") or b"")
        size += len(chunk)
        if size > MOST_BODY:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks)


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that gives ``body`` first, as one message, then what comes after it."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


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

    # the guard starts the server in its folder, where the grants of scoped tokens are
    return TokenGate(mlflow_app, token, Grants(os.getcwd()))


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
