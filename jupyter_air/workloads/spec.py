"""The workload YAML: a pydantic model of its fields, and a loader whose errors say which field, on
which line, and what to write instead — every problem at once, before anything is created.

```yaml
experiment_name: my-training          # required
mlflow_run_name: baseline-lr3e5       # default: experiment_name
mlflow_artifact_location: ./artifacts # used when the experiment is created
compute: {num_accelerators: 2, accelerator_type: GPU, num_nodes: 1}
command: torchrun --nproc_per_node=2 train.py
max_retries: 2
max_restarts: 1                       # torchrun restarts a crashed rank's group in place
checkpoint_location: s3://bucket/ckpt # default: the job run's folder (docs/checkpoints.md)
timeout_minutes: 60                   # per attempt
working_dir: .                        # default: the YAML file's folder
code_source: snapshot                 # or live; default snapshot
env_variables: {LR: "3e-5"}
schedule: {cron: "0 3 * * *", timezone: Europe/Paris}  # air schedule create (optional)
```
"""

from __future__ import annotations

import difflib
import os
import re
import urllib.parse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from ..config import ATTEMPT, CHECKPOINT_DIR, JOB_ID
from ..rendering import control_character
from ..tracking.identity import NAMES as IDENTITY_NAMES
from ..tracking.identity import TOKEN as IDENTITY_TOKEN
from .yaml_source import Document, Problem, YamlSyntaxError, dotted, load

# what a workload can ask for at most: beyond these it cannot be meant (one error, before
# anything is created); a backend may allow less (the local one: LOCAL_MAX_NODES)
MAX_SPEC_BYTES = 1 << 20
MAX_ACCELERATORS = 64  # per node
MAX_NODES = 256
MAX_RETRIES = 100
MAX_TIMEOUT_MINUTES = 30 * 24 * 60
MAX_ENV_VARIABLES = 1000
MAX_TEXT = 64 * 1024  # a command, an environment variable's value
MAX_NAME = 250  # MLflow's limit for a run name
MAX_COMMAND_ITEMS = 10_000
MAX_CRON = 200
CONTROL_CHARACTER = "control_character"  # the error of a name holding one

Accelerators = Annotated[int, Field(strict=True, gt=0, le=MAX_ACCELERATORS)]
Nodes = Annotated[int, Field(strict=True, gt=0, le=MAX_NODES)]
Retries = Annotated[int, Field(strict=True, ge=0, le=MAX_RETRIES)]
Name = Annotated[str, Field(strict=True, min_length=1, max_length=MAX_NAME)]
Text = Annotated[str, Field(strict=True, min_length=1, max_length=MAX_TEXT)]
ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
MODEL_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9 _.\-]*$")

# set by jupyter-air for every attempt and node: a spec may not set them
RESERVED_ENV = frozenset(
    {
        "MLFLOW_RUN_ID",
        "MLFLOW_EXPERIMENT_ID",
        "MLFLOW_EXPERIMENT_NAME",
        "MLFLOW_TRACKING_URI",
        "CUDA_VISIBLE_DEVICES",
        "NODE_RANK",
        "NNODES",
        JOB_ID.name,
        ATTEMPT.name,
        CHECKPOINT_DIR.name,
    }
)


class Compute(BaseModel):
    """What each attempt needs: ``num_nodes`` nodes with ``num_accelerators`` accelerators each."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    num_accelerators: Accelerators = 1
    """Accelerators per node; the node's command sees exactly these GPUs
    (CUDA_VISIBLE_DEVICES)."""
    accelerator_type: str = "GPU"
    """GPU (any NVIDIA GPU), CPU (no GPU at all: CUDA_VISIBLE_DEVICES is empty), or a GPU model
    matched against the device names NVML reports (H100 matches "NVIDIA H100 80GB HBM3"; case
    does not matter)."""
    num_nodes: Nodes = 1
    """Nodes per attempt; the command runs once per node."""
    backend: Literal["local", "ray"] | None = None  # None: chosen by backends.choice
    """local (every node on this machine) or ray (each node on its own Ray node,
    docs/clusters.md); when absent: c.JupyterAir.cluster / JUPYTER_AIR_CLUSTER, else ray if
    RAY_ADDRESS is set, else local."""

    @field_validator("accelerator_type", mode="before")
    @classmethod
    def _accelerator_type(cls, value: Any) -> Any:
        if not isinstance(value, str) or not MODEL_NAME.match(value.strip()):
            raise ValueError("accelerator type")
        value = value.strip()
        return value.upper() if value.upper() in ("GPU", "CPU") else value

    @property
    def uses_gpus(self) -> bool:
        return self.accelerator_type != "CPU"


class ScheduleSpec(BaseModel):
    """When ``air schedule create`` runs the workload: a cron expression in a timezone, what to
    do when the previous run still runs (``overlap``) and with slots missed while no Jupyter
    server ran (``catch_up``). ``air run`` ignores it."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    cron: Annotated[str, Field(strict=True, min_length=1, max_length=MAX_CRON)]
    """Five fields (minute hour day-of-month month day-of-week, e.g. "0 3 * * *") or @hourly,
    @daily, @weekly, @monthly, @yearly."""
    timezone: Annotated[str, Field(strict=True, min_length=1, max_length=MAX_NAME)] = "UTC"
    """The IANA timezone the cron expression is read in (Europe/Paris)."""
    overlap: Literal["skip", "queue", "allow"] = "skip"
    """A firing while the schedule's previous run still runs: skip it, queue it (at most one,
    run when the previous ends) or allow it (both run)."""
    catch_up: Literal["latest", "none"] = "latest"
    """Slots missed while no Jupyter server ran: run the latest of them, or none (wait for the
    next)."""

    @field_validator("cron", mode="after")
    @classmethod
    def _cron(cls, value: str) -> str:
        from .cron import check_cron

        return check_cron(value)

    @field_validator("timezone", mode="after")
    @classmethod
    def _timezone(cls, value: str) -> str:
        from .cron import check_timezone

        return check_timezone(value)


class WorkloadSpec(BaseModel):
    """A workload as submitted: one job run, each attempt a new MLflow run in the experiment."""

    model_config = ConfigDict(extra="forbid", use_attribute_docstrings=True)

    experiment_name: Name
    """MLflow experiment of the runs; created when missing (tagged as a model-training
    experiment), else runs are added to it."""
    mlflow_run_name: Name | None = None
    """Name of each attempt's MLflow run."""
    mlflow_artifact_location: Text | None = None
    """Artifact location given to the experiment when it is created. A relative path is relative
    to the YAML file's folder; a URI (s3://…) is kept as it is. If the experiment already exists
    with another location, the submission is refused (an experiment's location cannot change)."""
    compute: Compute = Field(default_factory=Compute)
    """What each attempt needs: num_nodes nodes with num_accelerators accelerators each."""
    command: Text | Annotated[list[Text], Field(max_length=MAX_COMMAND_ITEMS)]
    """A string, run by /bin/sh -c (so $NODE_RANK and && work), or a list of strings run as it
    is ([python, train.py, --lr, "3e-5"])."""
    max_retries: Retries = 0
    """Attempts after the first one that fails (non-zero exit, killed by a signal, or timed
    out)."""
    max_restarts: Retries = 0
    """Restarts torchrun (torch elastic) may make of a node's ranks within one attempt when one
    crashes, before the attempt fails (given to it as PET_MAX_RESTARTS; the attempt's MLflow run
    records how many it made)."""
    checkpoint_location: Text | None = None
    """Where the job run's checkpoints are kept (what the command writes in
    $JUPYTER_AIR_CHECKPOINT_DIR): a folder (relative to the YAML file's folder) or an fsspec URI
    such as s3://bucket/path (fsspec and its store's package installed)."""
    timeout_minutes: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_MINUTES)] | None = None
    """Per attempt: an attempt still running after this long is stopped and counts as failed
    (so it is retried)."""
    working_dir: Text | None = None
    """The workload's folder, relative to the YAML file's folder; must exist. The command runs
    in its snapshot (code_source) or, live, in the folder itself."""
    code_source: Literal["snapshot", "live"] | None = None
    """snapshot: working_dir is copied into the job's folder at submission (respecting
    .gitignore in a git repository; at most 20,000 files and 256 MiB) and every attempt, retries
    too, runs the copy (on a Ray cluster, each node runs a copy of its own, sent through Ray);
    live: every attempt runs working_dir as it is when it starts."""
    env_variables: Annotated[dict[str, str], Field(max_length=MAX_ENV_VARIABLES)] = Field(
        default_factory=dict
    )
    """Extra environment variables (NAME: value; numbers and true/false become strings). Those
    jupyter-air sets for each attempt cannot be set."""
    schedule: ScheduleSpec | None = None
    """When set, `air schedule create FILE` runs the workload on this schedule (cron, timezone,
    overlap, catch_up); `air run` ignores it."""

    _lines: dict[str, int] = PrivateAttr(default_factory=dict)  # dotted field → line
    _overridden: frozenset[str] = PrivateAttr(default_factory=frozenset)  # from --override

    def problem(self, path: str, message: str, hint: str | None = None) -> Problem:
        """A problem with one of the file's fields, found after loading (GPUs, a backend's
        limits), with the field's line — or naming the override that set it."""
        if _is_overridden(path, self._overridden):
            return Problem(path, message + OVERRIDDEN, hint=hint)
        return Problem(path, message, line=self._lines.get(path), hint=hint)

    @field_validator("experiment_name", "mlflow_run_name", mode="after")
    @classmethod
    def _no_control_character(cls, value: Any) -> Any:
        """Names are shown in terminals, panels and MLflow's UI: a control character there
        acts (ESC can set a terminal's title or clear its screen) instead of showing."""
        found = control_character(value) if isinstance(value, str) else None
        if found is not None:
            raise PydanticCustomError(
                CONTROL_CHARACTER,
                "contains the control character {found}: a name is shown in terminals and "
                "pages, where it would act instead of showing",
                {"found": found},
            )
        return value

    @field_validator("experiment_name", "mlflow_run_name", "command", mode="after")
    @classmethod
    def _not_blank(cls, value: Any) -> Any:
        if isinstance(value, str) and not value.strip():
            raise ValueError("blank")
        if isinstance(value, list) and (not value or not all(isinstance(v, str) for v in value)):
            raise ValueError("empty list")
        return value

    @field_validator("timeout_minutes", mode="before")
    @classmethod
    def _number(cls, value: Any) -> Any:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError("number")
        return value

    @field_validator("env_variables", mode="before")
    @classmethod
    def _env(cls, value: Any) -> Any:
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise ValueError("mapping")
        out: dict[str, str] = {}
        for name, item in value.items():
            if isinstance(item, bool):
                out[str(name)] = "true" if item else "false"
            elif isinstance(item, (str, int, float)):
                out[str(name)] = str(item)
            else:
                out[str(name)] = item  # rejected below with the field's own message
        return out

    @property
    def run_name(self) -> str:
        return self.mlflow_run_name or self.experiment_name

    @property
    def uses_shell(self) -> bool:
        return isinstance(self.command, str)

    def command_text(self) -> str:
        if isinstance(self.command, str):
            return self.command
        import shlex

        return shlex.join(self.command)


FIELD_HELP: dict[str, str] = {
    "experiment_name": (
        "must be a non-empty string: the MLflow experiment (created if missing), at most "
        f"{MAX_NAME} characters"
    ),
    "mlflow_run_name": f"must be a non-empty string, at most {MAX_NAME} characters",
    "mlflow_artifact_location": "must be a non-empty string: a folder path or an artifact URI",
    "compute": "must be a mapping with num_accelerators, accelerator_type, num_nodes, backend",
    "compute.num_accelerators": f"must be an integer from 1 to {MAX_ACCELERATORS} (per node)",
    "compute.num_nodes": f"must be an integer from 1 to {MAX_NODES}",
    "compute.accelerator_type": "must be GPU, CPU, or a GPU model name such as H100 or A100",
    "compute.backend": (
        "must be local (every node on this machine) or ray (each node on its own Ray node)"
    ),
    "command": (
        "must be a non-empty string (run by /bin/sh) or a list of strings "
        "(e.g. torchrun --nproc_per_node=2 train.py), at most 64 KiB each"
    ),
    "max_retries": f"must be an integer from 0 to {MAX_RETRIES}",
    "max_restarts": f"must be an integer from 0 to {MAX_RETRIES}",
    "checkpoint_location": "must be a non-empty string: a folder path or an fsspec URI",
    "timeout_minutes": f"must be a positive number of minutes, at most {MAX_TIMEOUT_MINUTES}",
    "working_dir": "must be a folder path (a non-empty string)",
    "code_source": (
        "must be snapshot (every attempt runs a copy made at submission) or live (every "
        "attempt runs working_dir as it is then)"
    ),
    "env_variables": f"must be a mapping of NAME: value (at most {MAX_ENV_VARIABLES})",
    "schedule": "must be a mapping with cron, timezone, overlap, catch_up",
    "schedule.cron": (
        "must be a cron expression of 5 fields (minute hour day-of-month month day-of-week, "
        "e.g. '0 3 * * *') or @hourly, @daily, @weekly, @monthly, @yearly"
    ),
    "schedule.timezone": "must be an IANA timezone such as UTC or Europe/Paris",
    "schedule.overlap": (
        "must be skip, queue or allow (what a firing does while the previous run still runs)"
    ),
    "schedule.catch_up": (
        "must be latest (after downtime, run the latest missed slot) or none (wait for the next)"
    ),
}

# what a field left out means, where its default is not a value (the field reference shows it)
UNSET_MEANS = {
    "mlflow_run_name": "experiment_name",
    "mlflow_artifact_location": "the tracking server's default",
    "checkpoint_location": "the job run's folder",
    "compute.backend": "chosen (see the field's help)",
    "timeout_minutes": "none",
    "working_dir": "the YAML file's folder",
    "code_source": "snapshot",
    "schedule": "none",
}

REQUIRED_HELP = {
    "experiment_name": "required: the MLflow experiment to put the runs in",
    "command": "required: the command to run (e.g. torchrun --nproc_per_node=2 train.py)",
    "schedule.cron": "required: when to run, as a cron expression (e.g. '0 3 * * *')",
}


class SpecError(ValueError):
    """Everything wrong with a workload file, each problem with its field and line."""

    def __init__(self, problems: list[Problem], source: str | None = None) -> None:
        self.problems = problems
        self.source = source
        super().__init__(self.render())

    def render(self) -> str:
        where = f"{self.source}: " if self.source else ""
        if len(self.problems) == 1:
            return f"{where}{self.problems[0]}"
        head = f"{where}{len(self.problems)} problems"
        return head + "".join(f"\n  {p}" for p in self.problems)

    def to_json(self) -> list[dict[str, Any]]:
        return [
            {"field": p.path, "message": p.message, "line": p.line, "column": p.column}
            for p in self.problems
        ]


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
        problems = [_from_override(p, overridden) for p in problems]
        problems.sort(key=lambda p: (p.line or 0, p.path))
        raise SpecError(_unique(problems), source)
    assert spec is not None
    spec._lines = {dotted(path): line for path, line in document.lines.items() if path}
    spec._overridden = overridden
    return spec


# air run --override FIELD=VALUE ---------------------------------------------------------------
OVERRIDDEN = " (from --override)"
MAX_OVERRIDES = 100


@dataclass(frozen=True)
class Override:
    """``FIELD=VALUE`` of ``air run --override``: a dotted field path and its YAML value."""

    path: str
    value: Any
    text: str  # as given

    @classmethod
    def parse(cls, text: str) -> Override:
        """Raises ValueError saying what is wrong with ``text``."""
        import yaml

        name, equals, raw = text.partition("=")
        name = name.strip()
        if not equals or not name:
            raise ValueError(f"{text!r} is not FIELD=VALUE (e.g. compute.num_accelerators=4)")
        parts = name.split(".")
        if not all(parts) or any(not re.fullmatch(r"[A-Za-z0-9_\-]+", p) for p in parts):
            raise ValueError(f"{name!r} is not a dotted field path (e.g. env_variables.FOO)")
        if not raw.strip():
            return cls(name, "", text)
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as error:
            raise ValueError(f"{text!r}: the value is not YAML ({error})") from None
        return cls(name, value, text)


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


def _is_overridden(path: str, overridden: frozenset[str]) -> bool:
    return any(path == o or path.startswith(o + ".") for o in overridden)


def _from_override(problem: Problem, overridden: frozenset[str]) -> Problem:
    if not problem.path or not _is_overridden(problem.path, overridden):
        return problem
    return Problem(problem.path, problem.message + OVERRIDDEN, hint=problem.hint)


def overrides_comment(overrides: Sequence[Override]) -> str:
    """What is appended to the stored workload text of a job run submitted with overrides: the
    file stays as it was submitted, the overrides follow as comments (``recorded_overrides``
    reads them back)."""
    if not overrides:
        return ""
    lines = "".join(f"#   {o.text}\n" for o in overrides)
    return f"\n{OVERRIDES_HEADER}\n{lines}"


OVERRIDES_HEADER = "# air run --override (applied on top of the file above):"


def recorded_overrides(spec_yaml: str | None) -> list[str]:
    """The ``FIELD=VALUE`` overrides a job run was submitted with (``overrides_comment``)."""
    if not spec_yaml or OVERRIDES_HEADER not in spec_yaml:
        return []
    tail = spec_yaml.rsplit(OVERRIDES_HEADER, 1)[1]
    return [line[4:] for line in tail.splitlines() if line.startswith("#   ")]


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
