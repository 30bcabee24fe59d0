"""The GPU agents of a connected Ray cluster, seen from the server: one process
(``telemetry/ray_agents.py``) that keeps an agent on every Ray node, started with the server
when ``c.JupyterAir.cluster`` names a Ray cluster and ``cluster_agents`` is on, stopped with it.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import subprocess
import sys
from pathlib import Path

from ..pids import stop_group
from ..private import open_private, private_folder

log = logging.getLogger("jupyter_air")


def ray_address(cluster: str) -> str | None:
    """The Ray address ``cluster`` names: ``ray`` → ``RAY_ADDRESS`` (or Ray's own discovery)."""
    cluster = cluster.strip()
    if not cluster or cluster == "local":
        return None
    if cluster == "ray":
        return os.environ.get("RAY_ADDRESS") or "auto"
    return cluster


class ClusterAgents:
    def __init__(self, data_dir: Path) -> None:
        self.data_dir = data_dir
        self.process: subprocess.Popen[bytes] | None = None

    def start(
        self, *, server_url: str, address: str, interval_s: float, backend: str, own_node: str = ""
    ) -> bool:
        """Start the agents' driver (returns at once); False, with a warning, without Ray.
        ``own_node``: the server's own node, which needs no agent (this host's Ray node)."""
        if importlib.util.find_spec("ray") is None:
            log.warning(
                "jupyter-air: no GPU agents on the Ray cluster %s: Ray is not installed here "
                "(pip install 'jupyter-air[ray]')",
                address,
            )
            return False
        private_folder(self.data_dir)
        argv = [
            sys.executable, "-m", "jupyter_air.telemetry.ray_agents",
            "--server", server_url, "--address", address, "--data-dir", str(self.data_dir),
            "--interval", f"{interval_s:g}", "--backend", backend, "--parent", str(os.getpid()),
            "--own-node", own_node,
        ]  # fmt: skip
        with open_private(self.data_dir / "cluster-agents.log") as out:
            self.process = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        log.info("jupyter-air: GPU agents on the Ray cluster %s report to %s", address, server_url)
        return True

    def stop(self, grace_s: float = 15.0) -> None:
        """Stop the driver (its actors end with it); blocking: call it off the event loop."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        stop_group(process.pid, grace_s, process)
