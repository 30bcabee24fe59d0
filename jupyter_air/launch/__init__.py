"""``@distributed`` for notebooks: run a function on N ranks (torch elastic, fresh processes),
stream their output into the cell, return every rank's value, track the call as one MLflow run.

Public names are imported on first use: importing this package imports neither torch nor mlflow
and starts nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..lazy import lazy_exports

if TYPE_CHECKING:
    from .decorator import DistributedFunction, distributed
    from .errors import (
        DeviceError,
        DistributedError,
        DistributedTimeoutError,
        ExperimentChangedError,
        LauncherError,
        NotPicklableError,
        RankFailedError,
        RemoteTraceback,
        TorchNotInstalledError,
    )

_EXPORTS = {
    "distributed": "decorator",
    "DistributedFunction": "decorator",
    "DeviceError": "errors",
    "DistributedError": "errors",
    "DistributedTimeoutError": "errors",
    "ExperimentChangedError": "errors",
    "LauncherError": "errors",
    "NotPicklableError": "errors",
    "RankFailedError": "errors",
    "RemoteTraceback": "errors",
    "TorchNotInstalledError": "errors",
}

__all__ = [
    "DeviceError",
    "DistributedError",
    "DistributedFunction",
    "DistributedTimeoutError",
    "ExperimentChangedError",
    "LauncherError",
    "NotPicklableError",
    "RankFailedError",
    "RemoteTraceback",
    "TorchNotInstalledError",
    "distributed",
]


__getattr__ = lazy_exports(__name__, _EXPORTS)
