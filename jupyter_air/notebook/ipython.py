"""The IPython extension: ``%load_ext jupyter_air`` (``%unload_ext jupyter_air`` to undo).

Loading it makes runs typed in the notebook (``mlflow.start_run()``, autologging) show as links in
the cell output and land in the notebook's experiment (tracking/notebook_runs.py), and registers
the ``%%air_run`` / ``%air_run`` magics (magics.py). Loading twice changes nothing; loading does
not import mlflow.
"""

from __future__ import annotations

from typing import Any

from ..tracking.notebook_runs import NotebookRuns

_installed: dict[int, NotebookRuns] = {}  # id(shell) → what was installed into it


def load_ipython_extension(ipython: Any) -> None:
    if id(ipython) in _installed:
        return
    runs = NotebookRuns(ipython)
    runs.install()
    _installed[id(ipython)] = runs
    from .magics import register_magics

    register_magics(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    runs = _installed.pop(id(ipython), None)
    if runs is not None:
        runs.uninstall()
        from .magics import unregister_magics

        unregister_magics(ipython)


def installed(ipython: Any) -> NotebookRuns | None:
    """What the extension installed into this shell, if it is loaded."""
    return _installed.get(id(ipython))
