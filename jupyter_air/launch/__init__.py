"""``@distributed`` for notebooks: run a function on N ranks (torch elastic, fresh processes),
stream their output into the cell, return every rank's value, track the call as one MLflow run.

Public names are imported on first use: importing this package imports neither torch nor mlflow
and starts nothing.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{module}", __name__), name)
