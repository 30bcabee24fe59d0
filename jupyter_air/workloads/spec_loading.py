"""Loading a workload file: its YAML read with lines, overrides applied, ``WorkloadSpec``
validated, and every problem told at once (which field, on which line, what to write instead)
before anything is created; relative paths made absolute against the file's folder."""

from __future__ import annotations

import difflib
import os
import urllib.parse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..tracking.identity import NAMES as IDENTITY_NAMES
from ..tracking.identity import TOKEN as IDENTITY_TOKEN
from .overrides import OVERRIDDEN, Override, from_override
from .spec import (
    CONTROL_CHARACTER,
    ENV_NAME,
    FIELD_HELP,
    MAX_ENV_VARIABLES,
    MAX_SPEC_BYTES,
    MAX_TEXT,
    REQUIRED_HELP,
    RESERVED_ENV,
    Compute,
    ScheduleSpec,
    SpecError,
    WorkloadSpec,
)
from .yaml_source import Document, Problem, YamlSyntaxError, dotted, load


def load_spec(
    text: str,
    *,
    base_dir: str | os.PathLike[str] | None = None,
    source: str | None = None,
    overrides: Sequence[Override] = (),
) -> WorkloadSpec:
    """Parse and validate a workload file's text, with ``overrides`` (``air run --override``)
    applied on top of it. Relative ``working_dir`` and local ``mlflow_artifact_location`` are
    resolved against ``base_dir`` (the file's folder; default the current folder), and
    ``working_dir`` must exist. Raises SpecError listing every problem: a problem in a field an
    override set names the override instead of a line."""
    base = Path(base_dir or os.getcwd()).resolve()
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError([_too_large(len(text.encode("utf-8", "replace")))], source)
    try:
        document = load(text)
    except YamlSyntaxError as error:
        raise SpecError([error.problem], source) from None
    problems = list(document.problems)
    data = document.data
    if data is None:
        raise SpecError(
            [Problem("", "the file is empty: a workload needs experiment_name and command")],
            source,
        )
    if not isinstance(data, dict):
        raise SpecError(
            [
                Problem(
                    "",
                    "a workload file must be a mapping of fields "
                    "(experiment_name: …, command: …), not a "
                    f"{type(data).__name__}",
                    line=document.lines.get((), 1),
                )
            ],
            source,
        )
    overridden = frozenset(o.path for o in overrides)
    if overrides:
        data = _apply_overrides(data, overrides, source)
    spec: WorkloadSpec | None = None
    try:
        spec = WorkloadSpec.model_validate(data)
    except ValidationError as error:
        problems.extend(_problems(error, document, data))
    problems.extend(_env_problems(data, document))
    problems.extend(_working_dir_problems(data, base, document))
    problems.extend(_checkpoint_problems(data, document))
    if spec is not None:
        spec = _resolve_paths(spec, base)
    if problems:
        problems = [from_override(p, overridden) for p in problems]
        problems.sort(key=lambda p: (p.line or 0, p.path))
        raise SpecError(_unique(problems), source)
    assert spec is not None
    spec._lines = {dotted(path): line for path, line in document.lines.items() if path}
    spec._overridden = overridden
    return spec


def _apply_overrides(data: dict, overrides: Sequence[Override], source: str | None) -> dict:
    import copy

    data = copy.deepcopy(data)
    for override in overrides:
        *parents, last = override.path.split(".")
        target = data
        for depth, part in enumerate(parents):
            child = target.setdefault(part, {})
            if child is None:
                child = target[part] = {}
            if not isinstance(child, dict):
                where = ".".join(parents[: depth + 1])
                problem = Problem(
                    override.path, f"cannot be set: {where} is not a mapping{OVERRIDDEN}"
                )
                raise SpecError([problem], source)
            target = child
        target[last] = override.value
    return data


def _too_large(size: int) -> Problem:
    return Problem(
        "",
        f"the file is {size / (1 << 20):.1f} MiB; a workload file may be at most "
        f"{MAX_SPEC_BYTES >> 20} MiB (put data in files the command reads, not in the YAML)",
    )


def load_spec_file(
    path: str | os.PathLike[str], overrides: Sequence[Override] = ()
) -> tuple[WorkloadSpec, str]:
    """``(spec, text)`` of a workload file (with ``overrides`` applied); relative paths in it
    are relative to its folder."""
    file = Path(path)
    try:
        size = file.stat().st_size
        if size > MAX_SPEC_BYTES:
            raise SpecError([_too_large(size)], str(path))
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SpecError([Problem("", "no such file")], str(path)) from None
    except (OSError, UnicodeDecodeError) as error:
        raise SpecError([Problem("", f"cannot read it: {error}")], str(path)) from None
    spec = load_spec(text, base_dir=file.resolve().parent, source=str(path), overrides=overrides)
    return spec, text


def _problems(error: ValidationError, document: Document, data: dict) -> list[Problem]:
    problems = []
    for item in error.errors():
        loc = tuple(part for part in item["loc"] if not _union_branch(part))
        kind = item["type"]
        if kind == "extra_forbidden":
            problems.append(_unknown(loc, document))
            continue
        path = dotted(loc)
        if loc and loc[0] == "env_variables":
            continue  # reported once by _env_problems, with names
        if kind == CONTROL_CHARACTER:
            problems.append(Problem(path, item["msg"], line=document.line_of(loc, value=True)))
            continue
        if kind == "missing":
            parent = loc[:-1]
            line = document.line_of(parent) if parent else None
            message = REQUIRED_HELP.get(path, "required field is missing")
            problems.append(Problem(path, message, line=line))
            continue
        key = path if path in FIELD_HELP else dotted(loc[:1])
        message = FIELD_HELP.get(key, item["msg"])
        value = _get(data, loc)
        hint = None
        if not isinstance(value, (dict, list)):
            hint = f"got {_shown(value)}"
        problems.append(Problem(key, message, line=document.line_of(loc, value=True), hint=hint))
    return problems


def _union_branch(part: Any) -> bool:
    # pydantic names the branch of a union it tried ('str', 'list[str]', 'function-after[…]')
    return isinstance(part, str) and (
        part in ("str", "list[str]", "float", "int")
        or part.startswith(("function-", "constrained-"))
    )


def _unknown(loc: tuple, document: Document) -> Problem:
    path = dotted(loc)
    name = str(loc[-1])
    parent = loc[:-1]
    model: type[BaseModel] = _SECTIONS.get(parent, WorkloadSpec)
    choices = list(model.model_fields)
    hint = ""
    match = difflib.get_close_matches(name, choices, n=1, cutoff=0.6)
    if match:
        hint = f"did you mean '{match[0]}'?"
    elif model is WorkloadSpec:
        nested = difflib.get_close_matches(name, list(Compute.model_fields), n=1, cutoff=0.75)
        if nested:
            hint = f"did you mean 'compute.{nested[0]}'?"
    if not hint:
        hint = "valid fields: " + ", ".join(choices)
    return Problem(path, "unknown field", line=document.line_of(loc), hint=hint)


_SECTIONS: dict[tuple, type[BaseModel]] = {("compute",): Compute, ("schedule",): ScheduleSpec}


def _env_problems(data: dict, document: Document) -> list[Problem]:
    env = data.get("env_variables")
    if env is None:
        return []
    if not isinstance(env, dict):
        return [
            Problem(
                "env_variables",
                FIELD_HELP["env_variables"],
                line=document.line_of(("env_variables",), value=True),
            )
        ]
    problems = []
    if len(env) > MAX_ENV_VARIABLES:
        return [
            Problem(
                "env_variables",
                f"has {len(env)} variables; at most {MAX_ENV_VARIABLES}",
                line=document.line_of(("env_variables",)),
            )
        ]
    for name, value in env.items():
        loc = ("env_variables", name)
        line = document.line_of(loc)
        where = f"env_variables.{name}"
        if not isinstance(name, str) or not ENV_NAME.match(name):
            problems.append(
                Problem(
                    where,
                    "not a valid variable name (letters, digits and _, not starting with a digit)",
                    line=line,
                )
            )
        elif name in (*IDENTITY_NAMES, IDENTITY_TOKEN):  # stored with the job run: never
            problems.append(
                Problem(
                    where,
                    "is a credential: it never belongs in a workload's YAML",
                    line=line,
                    hint="jobs get it from your environment or ~/.mlflow/credentials "
                    "(docs/teams.md)",
                )
            )
        elif name in RESERVED_ENV:
            problems.append(
                Problem(
                    where,
                    "is set by jupyter-air for each attempt",
                    line=line,
                    hint="use compute.num_accelerators instead"
                    if name == "CUDA_VISIBLE_DEVICES"
                    else None,
                )
            )
        if value is None or isinstance(value, (dict, list)):
            problems.append(Problem(where, "must be a string, a number or true/false", line=line))
        elif isinstance(value, str) and len(value) > MAX_TEXT:
            problems.append(Problem(where, "is longer than 64 KiB", line=line))
    return problems


def _working_dir_problems(data: dict, base: Path, document: Document) -> list[Problem]:
    value = data.get("working_dir")
    if not isinstance(value, str) or not value.strip():
        return []
    folder = (base / Path(value).expanduser()).resolve()
    if folder.is_dir():
        return []
    what = "is not a folder" if folder.exists() else "does not exist"
    return [
        Problem(
            "working_dir",
            f"{str(folder)!r} {what}",
            line=document.line_of(("working_dir",), value=True),
        )
    ]


def _resolve_paths(spec: WorkloadSpec, base: Path) -> WorkloadSpec:
    working = base
    if spec.working_dir is not None:
        working = (base / Path(spec.working_dir).expanduser()).resolve()
    update = {
        "working_dir": str(working),
        "mlflow_artifact_location": _local_resolved(spec.mlflow_artifact_location, base),
        "checkpoint_location": _local_resolved(spec.checkpoint_location, base),
    }
    return spec.model_copy(update=update)


def _local_resolved(location: str | None, base: Path) -> str | None:
    """A path relative to ``base`` made absolute; a URI kept as it is."""
    if location and not urllib.parse.urlparse(location).scheme:
        return str((base / Path(location).expanduser()).resolve())
    return location


def _checkpoint_problems(data: dict, document: Document) -> list[Problem]:
    """A checkpoint URI whose store this machine cannot reach (fsspec missing)."""
    value = data.get("checkpoint_location")
    if not isinstance(value, str):
        return []
    scheme = urllib.parse.urlparse(value).scheme
    if len(scheme) <= 1 or scheme == "file":
        return []
    try:
        import fsspec

        fsspec.get_filesystem_class(scheme)
    except (ImportError, ValueError) as error:
        return [
            Problem(
                "checkpoint_location",
                f"{scheme}:// needs fsspec and its store's package here ({error})",
                line=document.line_of(("checkpoint_location",), value=True),
                hint="pip install fsspec (and e.g. s3fs), or use a folder path",
            )
        ]
    return []


def _shown(value: Any) -> str:
    """A value as it reads in YAML."""
    import json

    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def _get(data: Any, loc: tuple) -> Any:
    for part in loc:
        if isinstance(data, dict):
            data = data.get(part)
        elif isinstance(data, list) and isinstance(part, int) and part < len(data):
            data = data[part]
        else:
            return None
    return data


def _unique(problems: list[Problem]) -> list[Problem]:
    seen, out = set(), []
    for p in problems:
        key = (p.path, p.message, p.line)
        if p.path in FIELD_HELP:
            key = (p.path, "", p.line)  # one problem per field (a union reports each branch)
        if key not in seen:
            seen.add(key)
            out.append(p)
    return out
