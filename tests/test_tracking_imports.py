"""Importing jupyter-air starts nothing and imports no mlflow: not the package, not the server
extension, not the tracking modules (mlflow is imported on first use). The launcher's modules,
``from jupyter_air import distributed`` included, import neither torch nor mlflow."""

from __future__ import annotations

import pytest
from import_support import assert_light_import

MODULES = [
    "jupyter_air",
    "jupyter_air.notebook.ipython",
    "jupyter_air.server.app",
    "jupyter_air.tracking",
    "jupyter_air.tracking.context",
    "jupyter_air.tracking.display",
    "jupyter_air.tracking.experiments",
    "jupyter_air.tracking.links",
    "jupyter_air.tracking.naming",
    "jupyter_air.tracking.notebook_runs",
    "jupyter_air.tracking.readiness",
    "jupyter_air.tracking.runs",
    "jupyter_air.tracking.system_metrics",
]


@pytest.mark.parametrize("module", MODULES)
def test_import_does_not_import_mlflow(module):
    assert_light_import(f"import {module}", {"mlflow"})


def test_public_names_resolve_lazily():
    import jupyter_air.tracking as tracking

    for name in tracking.__all__:
        assert getattr(tracking, name) is not None
    with pytest.raises(AttributeError):
        tracking.nothing_here  # noqa: B018


LAUNCH_IMPORTS = [
    "import jupyter_air",
    "from jupyter_air import distributed",
    "import jupyter_air.launch",
    "from jupyter_air.launch import distributed, RankFailedError",
    *(
        f"import jupyter_air.launch.{name}"
        for name in (
            "agent",
            "decorator",
            "devices",
            "driver",
            "errors",
            "failures",
            "mlflow_guard",
            "output",
            "payload",
            "processes",
            "rundir",
            "worker",
        )
    ),
]


@pytest.mark.parametrize("statement", LAUNCH_IMPORTS)
def test_launch_imports_neither_torch_nor_mlflow(statement):
    assert_light_import(statement, {"torch", "mlflow"})
