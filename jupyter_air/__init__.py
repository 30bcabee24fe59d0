"""jupyter-air: GPU Resources, distributed training and MLflow-tracked workloads for JupyterLab.

Importing this package starts nothing (no NVML, no thread, no server): the server extension does
its work when Jupyter loads it, and everything else on first use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .lazy import lazy_exports

if TYPE_CHECKING:
    from .launch.decorator import distributed
    from .launch.remote import job

try:
    from ._version import __version__
except ImportError:  # pragma: no cover - only in a source tree that was never built
    import warnings

    warnings.warn(
        "Importing 'jupyter_air' outside a proper installation: run `make lab` or "
        "`pip install -e .` first.",
        stacklevel=2,
    )
    __version__ = "dev"


__all__ = ["__version__", "distributed", "job"]


# ``from jupyter_air import distributed, job``: loaded on first use (no torch, no mlflow)
__getattr__ = lazy_exports(__name__, {"distributed": "launch.decorator", "job": "launch.remote"})


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    return [{"src": "labextension", "dest": "jupyter-air"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    from .server.app import JupyterAir

    return [{"module": "jupyter_air", "app": JupyterAir}]


def load_ipython_extension(ipython: Any) -> None:
    """``%load_ext jupyter_air``: run links in cell outputs for ``mlflow.start_run()``."""
    from .notebook.ipython import load_ipython_extension as load

    load(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from .notebook.ipython import unload_ipython_extension as unload

    unload(ipython)
