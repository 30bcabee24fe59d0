"""MLflow run ownership for jupyter-air: experiment resolution, managed runs, links and the run
display shown in cell outputs.

The public names below are imported on first use: the server imports this package (for
``naming``) at startup, and that must import no mlflow.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .context import KernelContext, kernel_context
    from .display import MIME_TYPE, RunDisplay, run_bundle, run_payload
    from .experiments import ExperimentError, get_or_create_experiment, resolve_experiment
    from .links import mlflow_ui, run_links
    from .readiness import TrackingServerNotReady, TrackingServerRefused, wait_for_tracking_server
    from .runs import ManagedRun
    from .system_metrics import SystemMetrics, start_system_metrics

_EXPORTS = {
    "KernelContext": "context",
    "kernel_context": "context",
    "MIME_TYPE": "display",
    "RunDisplay": "display",
    "run_bundle": "display",
    "run_payload": "display",
    "ExperimentError": "experiments",
    "get_or_create_experiment": "experiments",
    "resolve_experiment": "experiments",
    "mlflow_ui": "links",
    "run_links": "links",
    "TrackingServerNotReady": "readiness",
    "TrackingServerRefused": "readiness",
    "wait_for_tracking_server": "readiness",
    "ManagedRun": "runs",
    "SystemMetrics": "system_metrics",
    "start_system_metrics": "system_metrics",
}

__all__ = [
    "MIME_TYPE",
    "ExperimentError",
    "KernelContext",
    "ManagedRun",
    "RunDisplay",
    "SystemMetrics",
    "TrackingServerNotReady",
    "TrackingServerRefused",
    "get_or_create_experiment",
    "kernel_context",
    "mlflow_ui",
    "resolve_experiment",
    "run_bundle",
    "run_links",
    "run_payload",
    "start_system_metrics",
    "wait_for_tracking_server",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
