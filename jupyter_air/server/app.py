"""The jupyter-air server extension: its configuration (traitlets) and what it sets up at load.

Loading creates the services (cheaply) and registers the handlers; the GPU poll loop starts on the
first request on the server's event loop, and everything stops with the server.
"""

from __future__ import annotations

import functools

from jupyter_server.extension.application import ExtensionApp
from traitlets import Enum, Float, Int, TraitError, Unicode, validate

from ..telemetry.backends import BACKEND_CHOICES
from .gpu_handlers import gpu_handlers
from .gpu_service import GpuService
from .kernel_owners import kernel_owners


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
            "automatically) or 'none'. The JUPYTER_AIR_GPU_BACKEND environment variable wins."
        ),
    )
    simulated_gpus = Int(
        4,
        config=True,
        help="Number of GPUs of the simulated backend (or JUPYTER_AIR_SIMULATED_GPUS).",
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

    @validate("gpu_poll_interval")
    def _valid_interval(self, proposal: dict) -> float:
        if proposal["value"] <= 0:
            raise TraitError("JupyterAir.gpu_poll_interval must be a positive number of seconds")
        return proposal["value"]

    @validate("gpu_history")
    def _valid_history(self, proposal: dict) -> float:
        if proposal["value"] <= 0:
            raise TraitError("JupyterAir.gpu_history must be a positive number of seconds")
        return proposal["value"]

    @validate("gpu_idle_timeout")
    def _valid_idle(self, proposal: dict) -> float:
        if proposal["value"] < 0:
            raise TraitError("JupyterAir.gpu_idle_timeout must be 0 or a positive number")
        return proposal["value"]

    def initialize_settings(self) -> None:
        serverapp = self.serverapp
        owners = functools.partial(
            kernel_owners,
            getattr(serverapp, "kernel_manager", None),
            getattr(serverapp, "session_manager", None),
        )
        self.gpu = GpuService(
            backend=self.gpu_backend,
            simulated_gpus=self.simulated_gpus,
            interval_s=self.gpu_poll_interval,
            history_s=self.gpu_history,
            idle_timeout_s=self.gpu_idle_timeout,
            node=self.node_name or None,
            owners=owners,
        )
        self.settings["jupyter_air"] = {"gpu": self.gpu}

    def initialize_handlers(self) -> None:
        self.handlers.extend(gpu_handlers())

    async def stop_extension(self) -> None:
        await self.gpu.stop()
