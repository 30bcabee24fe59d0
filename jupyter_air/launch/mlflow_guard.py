"""In a rank: keep the MLflow run the kernel owns from being ended by the rank.

Every rank gets ``MLFLOW_RUN_ID``; MLflow resumes that run on the rank's first ``log_*`` call and
ends it FINISHED from its ``atexit`` hook (or from an explicit ``mlflow.end_run()``) when the rank
exits, while the other ranks still run and before the kernel decides the final status (mlflow
#4696, #5817, #8494). Libraries end it too: Lightning's ``MLFlowLogger.finalize()`` calls
``MlflowClient().set_terminated(run_id, "FINISHED")`` in rank 0, transformers' callback calls
``mlflow.end_run()``. Here no route ends the kernel's run: ``end_run`` only stops it being the
rank's active run; ``MlflowClient.set_terminated`` of it does nothing; ``MlflowClient.update_run``
keeps its status RUNNING (a new name still applies). Each of them still sends what was logged
asynchronously (``synchronous=False``) before it returns, as ending the run would have; the worker
calls ``flush()`` when the function is done, as MLflow's exit hooks come too late for that. Runs
the rank creates itself (nested ones) end as usual.

It also records ``mlflow.set_experiment`` calls, which make MLflow refuse the kernel's run
("active experiment ID does not match environment run ID"), so the rank can explain that error.

mlflow is patched when (and only if) the function imports it: this module imports no mlflow.
"""

from __future__ import annotations

import importlib.abc
import os
import sys
import traceback
from typing import Any

FLUENT = "mlflow.tracking.fluent"
CLIENT = "mlflow.tracking.client"
MISMATCH = "does not match environment run ID"


class MlflowGuard:
    """Protects ``run_id`` in this process; ``install()`` before the function runs."""

    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self.set_experiment_calls: list[str] = []  # "name at file:line"

    def install(self) -> None:
        module = sys.modules.get(FLUENT)
        if module is not None:
            self._patch(module)
        else:
            sys.meta_path.insert(0, _PatchOnImport(self))

    def flush(self) -> None:
        """Send what this process logged asynchronously, as ending a run does (MLflow shuts its
        async queue down first)."""
        fluent = sys.modules.get(FLUENT)
        flush = getattr(fluent, "flush_async_logging", None)
        if flush is not None:
            try:
                flush()
            except Exception as error:
                print(f"jupyter-air: could not send async MLflow logs: {error}", file=sys.stderr)

    # the patches --------------------------------------------------------------------------------
    def _patch(self, fluent: Any) -> None:
        if getattr(fluent, "_jupyter_air_guard", None) is self:
            return
        client = sys.modules.get(CLIENT)  # imported by fluent
        if client is not None:
            self._patch_client(client.MlflowClient)
        original_end_run = fluent.end_run
        original_set_experiment = fluent.set_experiment
        guard = self

        def end_run(*args: Any, **kwargs: Any) -> None:
            active = fluent.active_run()
            if active is None or active.info.run_id != guard.run_id:
                return original_end_run(*args, **kwargs)
            original_end_run(*args, **kwargs)  # its set_terminated of the run does nothing
            # later log_* calls of this rank go to the same run, not to a new one
            os.environ["MLFLOW_RUN_ID"] = guard.run_id
            return None

        def set_experiment(*args: Any, **kwargs: Any) -> Any:
            named = kwargs.get("experiment_name") or kwargs.get("experiment_id")
            if named is None and args:
                named = args[0]
            guard.set_experiment_calls.append(f"{named!r}{_call_site()}")
            return original_set_experiment(*args, **kwargs)

        _wraps(end_run, original_end_run)
        _wraps(set_experiment, original_set_experiment)
        fluent.end_run = end_run
        fluent.set_experiment = set_experiment
        fluent._jupyter_air_guard = self
        mlflow: Any = sys.modules.get("mlflow")
        if mlflow is not None and hasattr(mlflow, "end_run"):  # imported from fluent before us
            mlflow.end_run = end_run
            mlflow.set_experiment = set_experiment

    def _patch_client(self, cls: Any) -> None:
        """``MlflowClient`` itself (every instance, however it was imported) cannot end the
        kernel's run."""
        if getattr(cls, "_jupyter_air_guard", None) is self:
            return
        original_set_terminated = cls.set_terminated
        original_update_run = cls.update_run
        guard = self

        def set_terminated(client: Any, run_id: str, *args: Any, **kwargs: Any) -> None:
            if run_id != guard.run_id:
                return original_set_terminated(client, run_id, *args, **kwargs)
            guard.flush()
            return None

        def update_run(
            client: Any, run_id: str, status: str | None = None, name: str | None = None
        ) -> None:
            if run_id == guard.run_id and status is not None and status.upper() != "RUNNING":
                guard.flush()
                status = None
                if name is None:
                    return None
            return original_update_run(client, run_id, status=status, name=name)

        _wraps(set_terminated, original_set_terminated)
        _wraps(update_run, original_update_run)
        cls.set_terminated = set_terminated
        cls.update_run = update_run
        cls._jupyter_air_guard = self

    # explaining set_experiment -----------------------------------------------------------------
    def explain(self, error: BaseException, experiment: str | None) -> str | None:
        """The explanation when ``error`` is MLflow refusing the run after ``set_experiment``."""
        if not _mentions_mismatch(error):
            return None
        calls = "; ".join(self.set_experiment_calls) or "an experiment set in the rank"
        ours = f" ({experiment!r})" if experiment else ""
        return (
            f"mlflow.set_experiment was called inside the function: {calls}. The ranks log into "
            f"the MLflow run that .distributed() started in the kernel, in its experiment{ours}; "
            'MLflow refuses to use that run from another experiment ("active experiment ID '
            'does not match environment run ID"). Set the experiment in the notebook before '
            "calling .distributed() (mlflow.set_experiment(...) in a cell), or pass "
            "experiment='name' to @distributed, and remove the call from the function."
        )


class _PatchOnImport(importlib.abc.MetaPathFinder):
    """Patches ``mlflow.tracking.fluent`` right after it runs, before ``mlflow/__init__`` copies
    its functions."""

    def __init__(self, guard: MlflowGuard) -> None:
        self.guard = guard

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname != FLUENT:
            return None
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            spec = finder.find_spec(fullname, path, target)
            if spec is not None and spec.loader is not None:
                spec.loader = _PatchingLoader(spec.loader, self.guard)
                return spec
        return None


class _PatchingLoader(importlib.abc.Loader):
    def __init__(self, loader: Any, guard: MlflowGuard) -> None:
        self._loader = loader
        self._guard = guard

    def create_module(self, spec: Any) -> Any:
        return self._loader.create_module(spec)

    def exec_module(self, module: Any) -> None:
        self._loader.exec_module(module)
        self._guard._patch(module)

    def __getattr__(self, name: str) -> Any:  # get_source, get_code, …: the real loader's
        return getattr(self._loader, name)


def _wraps(wrapper: Any, original: Any) -> None:
    wrapper.__wrapped__ = original
    wrapper.__doc__ = original.__doc__


def _mentions_mismatch(error: BaseException | None) -> bool:
    seen = 0
    while error is not None and seen < 10:
        if MISMATCH in str(error):
            return True
        error = error.__cause__ or error.__context__
        seen += 1
    return False


def _call_site() -> str:
    for frame in reversed(traceback.extract_stack()[:-2]):
        if "/mlflow/" not in frame.filename.replace("\\", "/"):
            return f" at {frame.filename}:{frame.lineno}"
    return ""
