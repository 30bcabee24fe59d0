"""System metrics for a managed run: one MLflow ``SystemMetricsMonitor`` per node.

Metrics are named ``system/{node_id}/...`` (CPU, memory, disk, network, and GPU where NVML works),
which is what MLflow's System metrics tab shows. Three things MLflow's monitor leaves to us:

- a run shorter than one sampling interval logs nothing (the monitor publishes only after a full
  interval): at the end we publish what was sampled but not yet logged;
- GPU metrics go missing silently without NVML (mlflow #7983): we say why in a run tag;
- it records every GPU of the machine, while users want the ones in use (mlflow #13398): we keep
  those of ``CUDA_VISIBLE_DEVICES`` when it is set (numbered as CUDA numbers them).
"""

from __future__ import annotations

import contextlib
import logging
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

log = logging.getLogger(__name__)

TAG_SYSTEM_METRICS = "jupyter_air.system_metrics"  # + ".{node_id}": what is recorded, or why not


class SystemMetrics:
    """A started monitor for one node of one run; ``finish()`` stops it and logs the rest."""

    def __init__(self, monitor: SystemMetricsMonitor, node_id: str, gpu_note: str) -> None:
        self.monitor = monitor
        self.node_id = node_id
        self.gpu_note = gpu_note
        self._finished = False

    @property
    def summary(self) -> str:
        return f"cpu, memory, disk, network; {self.gpu_note}"

    def finish(self) -> None:
        """Stop sampling and log the samples of the last, partial interval. Idempotent."""
        if self._finished:
            return
        self._finished = True
        monitor = self.monitor
        try:
            monitor.finish()  # stops and joins the thread, flushes what it had published
            metrics = monitor.aggregate_metrics()
            if metrics:
                monitor.publish_metrics(metrics)
                monitor.mlflow_logger.flush()
        except Exception as error:  # metrics are a nice-to-have: never fail the run for them
            log.warning("jupyter-air: could not log the last system metrics: %s", error)


def start_system_metrics(
    run_id: str,
    *,
    node_id: str = "node_0",
    sampling_interval_s: float | None = None,
    resume: bool = False,
    tracking_uri: str | None = None,
    visible_gpus: str | None = None,
) -> SystemMetrics:
    """Start recording this machine's metrics into ``run_id`` as ``system/{node_id}/...``.

    ``sampling_interval_s``: seconds between samples (MLflow's default, 10 s, when None).
    ``resume``: continue the steps of metrics the run already has.
    ``visible_gpus``: GPUs to record (``CUDA_VISIBLE_DEVICES`` syntax); default: that variable."""
    from mlflow.system_metrics.system_metrics_monitor import SystemMetricsMonitor

    monitor = SystemMetricsMonitor(
        run_id, resume_logging=resume, node_id=node_id, tracking_uri=tracking_uri
    )
    # ours win over MLFLOW_SYSTEM_METRICS_NODE_ID / _SAMPLING_INTERVAL, which MLflow prefers
    monitor.node_id = node_id
    if sampling_interval_s is not None:
        monitor.sampling_interval = sampling_interval_s
    visible = visible_gpus if visible_gpus is not None else os.environ.get("CUDA_VISIBLE_DEVICES")
    gpu_note = _gpu_note(monitor, visible)
    monitor.start()
    return SystemMetrics(monitor, node_id, gpu_note)


def _gpu_note(monitor: SystemMetricsMonitor, visible: str | None) -> str:
    from mlflow.system_metrics.metrics.gpu_monitor import GPUMonitor

    gpu = next((m for m in monitor.monitors if isinstance(m, GPUMonitor)), None)
    if gpu is None:
        others = [type(m).__name__ for m in monitor.monitors]
        if "ROCMMonitor" in others:
            return "AMD GPUs (ROCm)"
        return f"no GPU metrics: {why_no_nvml()}"
    selected = select_gpus(gpu.gpu_handles, visible)
    if selected is not None:
        gpu.gpu_handles = selected
        gpu.num_gpus = len(selected)
    count = len(gpu.gpu_handles)
    which = " (CUDA_VISIBLE_DEVICES)" if selected is not None else ""
    return f"{count} GPU{'s' if count != 1 else ''}{which}"


def select_gpus(handles: list[Any], visible: str | None) -> list[Any] | None:
    """The NVML handles ``CUDA_VISIBLE_DEVICES`` names, in its order; None to keep them all (not
    set, or in a form we do not map: MIG instances)."""
    if visible is None:
        return None
    entries = [e.strip() for e in visible.split(",") if e.strip()]
    if not entries:
        return []
    selected = []
    for entry in entries:
        if entry.isdigit():
            index = int(entry)
            if index >= len(handles):
                break  # CUDA ignores the entries from the first invalid one on
            selected.append(handles[index])
        elif entry.startswith("GPU-"):
            handle = _handle_by_uuid(handles, entry)
            if handle is None:
                break
            selected.append(handle)
        else:
            return None
    return selected


def _handle_by_uuid(handles: list[Any], prefix: str) -> Any:
    try:
        import pynvml

        for handle in handles:
            uuid = pynvml.nvmlDeviceGetUUID(handle)
            uuid = uuid.decode() if isinstance(uuid, bytes) else uuid
            if uuid.startswith(prefix):
                return handle
    except Exception:
        return None
    return None


def why_no_nvml() -> str:
    """Why NVML gives no GPU metrics here, in words."""
    try:
        import pynvml
    except ImportError:
        return "nvidia-ml-py is not installed (pip install nvidia-ml-py)"
    try:
        pynvml.nvmlInit()
    except Exception as error:
        return f"NVML is unavailable ({error}): no NVIDIA GPU or driver on this machine"
    try:
        count = pynvml.nvmlDeviceGetCount()
    finally:
        with contextlib.suppress(Exception):
            pynvml.nvmlShutdown()
    return "no NVIDIA GPU found" if count == 0 else "the GPU monitor could not start"
