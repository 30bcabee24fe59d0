"""``@distributed``: the decorator users see. ``f(...)`` still runs here; ``f.distributed(...)``
runs it on every rank and returns each rank's value, in rank order.

Options are checked when the function is decorated, devices when it is called (the GPUs visible
then). Importing this module imports neither torch nor mlflow.
"""

from __future__ import annotations

import dataclasses
import functools
import types
from collections.abc import Callable, Mapping
from typing import Any, Generic, TypeVar, overload

from ..config import CHECKPOINT_DIR, MOST_KEEP_S
from .call import run_distributed
from .checkpoint import check_resume
from .devices import check_counts
from .errors import DistributedError, RemoteTraceback
from .options import LaunchOptions

R = TypeVar("R")
OUTPUTS = ("all", "rank0")
# options ``.distributed()`` itself takes (unless the function has a parameter of that name)
CALL_OPTIONS = ("remote", "max_retries", "max_restarts", "resume")
MAX_RETRIES = 100


class DistributedFunction(Generic[R]):
    """A function that runs as usual when called, and on N ranks with ``.distributed()``."""

    def __init__(self, fn: Callable[..., R], options: LaunchOptions) -> None:
        functools.update_wrapper(self, fn)
        self.__wrapped__ = fn
        self.launch_options = options

    def __call__(self, *args: Any, **kwargs: Any) -> R:
        return self.__wrapped__(*args, **kwargs)

    def distributed(self, *args: Any, **kwargs: Any) -> list[R]:
        """Run the function on every rank with these arguments; the list of the ranks' return
        values, rank 0 first. Raises the first failing rank's exception."""
        __tracebackhide__ = True
        options = self.launch_options
        call_options = {
            k: kwargs.pop(k) for k in CALL_OPTIONS if k in kwargs and not _takes(self, k)
        }
        if call_options:
            options = self.with_options(**call_options).launch_options
        try:
            return run_distributed(self.__wrapped__, options, args, kwargs)
        except Exception as error:
            if not isinstance(error, DistributedError) and not isinstance(
                error.__cause__, RemoteTraceback
            ):
                raise  # not ours to explain: its whole traceback
            # The launcher's frames say nothing to a user: the error alone. When a rank
            # failed, this is its exception and its traceback is the RemoteTraceback above.
            raise error.with_traceback(None) from error.__cause__

    def with_options(self, **changes: Any) -> DistributedFunction[R]:
        """The same function with some options changed: ``train.with_options(gpus=1)``."""
        changed = dataclasses.replace(self.launch_options, **changes)
        return DistributedFunction(self.__wrapped__, _checked(changed))

    def __get__(self, instance: Any, owner: type | None = None) -> Any:
        if instance is None:
            return self
        return DistributedFunction(
            types.MethodType(self.__wrapped__, instance), self.launch_options
        )

    def __repr__(self) -> str:
        return f"<distributed function {getattr(self, '__qualname__', self.__wrapped__)!r}>"


@overload
def distributed(fn: Callable[..., R]) -> DistributedFunction[R]: ...


@overload
def distributed(
    fn: None = None,
    *,
    gpus: int | None = None,
    nodes: int = 1,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    output: str = "all",
    run_name: str | None = None,
    experiment: str | None = None,
    mlflow: bool = True,
    grace_period: float = 5.0,
    remote: bool = False,
    max_retries: int = 0,
    max_restarts: int = 0,
    keep_nodes: float | None = None,
) -> Callable[[Callable[..., R]], DistributedFunction[R]]: ...


def distributed(
    fn: Callable[..., R] | None = None,
    *,
    gpus: int | None = None,
    nodes: int = 1,
    timeout: float | None = None,
    env: Mapping[str, str] | None = None,
    output: str = "all",
    run_name: str | None = None,
    experiment: str | None = None,
    mlflow: bool = True,
    grace_period: float = 5.0,
    remote: bool = False,
    max_retries: int = 0,
    max_restarts: int = 0,
    keep_nodes: float | None = None,
) -> Any:
    """Make ``fn`` runnable on N ranks with ``fn.distributed(*args, **kwargs)``.

    gpus: ranks, one per GPU; None for every visible GPU. Without a GPU, N CPU ranks (gloo),
        or 1 for None.
    nodes: machines, each running ``gpus`` ranks; more than 1 needs a Ray cluster
        (docs/clusters.md).
    timeout: seconds before the call is stopped (every rank killed, run KILLED).
    env: extra environment variables for the ranks.
    output: "all" streams every rank's output; "rank0" streams rank 0, and the output of ranks
        that fail.
    run_name, experiment: the MLflow run's name and experiment (default: the notebook's rule).
    mlflow: False to start no MLflow run.
    grace_period: seconds between SIGTERM and SIGKILL when ranks are stopped.
    remote: run the call as a job run (retries, logs, ``air`` commands; it outlives the kernel),
        followed in the cell; ``jupyter_air.job(ID).result()`` reads its results later.
    max_retries: with remote, attempts after a failed one.
    max_restarts: times torch elastic starts every rank again after a rank fails (a crash, an
        exception, a lost GPU), before the call fails; each restart is said in the cell and
        counted on the MLflow run (tag ``jupyter_air.restarts``). Ranks resume from
        ``$JUPYTER_AIR_CHECKPOINT_DIR`` if they save there (docs/checkpoints.md). One node only.
    keep_nodes: with nodes > 1, seconds a cleanly ended call's Ray nodes (and their GPUs) are
        kept for the next call of the same shape, which then starts at once; 0 releases them
        at the end of each call. None: ``JUPYTER_AIR_KEEP_NODES_S``, else 60.
    """
    given = dict(locals())  # the options as given: LaunchOptions names and checks them
    del given["fn"]
    options = _checked(LaunchOptions(**given))

    def decorate(function: Callable[..., R]) -> DistributedFunction[R]:
        if not callable(function):
            raise TypeError(f"@distributed decorates a function, not {type(function).__name__}")
        if isinstance(function, DistributedFunction):
            function = function.__wrapped__
        return DistributedFunction(function, options)

    return decorate(fn) if fn is not None else decorate


def _takes(function: DistributedFunction[Any], name: str) -> bool:
    """Whether the decorated function has a parameter ``name`` (then it is the function's)."""
    import inspect

    try:
        return name in inspect.signature(function.__wrapped__).parameters
    except (TypeError, ValueError):
        return False


def _count(name: str, value: object) -> int:
    """An option that counts attempts or restarts, checked."""
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_RETRIES:
        raise ValueError(f"{name} must be an integer from 0 to {MAX_RETRIES}; got {value!r}")
    return value


def _checked(given: LaunchOptions) -> LaunchOptions:
    """``given`` (the options as a user wrote them) checked, each wrong one told in words, with
    numbers and the environment in the types the launch reads."""
    check_counts(given.gpus, given.nodes)
    resume = check_resume(given.resume)
    if resume is not False and given.remote:
        raise ValueError(
            "resume is for calls of the kernel: a job run (remote=True) resumes its retries "
            f"from ${CHECKPOINT_DIR.name} by itself (docs/checkpoints.md)"
        )
    timeout, grace_period, keep_nodes = given.timeout, given.grace_period, given.keep_nodes
    if timeout is not None and (isinstance(timeout, bool) or not timeout > 0):
        raise ValueError(f"timeout must be a number of seconds > 0, or None; got {timeout!r}")
    if isinstance(grace_period, bool) or not grace_period >= 0:
        raise ValueError(f"grace_period must be a number of seconds ≥ 0; got {grace_period!r}")
    if not isinstance(given.remote, bool):
        raise TypeError(f"remote must be True or False; got {given.remote!r}")
    max_retries = _count("max_retries", given.max_retries)
    if _count("max_restarts", given.max_restarts) and given.nodes > 1:
        raise ValueError(
            f"max_restarts needs nodes=1 (got nodes={given.nodes}): the ranks of several nodes "
            "are not restarted together yet"
        )
    if max_retries and not given.remote:
        raise ValueError("max_retries needs remote=True: a call of the kernel is not retried")
    if keep_nodes is not None and (
        isinstance(keep_nodes, bool)
        or not isinstance(keep_nodes, int | float)
        or not 0 <= keep_nodes <= MOST_KEEP_S
    ):
        raise ValueError(
            f"keep_nodes must be a number of seconds from 0 to {MOST_KEEP_S:g}, or None; "
            f"got {keep_nodes!r}"
        )
    if given.output not in OUTPUTS:
        raise ValueError(
            f"output must be one of {', '.join(map(repr, OUTPUTS))}; got {given.output!r}"
        )
    extra = dict(given.env or {})
    bad = [k for k, v in extra.items() if not isinstance(k, str) or not isinstance(v, str)]
    if bad:
        raise TypeError(f"env must map names to strings; not so for {', '.join(map(repr, bad))}")
    return dataclasses.replace(
        given,
        timeout=float(timeout) if timeout is not None else None,
        env=extra,
        mlflow=bool(given.mlflow),
        grace_period=float(grace_period),
        keep_nodes=float(keep_nodes) if keep_nodes is not None else None,
        resume=resume,
    )
