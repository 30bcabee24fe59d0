"""What travels from the kernel to the ranks: the function, its arguments, the kernel's
``sys.path`` and working folder, and the source of the notebook cells (for tracebacks).

Everything is cloudpickled *in the kernel, before any process starts*, each piece on its own, so
that a function or argument that cannot travel fails at once with its name ("the argument 'lock'",
"the global variable 'db' used by train") instead of as a cryptic error in N ranks. Functions
defined in a notebook, closures and lambdas are pickled by value (cloudpickle), so the ranks need
neither a fork of the kernel nor an importable ``__main__``.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import linecache
import os
import pickle
import sys
import types
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import NotPicklableError

FORMAT = 1
SOURCE_LIMIT = 4 * 1024 * 1024  # bytes of notebook cell source sent along, at most


@dataclass
class Payload:
    """The pickled pieces, ready to be written to ``payload.pkl``."""

    function: bytes
    function_name: str
    args: list[bytes]
    arg_labels: list[str]
    kwargs: dict[str, bytes]
    sys_path: list[str] = field(default_factory=lambda: list(sys.path))
    cwd: str = field(default_factory=os.getcwd)
    sources: dict[str, tuple[Any, ...]] = field(default_factory=dict)

    def dumps(self) -> bytes:
        return pickle.dumps({"format": FORMAT, **self.__dict__}, protocol=pickle.HIGHEST_PROTOCOL)


def build_payload(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Payload:
    """Pickle a call of ``fn``; raise ``TypeError`` for a call that does not fit the signature
    and ``NotPicklableError`` naming what cannot be pickled."""
    name = function_name(fn)
    labels, kw_labels = argument_labels(fn, args, kwargs)
    return Payload(
        function=dump_function(fn),
        function_name=name,
        args=[_dump(value, label, name) for value, label in zip(args, labels, strict=True)],
        arg_labels=labels,
        kwargs={key: _dump(value, kw_labels[key], name) for key, value in kwargs.items()},
        sources=notebook_sources(),
    )


def function_name(fn: Callable[..., Any]) -> str:
    return getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)


def argument_labels(
    fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[list[str], dict[str, str]]:
    """How to name each argument in an error ("the argument 'lr'"), checking on the way that the
    call fits the function's signature (as calling it would)."""
    try:
        signature = inspect.signature(fn)
    except (TypeError, ValueError):
        signature = None
    positional = [f"positional argument {i + 1}" for i in range(len(args))]
    keywords = {key: f"keyword argument {key!r}" for key in kwargs}
    if signature is None:
        return positional, keywords
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError as error:
        raise TypeError(f"{function_name(fn)}.distributed(): {error}") from None
    index = 0
    for param_name, value in bound.arguments.items():
        kind = signature.parameters[param_name].kind
        if kind is inspect.Parameter.VAR_POSITIONAL:
            for j in range(len(value)):
                positional[index] = f"positional argument {index + 1} (*{param_name}[{j}])"
                index += 1
        elif kind is inspect.Parameter.VAR_KEYWORD:
            for key in value:
                keywords[key] = f"keyword argument {key!r} (**{param_name})"
        elif (
            index < len(args)
            and kind is not inspect.Parameter.KEYWORD_ONLY
            and (param_name not in kwargs)
        ):
            positional[index] = f"argument {param_name!r}"
            index += 1
        else:
            keywords[param_name] = f"argument {param_name!r}"
    return positional, keywords


def dumps(value: Any) -> bytes:
    """cloudpickle, keeping the file names of the functions' code (cloudpickle replaces them
    with ``<dynamic-code>``), so that a rank's traceback shows the lines that failed."""
    buffer = io.BytesIO()
    _pickler_class()(buffer, protocol=pickle.HIGHEST_PROTOCOL).dump(value)
    return buffer.getvalue()


@functools.cache
def _pickler_class() -> type:
    import cloudpickle
    from cloudpickle import cloudpickle as implementation

    code_reduce = getattr(implementation, "_code_reduce", None)
    if code_reduce is None:  # another cloudpickle: tracebacks lose file names, nothing else
        return cloudpickle.Pickler

    def reduce_code(code: types.CodeType) -> Any:
        constructor, args = code_reduce(code)
        kept = tuple(code.co_filename if arg == "<dynamic-code>" else arg for arg in args)
        return constructor, kept

    class Pickler(cloudpickle.Pickler):
        dispatch_table = ChainMap({types.CodeType: reduce_code}, cloudpickle.Pickler.dispatch_table)

    return Pickler


def dump_function(fn: Callable[..., Any]) -> bytes:
    try:
        return dumps(fn)
    except Exception as error:
        name = function_name(fn)
        culprit, value, cause = _find_culprit(fn) or ("the function itself", fn, error)
        raise NotPicklableError(
            f"{name}.distributed(): {name} cannot be sent to the ranks because {culprit} "
            f"({_describe(value)}) cannot be pickled: {cause}. Nothing was started. The "
            "function is pickled (cloudpickle) together with the globals and closure variables "
            "it uses, and loaded in fresh processes: create such an object inside the function, "
            "or pass something picklable as an argument.",
            culprit=culprit,
        ) from error


def _dump(value: Any, label: str, name: str) -> bytes:
    try:
        return dumps(value)
    except Exception as error:
        raise NotPicklableError(
            f"{name}.distributed(): the {label} ({_describe(value)}) cannot be sent to the "
            f"ranks: {error}. Nothing was started. Arguments are pickled (cloudpickle) and "
            "loaded in fresh processes: pass something picklable (for example a path or a "
            "configuration), and create the object inside the function.",
            culprit=label,
        ) from error


def _find_culprit(fn: Any) -> tuple[str, Any, Exception] | None:
    """The closure variable, global, default or bound object that makes ``fn`` unpicklable."""

    def fails(value: Any) -> Exception | None:
        try:
            dumps(value)
        except Exception as error:
            return error
        return None

    if isinstance(fn, types.MethodType):
        error = fails(fn.__self__)
        if error is not None:
            return "the object its method is bound to", fn.__self__, error
        fn = fn.__func__
    target = getattr(fn, "func", None) if not isinstance(fn, types.FunctionType) else fn
    if not isinstance(target, types.FunctionType):
        return None
    code = target.__code__
    for var, cell in zip(code.co_freevars, target.__closure__ or (), strict=False):
        try:
            value = cell.cell_contents
        except ValueError:  # an empty cell
            continue
        error = fails(value)
        if error is not None:
            return f"the closure variable {var!r} it uses", value, error
    for var in sorted(set(_global_names(code))):
        if var in target.__globals__:
            value = target.__globals__[var]
            if isinstance(value, types.ModuleType):
                continue
            error = fails(value)
            if error is not None:
                return f"the global variable {var!r} it uses", value, error
    for label, value in _defaults(target):
        error = fails(value)
        if error is not None:
            return label, value, error
    return None


def _global_names(code: types.CodeType) -> Iterator[str]:
    yield from code.co_names
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _global_names(const)


def _defaults(fn: types.FunctionType) -> Iterator[tuple[str, Any]]:
    params = list(inspect.signature(fn).parameters.values())
    positional = [p for p in params if p.default is not inspect.Parameter.empty]
    for param in positional:
        yield f"the default value of its parameter {param.name!r}", param.default


def _describe(value: Any) -> str:
    kind = type(value)
    module = kind.__module__
    if module in ("builtins", "__main__"):
        return f"a {kind.__qualname__}"
    return f"a {module}.{kind.__qualname__}"


def notebook_sources(limit: int = SOURCE_LIMIT) -> dict[str, tuple[Any, ...]]:
    """The ``linecache`` entries of code typed in this kernel (notebook cells), so that a rank's
    traceback shows the lines of the cell that failed. Newest first, up to ``limit`` bytes."""
    entries: dict[str, tuple[Any, ...]] = {}
    total = 0
    for filename, entry in reversed(list(linecache.cache.items())):
        if len(entry) != 4 or entry[1] is not None or not isinstance(entry[2], list):
            continue  # a real file (the rank reads it itself) or a lazy entry
        size = sum(len(line) for line in entry[2])
        if total + size > limit:
            break
        entries[filename] = (entry[0], None, list(entry[2]), entry[3])
        total += size
    return entries


# in the rank ----------------------------------------------------------------------------------
class PayloadLoadError(Exception):
    """A piece of the payload could not be loaded in the rank (its label says which)."""


@dataclass
class LoadedCall:
    function: Callable[..., Any]
    function_name: str
    args: list[Any]
    kwargs: dict[str, Any]


def read_payload(data: bytes) -> dict[str, Any]:
    payload = pickle.loads(data)
    if payload.get("format") != FORMAT:
        raise PayloadLoadError(
            f"payload format {payload.get('format')} is not {FORMAT}: the kernel and the ranks "
            "run different versions of jupyter-air"
        )
    return payload


def restore_context(payload: Mapping[str, Any]) -> None:
    """The kernel's ``sys.path`` and working folder, and its notebook sources for tracebacks."""
    sys.path[:] = [*payload["sys_path"], *(p for p in sys.path if p not in payload["sys_path"])]
    with contextlib.suppress(OSError):  # a folder that went away: the function may not need it
        os.chdir(payload["cwd"])
    for filename, entry in payload.get("sources", {}).items():
        linecache.cache.setdefault(filename, entry)


def load_call(payload: Mapping[str, Any]) -> LoadedCall:
    import cloudpickle

    name = payload["function_name"]

    def load(blob: bytes, label: str) -> Any:
        try:
            return cloudpickle.loads(blob)
        except Exception as error:
            raise PayloadLoadError(
                f"the {label} of {name} could not be loaded in the rank: "
                f"{type(error).__name__}: {error}. It was pickled in the kernel; loading it "
                "needs the same modules importable here (the kernel's sys.path and working "
                "folder are restored)."
            ) from error

    function = load(payload["function"], "function")
    args = [load(b, label) for b, label in zip(payload["args"], payload["arg_labels"], strict=True)]
    kwargs = {key: load(b, f"keyword argument {key!r}") for key, b in payload["kwargs"].items()}
    return LoadedCall(function, name, args, kwargs)
