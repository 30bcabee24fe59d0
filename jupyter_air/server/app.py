"""The jupyter-air server extension: its configuration (traitlets) and what it sets up at load.

Loading creates the services (cheaply) and registers the handlers; the GPU poll loop starts on the
first request on the server's event loop, and everything stops with the server.
"""

from __future__ import annotations

import asyncio
import functools
import re
from pathlib import Path

from jupyter_server.extension.application import ExtensionApp
from tornado.ioloop import IOLoop
from traitlets import Bool, Enum, Float, Int, TraitError, Unicode, default, validate

from ..config import (
    CLUSTER,
    DATA_DIR,
    GPU_BACKEND,
    LOG_RETENTION_DAYS,
    SIMULATED_GPUS,
    record_server,
)
from ..config import data_dir as air_data_dir
from ..private import secure_data_dir
from ..telemetry.backends import BACKEND_CHOICES
from ..telemetry.models import NODE_PATTERN
from ..telemetry.sender import MAX_BATCH_S
from ..tracking import naming
from .cluster_agents import ClusterAgents, ray_address
from .gpu_handlers import gpu_handlers
from .gpu_service import GpuService
from .kernel_env import KernelEnvironment
from .kernel_owners import kernel_owners
from .mlflow_handlers import mlflow_handlers
from .mlflow_service import MlflowService
from .report_batch import ReportBatch
from .workload_handlers import workload_handlers
from .workload_service import WorkloadService

# settings where 0 means "no limit", and what the error says a valid value is
_ZERO_MEANS = {
    "log_retention_days": "0 (forever) or positive",
    "gpu_idle_timeout": "0 or a positive number",
}


class JupyterAir(ExtensionApp):
    """GPU Resources, distributed training and MLflow-tracked workloads for JupyterLab."""

    name = "jupyter_air"
    load_other_extensions = True

    gpu_backend = Enum(
        list(BACKEND_CHOICES),
        default_value="auto",
        config=True,
        help=(
            "Where GPU Resources reads GPUs from: 'auto' (NVML, or no GPU data with the reason), "
            "'nvml', 'simulated' (plausible fake GPUs for demos and tests; never chosen "
            f"automatically) or 'none'. The {GPU_BACKEND} environment variable wins."
        ),
    )
    simulated_gpus = Int(
        4,
        config=True,
        help=f"Number of GPUs of the simulated backend (or {SIMULATED_GPUS}).",
    )
    gpu_poll_interval = Float(10.0, config=True, help="Seconds between GPU samples.")
    gpu_history = Float(7200.0, config=True, help="Seconds of GPU history kept on the server.")
    gpu_idle_timeout = Float(
        300.0,
        config=True,
        help=(
            "Seconds without any client asking for GPU data after which sampling pauses "
            "(no NVML calls) until the next request; 0 never pauses while a client has asked. "
            "Runs and workloads managed by jupyter-air keep sampling awake while they run."
        ),
    )
    node_name = Unicode(
        "", config=True, help="Name of this node in GPU Resources (default: the host name)."
    )
    agent_lost_after = Float(
        300.0,
        config=True,
        help=(
            "Seconds without a report after which a node agent's node is shown as lost (it is "
            "stale after 3 of its intervals already); it comes back with its next report."
        ),
    )
    telemetry_batch_s = Float(
        1.0,
        config=True,
        help=(
            "Seconds a node agent's report may wait to be stored with the others that come "
            "meanwhile (0: each at once). Stored together, reports cost the server a fraction "
            "of the CPU; a sample reaches the panels that much later."
        ),
    )
    telemetry_ingest_max_bytes = Int(
        1024 * 1024,
        config=True,
        help="Largest telemetry report a node agent may send, in bytes (413 above).",
    )

    data_dir = Unicode(
        config=True,
        help="Folder for jupyter-air's data: the embedded MLflow store and artifacts, job runs, "
        f"logs. Default: {DATA_DIR} when set, else <jupyter data dir>/air.",
    )
    mlflow_embedded = Bool(
        True,
        config=True,
        help="Start an MLflow tracking server (SQLite store under data_dir) when the Jupyter "
        "server has no MLFLOW_TRACKING_URI. With False and no URI, MLflow features are off.",
    )
    mlflow_start_timeout = Float(
        180.0,
        config=True,
        help="Seconds the embedded MLflow server may take to answer before it is restarted.",
    )

    cluster = Unicode(
        "",
        config=True,
        help="Where workloads run when their YAML does not say (compute.backend): '' (this "
        "machine, or the Ray cluster of RAY_ADDRESS when it is set), 'ray' (the Ray cluster of "
        "RAY_ADDRESS, or Ray's own discovery), or the head's GCS address (10.0.0.5:6379; "
        f"this machine must be a Ray node). Kernels and terminals get it as {CLUSTER}; see "
        "docs/clusters.md.",
    )

    cluster_agents = Bool(
        True,
        config=True,
        help="When cluster names a Ray cluster: keep a GPU agent on every Ray node, reporting "
        "to this server (the GPU Resources panel's other nodes). See docs/clusters.md.",
    )

    agent_server_url = Unicode(
        "",
        config=True,
        help="The URL the cluster agents' process on this host forwards the nodes' reports "
        "to (they travel over Ray to it); default: the server's own URL.",
    )

    log_retention_days = Float(
        60.0,
        config=True,
        help="Days workload logs are kept after their job run ended (0: forever). MLflow runs "
        "are kept regardless.",
    )

    schedules = Bool(
        True,
        config=True,
        help="Fire the data folder's schedules (air schedule) from this server. Several servers "
        "on one data folder fire each slot once.",
    )

    @default("data_dir")
    def _default_data_dir(self) -> str:
        return str(air_data_dir(follow_servers=False))

    @validate("gpu_poll_interval", "gpu_history", "agent_lost_after")
    def _valid_seconds(self, proposal: dict) -> float:
        if proposal["value"] <= 0:
            name = proposal["trait"].name
            raise TraitError(f"JupyterAir.{name} must be a positive number of seconds")
        return proposal["value"]

    @validate(*_ZERO_MEANS)
    def _valid_not_negative(self, proposal: dict) -> float:
        if proposal["value"] < 0:
            name = proposal["trait"].name
            raise TraitError(f"JupyterAir.{name} must be {_ZERO_MEANS[name]}")
        return proposal["value"]

    @validate("node_name")
    def _valid_node_name(self, proposal: dict) -> str:
        if proposal["value"] and not re.fullmatch(NODE_PATTERN, proposal["value"]):
            raise TraitError(
                f"JupyterAir.node_name={proposal['value']!r}: use letters, digits, '.', '_' and "
                "'-' (up to 128, starting with a letter or digit)"
            )
        return proposal["value"]

    @validate("telemetry_batch_s")
    def _valid_batch(self, proposal: dict) -> float:
        if not 0 <= proposal["value"] <= MAX_BATCH_S:
            raise TraitError(
                f"JupyterAir.telemetry_batch_s must be between 0 and {MAX_BATCH_S:g} seconds"
            )
        return proposal["value"]

    @validate("telemetry_ingest_max_bytes")
    def _valid_ingest_max(self, proposal: dict) -> int:
        if not 4096 <= proposal["value"] <= 64 * 1024 * 1024:
            raise TraitError(
                "JupyterAir.telemetry_ingest_max_bytes must be between 4096 and 67108864"
            )
        return proposal["value"]

    def initialize_settings(self) -> None:
        serverapp = self.serverapp
        assert serverapp is not None  # an extension's settings are made by its server
        owners = functools.partial(
            kernel_owners,
            getattr(serverapp, "kernel_manager", None),
            getattr(serverapp, "session_manager", None),
        )
        data_dir = secure_data_dir(Path(self.data_dir).expanduser())
        self.gpu = GpuService(
            backend=self.gpu_backend,
            simulated_gpus=self.simulated_gpus,
            interval_s=self.gpu_poll_interval,
            history_s=self.gpu_history,
            idle_timeout_s=self.gpu_idle_timeout,
            lost_after_s=self.agent_lost_after,
            node=self.node_name or None,
            owners=owners,
            data_dir=data_dir,
        )
        self.mlflow = MlflowService(
            base_url=serverapp.base_url,
            data_dir=data_dir,
            embedded=self.mlflow_embedded,
            start_timeout_s=self.mlflow_start_timeout,
        )
        # started (or joined) first: its address and token go to kernels
        self.mlflow.start()
        # What `mlflow.start_run()` typed in a notebook needs to find the tracking server, and
        # run links the UI: given to kernels and terminals through their managers (the server
        # process's own environment stays as it was).
        kernel_env = self.mlflow.kernel_environment(
            server_url=getattr(serverapp, "custom_display_url", "") or None,
            root_dir=getattr(serverapp, "root_dir", None),
        )
        kernel_env[DATA_DIR.name] = str(data_dir)
        kernel_env[LOG_RETENTION_DAYS.name] = f"{self.log_retention_days:g}"
        if self.cluster:
            kernel_env[CLUSTER.name] = self.cluster
        self.kernel_env = KernelEnvironment(kernel_env)
        self.kernel_env.install_kernels(getattr(serverapp, "kernel_manager", None))
        # once the server's event loop runs: every extension is loaded (the terminals' too)
        IOLoop.current().add_callback(self._install_terminals)
        # once the server's event loop runs: hold GPU sampling while this node trains
        IOLoop.current().add_callback(self.gpu.watch_hold_files, data_dir)
        self.workloads = WorkloadService(
            data_dir,
            base_url=serverapp.base_url,
            mlflow_ui=lambda: self.mlflow.ui,
            tracking_uri=lambda: self.mlflow.tracking_uri,
            retention_days=self.log_retention_days,
            mlflow_ready=lambda: self.mlflow.ready,
            tracking_token=lambda: self.mlflow.token,
            tracking_embedded=lambda: self.mlflow.process is not None,
            tracking_identity=lambda: self.mlflow.credentials,
            owner=naming.server_owner(),
        )
        self.cluster_agents_process = ClusterAgents(data_dir)
        IOLoop.current().add_callback(self._start_cluster_agents)
        IOLoop.current().add_callback(self.workloads.start_purging)
        IOLoop.current().add_callback(self.workloads.start_watching)
        if self.schedules:
            IOLoop.current().add_callback(self.workloads.start_scheduling)
        # so that `air` in a plain shell finds this data folder
        self._server_record: Path | None = None
        try:
            self._server_record = record_server(serverapp.runtime_dir, data_dir)
        except OSError as error:
            self.log.warning("jupyter-air: cannot record the data folder for `air`: %s", error)
        self.settings["jupyter_air"] = {
            "gpu": self.gpu,
            "ingest_max_bytes": self.telemetry_ingest_max_bytes,
            "report_batch": (
                ReportBatch(self.telemetry_batch_s) if self.telemetry_batch_s > 0 else None
            ),
            "mlflow": self.mlflow,
            "workloads": self.workloads,
        }

    async def _start_cluster_agents(self) -> None:
        address = ray_address(self.cluster)
        if address is None or not self.cluster_agents:
            return
        serverapp = self.serverapp
        assert serverapp is not None
        url = self.agent_server_url or serverapp.connection_url
        await asyncio.get_running_loop().run_in_executor(
            None,
            functools.partial(
                self.cluster_agents_process.start,
                server_url=url,
                address=address,
                interval_s=self.gpu_poll_interval,
                backend=self.gpu_backend,
                own_node=self.gpu.node,
            ),
        )

    def _install_terminals(self) -> None:
        settings = getattr(self.serverapp, "web_app", None)
        terminals = settings.settings.get("terminal_manager") if settings is not None else None
        self.kernel_env.install_terminals(terminals)

    def initialize_handlers(self) -> None:
        self.handlers.extend(gpu_handlers())
        self.handlers.extend(mlflow_handlers())
        self.handlers.extend(workload_handlers())

    async def stop_extension(self) -> None:
        record = getattr(self, "_server_record", None)
        if record is not None:
            record.unlink(missing_ok=True)
        await self.workloads.stop()
        agents = getattr(self, "cluster_agents_process", None)
        if agents is not None:
            await asyncio.get_running_loop().run_in_executor(None, agents.stop)
        batch = self.settings.get("jupyter_air", {}).get("report_batch")
        if batch is not None:
            batch.store_now()  # the agents' reports that still wait are kept
        await self.gpu.stop()
        await self.mlflow.close()
        await asyncio.get_running_loop().run_in_executor(None, self.mlflow.stop)
        kernel_env = getattr(self, "kernel_env", None)
        if kernel_env is not None:
            kernel_env.uninstall()
