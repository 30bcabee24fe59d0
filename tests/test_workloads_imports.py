"""Importing the workloads modules, the `air` CLI and the magics starts nothing and imports no
mlflow or torch (pydantic only for the spec itself); loading the IPython extension registers
%%air_run without importing them either."""

from __future__ import annotations

import pytest
from import_support import assert_light_import, run_fresh

WORKLOADS = [
    "artifacts",
    "capacity",
    "connection",
    "jobs",
    "paths",
    "ray_standby",
    "reconcile",
    "retention",
    "spec",
    "standby_process",
    "store",
    "supervisor",
    "tracking_calls",
    "views",
    "yaml_source",
]
LOGS = ["capture", "filters", "follow", "levels", "logfile", "query", "scan"]
BACKENDS = [
    "base",
    "choice",
    "keeper",
    "local",
    "ray_backend",
    "ray_group",
    "ray_node",
    "supervision",
]
MODULES = [
    "jupyter_air.workloads",
    *(f"jupyter_air.workloads.{name}" for name in WORKLOADS),
    "jupyter_air.logs",
    *(f"jupyter_air.logs.{name}" for name in LOGS),
    "jupyter_air.disk",
    "jupyter_air.backends",
    *(f"jupyter_air.backends.{name}" for name in BACKENDS),
    "jupyter_air.cli",
    "jupyter_air.notebook.magics",
]


@pytest.mark.parametrize("module", MODULES)
def test_import_is_light(module):
    allowed = {"pydantic"} if module.endswith(".spec") else set()
    assert_light_import(f"import {module}", {"mlflow", "torch", "pydantic", "ray"} - allowed)


def test_loading_the_extension_registers_the_magics_lazily():
    code = (
        "import sys\n"
        "from IPython.core.interactiveshell import InteractiveShell\n"
        "shell = InteractiveShell.instance()\n"
        "shell.run_line_magic('load_ext', 'jupyter_air')\n"
        "assert 'air_run' in shell.magics_manager.magics['cell']\n"
        "assert 'air_run' in shell.magics_manager.magics['line']\n"
        "heavy = {m.split('.')[0] for m in sys.modules} & {'mlflow', 'torch', 'pydantic'}\n"
        "assert not heavy, heavy\n"
        "shell.run_line_magic('unload_ext', 'jupyter_air')\n"
        "assert 'air_run' not in shell.magics_manager.magics['cell']\n"
    )
    run_fresh(code)


def test_jupyter_airs_own_processes_import_ray_without_its_slowest_optional_package():
    """The `air` command and the supervisors mark jsonschema's optional ``rfc3987_syntax``
    absent (1.1 s of ``import ray``): Ray and jsonschema work without it."""
    code = (
        "import sys\n"
        "from jupyter_air.backends.ray_import import without_slow_optional_imports\n"
        "without_slow_optional_imports()\n"
        "import jsonschema, ray, ray.runtime_env\n"
        "assert 'rfc3987_syntax' in sys.modules and sys.modules['rfc3987_syntax'] is None\n"
        "ray.runtime_env.RuntimeEnv(env_vars={'A': '1'})\n"
        "checker = jsonschema.FormatChecker()\n"
        "jsonschema.validate({'at': 'a@b.example'}, {'properties': {'at': {'format': 'email'}}},"
        " format_checker=checker)\n"
        "print('ok')\n"
    )
    assert run_fresh(code).strip() == "ok"
