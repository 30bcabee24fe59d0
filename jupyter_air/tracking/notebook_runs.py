"""Runs typed in a notebook (``mlflow.start_run()``, and the runs ``mlflow.autolog()`` starts):
shown as cell output the moment they start, kept up to date, and found by the Experiment panel.

Installed by the IPython extension (``%load_ext jupyter_air``), it wraps MLflow's fluent
``start_run`` and ``end_run`` (in ``mlflow`` and ``mlflow.tracking.fluent``, where autologging and
``mlflow.log_*`` look them up) so that ``start_run``:

- waits, saying "MLflow is starting (N s)…", while the local tracking server starts, instead of
  hanging silently in MLflow's HTTP retries;
- puts a new run without an explicit experiment in the experiment of the rule (docs/mlflow.md):
  ``MLFLOW_EXPERIMENT_NAME``/``_ID`` created race-free, else ``/Users/{user}/{notebook}`` (an
  experiment made active with ``mlflow.set_experiment`` is left to MLflow; a nested run goes to
  its parent's experiment);
- tags it with the notebook (``jupyter_air.notebook``, ``mlflow.source.name``) and kernel;
- displays it (display.py); ``end_run`` and, after each cell, a status check update the display.

Nothing here imports mlflow before the notebook does: if mlflow is not imported yet when the
extension loads, the wrapping happens right after its import.
"""

from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import logging
import os
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from .context import KernelContext, kernel_context
from .display import TERMINAL_STATUSES, RunDisplay, run_payload
from .experiments import ExperimentError, active_experiment_id, resolve_experiment
from .naming import TAG_KERNEL_ID, TAG_NOTEBOOK
from .readiness import healthy
from .runs import wait_until_answering

log = logging.getLogger(__name__)

_MARK = "__jupyter_air_wrapped__"
_MAX_TRACKED = 200


class _Shown:
    """A displayed run whose status we follow until it ends."""

    def __init__(
        self, display: RunDisplay, experiment_name: str | None, resumed: bool, uri: str
    ) -> None:
        self.display = display
        self.experiment_name = experiment_name
        self.resumed = resumed
        self.tracking_uri = uri


class NotebookRuns:
    """The wrapping of MLflow's fluent API for one IPython shell; ``install``/``uninstall``."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        self._originals: dict[str, Callable[..., Any]] = {}
        self._shown: dict[str, _Shown] = {}
        self._experiment_names: dict[tuple[str, str], str] = {}
        self._lock = threading.Lock()
        self._hook: _AfterImport | None = None

    # install / uninstall -------------------------------------------------------------------
    def install(self) -> None:
        if "mlflow.tracking.fluent" in sys.modules:
            self._wrap_mlflow()
        else:
            self._hook = _AfterImport("mlflow", self._wrap_mlflow)
            sys.meta_path.insert(0, self._hook)
        self.shell.events.register("post_run_cell", self.post_run_cell)

    def uninstall(self) -> None:
        if self._hook is not None:
            self._hook.cancel()
            self._hook = None
        self.shell.events.unregister("post_run_cell", self.post_run_cell)
        if not self._originals:
            return
        import mlflow

        fluent = mlflow.tracking.fluent

        for name, original in self._originals.items():
            for module in (mlflow, fluent):
                if getattr(getattr(module, name, None), _MARK, None) is self:
                    setattr(module, name, original)
        self._originals.clear()

    def _wrap_mlflow(self) -> None:
        import mlflow

        fluent = mlflow.tracking.fluent

        if getattr(fluent.start_run, _MARK, None) is not None:
            return  # wrapped already (by another shell's extension)
        for name, impl in (("start_run", self._start_run), ("end_run", self._end_run)):
            original = getattr(fluent, name)
            self._originals[name] = original
            wrapper = _wrapper(original, impl)
            setattr(wrapper, _MARK, self)
            setattr(fluent, name, wrapper)
            setattr(mlflow, name, wrapper)

    # the wrappers --------------------------------------------------------------------------
    def _start_run(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        import mlflow

        uri = mlflow.get_tracking_uri()
        context = kernel_context()
        wait_until_answering(uri, context)
        resumed = False
        experiment_name: str | None = None
        try:
            bound = inspect.signature(original).bind(*args, **kwargs)
            arguments = bound.arguments
            resumed = bool(arguments.get("run_id") or os.environ.get("MLFLOW_RUN_ID"))
            if not resumed:
                experiment_name = self._choose_experiment(arguments, context)
                arguments["tags"] = {**self._tags(context), **dict(arguments.get("tags") or {})}
            args, kwargs = bound.args, bound.kwargs
        except (TypeError, ExperimentError):
            raise
        except Exception as error:
            if type(error).__module__.startswith("mlflow"):
                raise
            log.warning("jupyter-air: leaving this run to MLflow's defaults: %s", error)
        active = original(*args, **kwargs)
        try:
            self._show(active, experiment_name, resumed, uri, context)
        except Exception as error:  # showing it is a nicety: the run itself started
            log.warning("jupyter-air: could not show the MLflow run in the output: %s", error)
        return active

    def _end_run(self, original: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
        import mlflow

        ending = mlflow.active_run()
        original(*args, **kwargs)
        if ending is not None and ending.info.run_id in self._shown:
            try:
                self._refresh(ending.info.run_id)
            except Exception as error:
                log.debug("jupyter-air: could not refresh run %s: %s", ending.info.run_id, error)

    def _choose_experiment(self, arguments: dict[str, Any], context: Any) -> str | None:
        """Fill in ``experiment_id`` where MLflow would fall back to "Default"; the experiment's
        name when we resolved it."""
        if arguments.get("experiment_id") is not None or active_experiment_id() is not None:
            return None
        import mlflow

        parent = mlflow.active_run()
        parent_id = arguments.get("parent_run_id")
        if parent_id and (parent is None or parent.info.run_id != parent_id):
            from mlflow.tracking import MlflowClient

            arguments["experiment_id"] = MlflowClient().get_run(parent_id).info.experiment_id
            return None
        if parent is not None:
            if arguments.get("nested") or parent_id:
                arguments["experiment_id"] = parent.info.experiment_id
            return None  # not nested: MLflow refuses a second top-level run and says so
        experiment = resolve_experiment(context=context)
        arguments["experiment_id"] = experiment.experiment_id
        return experiment.name

    @staticmethod
    def _tags(context: Any) -> dict[str, str]:
        tags: dict[str, str] = {}
        if context.notebook_path:
            tags[TAG_NOTEBOOK] = context.notebook_path
            tags["mlflow.source.name"] = context.notebook_path
            tags["mlflow.source.type"] = "NOTEBOOK"
        if context.kernel_id:
            tags[TAG_KERNEL_ID] = context.kernel_id
        return tags

    # display -------------------------------------------------------------------------------
    def _show(
        self,
        run: Any,
        experiment_name: str | None,
        resumed: bool,
        uri: str,
        context: KernelContext,
    ) -> None:
        info = run.info
        if experiment_name is None:
            experiment_name = self._experiment_name(uri, info.experiment_id)
        display = RunDisplay(info.run_id, server_url=context.server_url)
        display.show(
            run_payload(
                run,
                experiment_name=experiment_name,
                resumed=resumed,
                tracking_uri=uri,
                context=context,
            )
        )
        with self._lock:
            self._shown[info.run_id] = _Shown(display, experiment_name, resumed, uri)
            while len(self._shown) > _MAX_TRACKED:
                self._shown.pop(next(iter(self._shown)))

    def _experiment_name(self, uri: str, experiment_id: str) -> str | None:
        key = (uri, experiment_id)
        if key not in self._experiment_names:
            from mlflow.tracking import MlflowClient

            self._experiment_names[key] = MlflowClient(uri).get_experiment(experiment_id).name
        return self._experiment_names[key]

    def _refresh(self, run_id: str) -> None:
        from mlflow.tracking import MlflowClient

        shown = self._shown.get(run_id)
        if shown is None:
            return
        run = MlflowClient(shown.tracking_uri).get_run(run_id)
        if run.info.status != shown.display.status:
            shown.display.update(
                run_payload(
                    run,
                    experiment_name=shown.experiment_name,
                    resumed=shown.resumed,
                    tracking_uri=shown.tracking_uri,
                )
            )
        if run.info.status in TERMINAL_STATUSES:
            with self._lock:
                self._shown.pop(run_id, None)

    def post_run_cell(self, result: Any = None) -> None:
        """Update the displays of runs whose status changed (ended by other means than
        ``end_run``: ``MlflowClient.set_terminated``, another process, a later cell)."""
        with self._lock:
            pending = [(run_id, s.tracking_uri) for run_id, s in self._shown.items()]
        answering: dict[str, bool] = {}
        for run_id, uri in pending:
            if uri not in answering:  # never hang a cell in MLflow's retries
                answering[uri] = not uri.startswith(("http://", "https://")) or healthy(uri, 2.0)
            if not answering[uri]:
                continue
            try:
                self._refresh(run_id)
            except Exception as error:
                log.debug("jupyter-air: could not refresh run %s: %s", run_id, error)


def _wrapper(original: Callable[..., Any], impl: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return impl(original, *args, **kwargs)

    return wrapper


class _AfterImport(importlib.abc.MetaPathFinder):
    """Call ``callback`` right after the top-level module ``name`` is first imported."""

    def __init__(self, name: str, callback: Callable[[], None]) -> None:
        self.name = name
        self.callback = callback

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname != self.name:
            return None
        self.cancel()  # once; and the search below must not find us again
        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        callback = self.callback

        def exec_then_call(module: Any) -> None:
            exec_module(module)
            try:
                callback()
            except Exception as error:
                log.warning("jupyter-air: could not wrap %s: %s", fullname, error)

        loader.exec_module = exec_then_call  # type: ignore[method-assign]
        return spec

    def cancel(self) -> None:
        if self in sys.meta_path:
            sys.meta_path.remove(self)
