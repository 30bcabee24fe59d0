"""The embedded MLflow server relayed on another address (mlflow_server/relay.py): the relay
only carries bytes, so the server's token is still required for everything."""

from __future__ import annotations

import urllib.parse

from jupyter_air.mlflow_server.relay import Relay
from jupyter_air.tracking.readiness import health


def test_the_relay_answers_only_with_the_token(mlflow_server) -> None:
    port = urllib.parse.urlparse(mlflow_server.url).port
    assert port is not None
    relay = Relay("127.0.0.1", port).start()
    try:
        assert health(relay.url, 10.0, mlflow_server.token) == 200
        assert health(relay.url, 10.0, "") == 401  # nothing without the server's token
        assert health(relay.url, 10.0, "not-the-token") == 401
    finally:
        relay.close()
    assert health(relay.url, 2.0, mlflow_server.token) != 200  # closed: nothing listens
