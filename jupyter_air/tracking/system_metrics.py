"""System metrics for a managed run: this machine sampled every interval in a thread, the mean of
each interval logged into the run as ``system/{node_id}/...`` at steps 0, 1, 2….

The names and units are those of MLflow's own ``SystemMetricsMonitor`` (its System metrics tab
shows them): ``cpu_utilization_percentage``, ``system_memory_usage_megabytes`` and ``_percentage``,
``disk_usage_percentage``, ``disk_usage_megabytes``, ``disk_available_megabytes``,
``network_receive_megabytes`` and ``network_transmit_megabytes`` (since the start), and per GPU
``gpu_{i}_utilization_percentage``, ``_memory_usage_megabytes`` and ``_percentage``,
``_power_usage_watts`` and ``_percentage``. It is sampled here rather than by MLflow's monitor
because that one needs ``import mlflow`` (1.5 CPU s in every supervisor and node agent), and
because of what MLflow's monitor leaves to its callers:

- a run shorter than one sampling interval logs nothing there: here the last, partial interval
  is logged at the end;
- GPU metrics go missing silently without NVML (mlflow #7983): we say why in a run tag;
- it records every GPU of the machine, while users want the ones in use (mlflow #13398): we keep
  those of ``CUDA_VISIBLE_DEVICES`` when it is set (numbered as CUDA numbers them).
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import KW_ONLY, InitVar, dataclass, field
from typing import Any

from ..repeating import Repeating
from .rest import Metric, RestClient, client_for

log = logging.getLogger(__name__)

TAG_SYSTEM_METRICS = "jupyter_air.system_metrics"  # + ".{node_id}": what is recorded, or why not
DEFAULT_INTERVAL_S = 10.0  # MLflow's
PREFIX = "system/"
MB = 1e6  # MLflow's megabytes


class _Gpus:
    """The NVML handles of the GPUs to record, read as MLflow's GPU monitor reads them."""

    def __init__(self, visible: str | None) -> None:
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())]
        selected = select_gpus(handles, visible)
        self.handles = selected if selected is not None else handles
        self.chosen = selected is not None

    def sample(self, into: dict[str, list[float]]) -> None:
        nvml = self.nvml
        for i, handle in enumerate(self.handles):
            with contextlib.suppress(nvml.NVMLError):
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                into[f"gpu_{i}_memory_usage_percentage"].append(memory.used / memory.total * 100)
                into[f"gpu_{i}_memory_usage_megabytes"].append(memory.used / MB)
            with contextlib.suppress(nvml.NVMLError):
                rates = nvml.nvmlDeviceGetUtilizationRates(handle)
                into[f"gpu_{i}_utilization_percentage"].append(float(rates.gpu))
            with contextlib.suppress(nvml.NVMLError, ZeroDivisionError):
                milliwatts = nvml.nvmlDeviceGetPowerUsage(handle)
                limit = nvml.nvmlDeviceGetEnforcedPowerLimit(handle)
                into[f"gpu_{i}_power_usage_watts"].append(milliwatts / 1000)
                into[f"gpu_{i}_power_usage_percentage"].append(milliwatts / limit * 100)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()


@dataclass(eq=False)
class SystemMetrics:
    """A started sampler for one node of one run; ``finish()`` stops it and logs the rest."""

    client: Any
    run_id: str
    node_id: str
    interval_s: float
    _: KW_ONLY
    first_step: InitVar[int] = 0
    gpus: _Gpus | None = None
    gpu_note: str = ""
    step: int = field(init=False)

    def __post_init__(self, first_step: int) -> None:
        import psutil

        self.step = first_step
        self._psutil = psutil
        self._samples: dict[str, list[float]] = defaultdict(list)
        network = psutil.net_io_counters()
        self._network_start = (network.bytes_recv, network.bytes_sent) if network else (0, 0)
        psutil.cpu_percent()  # the first call only starts psutil's count
        self._lock = threading.Lock()
        self._sampling = Repeating(self._sample_and_publish, self.interval_s, "jupyter-air-metrics")
        self._finished = False

    @property
    def summary(self) -> str:
        return f"cpu, memory, disk, network; {self.gpu_note}"

    def start(self) -> SystemMetrics:
        self._sampling.start()
        return self

    def _sample_and_publish(self) -> bool:
        self.sample()
        try:
            self.publish()
        except Exception as error:  # the run may be gone: sampling stops, the job goes on
            log.warning("jupyter-air: system metrics of run %s stop: %s", self.run_id, error)
            return False
        return True

    def sample(self) -> None:
        psutil, into = self._psutil, self._samples
        with self._lock:
            into["cpu_utilization_percentage"].append(psutil.cpu_percent())
            memory = psutil.virtual_memory()
            into["system_memory_usage_megabytes"].append(memory.used / MB)
            into["system_memory_usage_percentage"].append(memory.used / memory.total * 100)
            disk = psutil.disk_usage(os.sep)
            into["disk_usage_percentage"].append(disk.percent)
            into["disk_usage_megabytes"].append(disk.used / MB)
            into["disk_available_megabytes"].append(disk.free / MB)
            network = psutil.net_io_counters()
            if network:
                received, sent = self._network_start
                into["network_receive_megabytes"] = [(network.bytes_recv - received) / MB]
                into["network_transmit_megabytes"] = [(network.bytes_sent - sent) / MB]
            if self.gpus is not None:
                self.gpus.sample(into)

    def publish(self) -> None:
        """Log the mean of each metric sampled since the last call, at the next step."""
        with self._lock:
            samples, self._samples = self._samples, defaultdict(list)
            if not samples:
                return
            step, self.step = self.step, self.step + 1
        now = int(time.time() * 1000)
        prefix = f"{PREFIX}{self.node_id}/"
        metrics = [
            Metric(prefix + name, round(sum(values) / len(values), 1), now, step)
            for name, values in samples.items()
            if values
        ]
        _log_metrics(self.client, self.run_id, metrics)

    def finish(self) -> None:
        """Stop sampling and log the samples of the last, partial interval. Idempotent."""
        if self._finished:
            return
        self._finished = True
        self._sampling.stop(timeout_s=self.interval_s + 30)
        try:
            if self.step == 0 and not self._samples:  # shorter than one interval
                self.sample()
            self.publish()
        except Exception as error:  # metrics are a nice-to-have: never fail the run for them
            log.warning("jupyter-air: could not log the last system metrics: %s", error)
        finally:
            if self.gpus is not None:
                self.gpus.close()


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
    client = client_for(tracking_uri or os.environ.get("MLFLOW_TRACKING_URI") or "")
    visible = visible_gpus if visible_gpus is not None else os.environ.get("CUDA_VISIBLE_DEVICES")
    gpus: _Gpus | None = None
    try:
        gpus = _Gpus(visible)
        count = len(gpus.handles)
        which = " (CUDA_VISIBLE_DEVICES)" if gpus.chosen else ""
        gpu_note = f"{count} GPU{'s' if count != 1 else ''}{which}"
    except Exception:
        gpu_note = f"no GPU metrics: {why_no_nvml()}"
    interval = sampling_interval_s or DEFAULT_INTERVAL_S
    first = _next_step(client, run_id, node_id) if resume else 0
    metrics = SystemMetrics(
        client, run_id, node_id, interval, first_step=first, gpus=gpus, gpu_note=gpu_note
    )
    return metrics.start()


def _next_step(client: Any, run_id: str, node_id: str) -> int:
    """One past the last step of this node's system metrics in the run (0 if it has none)."""
    prefix = f"{PREFIX}{node_id}/"
    try:
        names = [k for k in client.get_run(run_id).data.metrics if k.startswith(prefix)]
        steps = [m.step for name in names for m in client.get_metric_history(run_id, name)[-1:]]
    except Exception:
        return 0
    return max(steps) + 1 if steps else 0


def _log_metrics(client: Any, run_id: str, metrics: list[Metric]) -> None:
    if isinstance(client, RestClient):
        client.log_batch(run_id, metrics=metrics)
        return
    from mlflow import entities

    theirs = [entities.Metric(m.key, m.value, m.timestamp, m.step) for m in metrics]
    client.log_batch(run_id, metrics=theirs)


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


@contextlib.contextmanager
def quiet_system_metrics_logs() -> Iterator[None]:
    """MLflow's monitor says "Started/Stopping system metrics monitoring" at INFO: noise in the
    cell around the ranks' output (what is recorded is in a run tag)."""
    logger = logging.getLogger("mlflow.system_metrics")
    previous = logger.level
    logger.setLevel(max(previous, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(previous)
