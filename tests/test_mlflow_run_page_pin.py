"""Pins what the run page's Logs tab (src/mlflow-page/) relies on in the installed MLflow's UI:
the installed MLflow is one the project allows; its page has a ``<head>`` for the proxy to add
the script to; its bundled JS declares the run page routes the script parses and the run page's
tab list (the component id, Radix tabs) and tab labels the script looks for
(src/mlflow-page/shape.ts). An MLflow whose UI changes these fails here; in the browser the
script then falls back to a "Logs" link, so a user still reaches the logs."""

from __future__ import annotations

import re
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
SHAPE = (ROOT / "src" / "mlflow-page" / "shape.ts").read_text()


def shape_strings(name: str) -> list[str]:
    """The string literals of the constant ``name`` in shape.ts."""
    found = re.search(rf"export const {name}\b[^=]*=\s*(\[.*?\]|'[^']*')", SHAPE, re.DOTALL)
    assert found, f"{name} is not in src/mlflow-page/shape.ts"
    return re.findall(r"'([^']*)'", found.group(1))


@pytest.fixture(scope="module")
def mlflow_ui() -> Path:
    import mlflow

    build = Path(mlflow.__file__).parent / "server" / "js" / "build"
    assert (build / "index.html").is_file(), f"MLflow {mlflow.__version__} ships no UI at {build}"
    return build


@pytest.fixture(scope="module")
def bundle(mlflow_ui) -> str:
    """Every script of MLflow's UI, as one text."""
    return "\n".join(
        path.read_text(errors="replace") for path in sorted(mlflow_ui.glob("static/js/*.js"))
    )


def test_the_installed_mlflow_is_one_the_project_allows():
    pyproject = (ROOT / "pyproject.toml").read_text()
    (spec,) = [Requirement(d) for d in re.findall(r'^\s*"(mlflow[<>=!~ ].*?)",', pyproject, re.M)]
    assert spec.specifier.contains(version("mlflow")), (version("mlflow"), str(spec))


def test_its_page_has_a_head_for_our_scripts(mlflow_ui):
    page = (mlflow_ui / "index.html").read_text()
    assert re.search(r"<head(\s[^>]*)?>", page, re.IGNORECASE)
    assert re.search(r"<script[^>]*\bdefer", page)  # MLflow's own bundle runs after the DOM too


def test_its_router_declares_the_run_page_routes_the_script_parses(bundle):
    routes = shape_strings("RUN_PAGE_ROUTES")
    assert "/experiments/:experimentId/runs/:runUuid" in routes
    for route in routes:
        assert f'"{route}"' in bundle, f"MLflow's router no longer declares {route}"
    # a hash router: the run links jupyter-air builds (`#/experiments/…`) are its URLs
    assert "createHashRouter" in bundle


def test_its_run_page_has_the_tab_list_the_script_looks_for(bundle):
    (component,) = shape_strings("TABLIST_COMPONENT_ID")
    assert f'componentId:"{component}"' in bundle
    assert 'role:"tablist"' in bundle
    assert '"data-state"' in bundle  # Radix tabs: active/inactive
    for label in shape_strings("RUN_PAGE_TAB_LABELS"):
        assert f'defaultMessage:"{label}"' in bundle, f"no run page tab labelled {label!r}"
