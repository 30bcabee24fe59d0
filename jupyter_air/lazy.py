"""Package attributes imported on first use: how ``jupyter_air``, ``jupyter_air.workloads``,
``jupyter_air.tracking`` and ``jupyter_air.launch`` offer their public names without importing
torch, mlflow or pydantic when the package itself is imported."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(package: str, exports: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: ``exports`` maps each public name to the module
    (relative to ``package``, e.g. ``"jobs"`` or ``"launch.decorator"``; a leading dot for its
    parent's, e.g. ``".logs.query"``) that defines it."""

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f".{module}", package), name)

    return __getattr__
