"""The embedded MLflow server offered on another address of this host: a TCP relay.

The embedded server listens on 127.0.0.1, which the nodes of a cluster on other machines cannot
reach. For as long as an attempt runs on such nodes, its supervisor relays one more address —
the one this host has toward the cluster (its Ray node's IP) — byte for byte to the server's
loopback port. Nothing is relayed that the server would not check itself: the embedded server
answers only requests with a token (``app.TokenGate``). The nodes get one that opens the
attempt's run only (``scoped_tokens``), revoked when the relay closes, in their environment
(``MLFLOW_TRACKING_TOKEN``), never on a command line. A user's own tracking server is never
relayed: it may need no credentials at all.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)

CONNECT_TIMEOUT_S = 10.0
CHUNK = 1 << 16


class Relay:
    """Connections to ``(host, port)`` joined to ``127.0.0.1:target_port``; ``close`` ends the
    listening socket and every connection still open."""

    def __init__(self, host: str, target_port: int) -> None:
        self.host = host
        self.target_port = target_port
        self.revoke: list[Callable[[], None]] = []  # on close: the tokens given for it
        self._server = socket.create_server((host, 0))
        self.port: int = self._server.getsockname()[1]
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        self._thread = threading.Thread(target=self._accept, name="mlflow-relay", daemon=True)

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def start(self) -> Relay:
        self._thread.start()
        return self

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            threading.Thread(target=self._join, args=(client,), daemon=True).start()

    def _join(self, client: socket.socket) -> None:
        try:
            upstream = socket.create_connection(
                ("127.0.0.1", self.target_port), timeout=CONNECT_TIMEOUT_S
            )
        except OSError as error:
            log.warning("MLflow relay: the server on port %d: %s", self.target_port, error)
            client.close()
            return
        upstream.settimeout(None)
        with self._lock:
            if self._closed:
                client.close()
                upstream.close()
                return
            self._open.update((client, upstream))
        back = threading.Thread(target=self._pump, args=(upstream, client), daemon=True)
        back.start()
        self._pump(client, upstream)
        back.join()
        with self._lock:
            self._open.difference_update((client, upstream))
        client.close()
        upstream.close()

    @staticmethod
    def _pump(source: socket.socket, target: socket.socket) -> None:
        """Bytes from ``source`` to ``target`` until ``source`` ends; then ``target`` is told."""
        try:
            while data := source.recv(CHUNK):
                target.sendall(data)
        except OSError:
            pass
        with contextlib.suppress(OSError):
            target.shutdown(socket.SHUT_WR)

    def offer(self, env: Mapping[str, str]) -> dict[str, str]:
        """What the nodes whose environment is ``env`` get to reach the server through this
        relay: its address, and a token of the run in ``env`` only when the server is the
        embedded one of this data folder (its token is the one in ``env``)."""
        offered = {"MLFLOW_TRACKING_URI": self.url}
        run_id, experiment_id = env.get("MLFLOW_RUN_ID"), env.get("MLFLOW_EXPERIMENT_ID")
        token = env.get("MLFLOW_TRACKING_TOKEN")
        if not (run_id and experiment_id and token):
            return offered
        from ..config import data_dir
        from .records import ServerFiles, mlflow_folder
        from .scoped_tokens import grant, revoke

        folder = mlflow_folder(data_dir())
        with contextlib.suppress(Exception):  # no record: not the embedded server of this folder
            endpoint = ServerFiles(folder).endpoint()
            if endpoint is not None and endpoint.token == token:
                scoped = grant(folder, run_id, experiment_id)
                self.revoke.append(lambda: revoke(folder, scoped))
                offered["MLFLOW_TRACKING_TOKEN"] = scoped
        return offered

    def close(self) -> None:
        for revoke in self.revoke:
            with contextlib.suppress(OSError):
                revoke()
        self.revoke = []
        with self._lock:
            self._closed = True
            opened, self._open = list(self._open), set()
        with contextlib.suppress(OSError):
            self._server.shutdown(socket.SHUT_RDWR)  # wakes the accept() waiting on it
        self._server.close()
        for sock in opened:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()
