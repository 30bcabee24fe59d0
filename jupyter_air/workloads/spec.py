"""The workload YAML's fields: a pydantic model of them, their limits, what each must be when it
is wrong (``FIELD_HELP``) and ``SpecError``, which lists every problem with its field and line.
``spec_loading.py`` reads a file into it.

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
queue_timeout_minutes: 120            # at most this long QUEUED for a busy cluster's resources
working_dir: .                        # default: the YAML file's folder
code_source: snapshot                 # or live; default snapshot
env_variables: {LR: "3e-5"}
schedule: {cron: "0 3 * * *", timezone: Europe/Paris}  # air schedule create (optional)
```
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator
from pydantic_core import PydanticCustomError

from ..config import ATTEMPT, CHECKPOINT_DIR, JOB_ID
from ..rendering import control_character
from .overrides import OVERRIDDEN, is_overridden
from .yaml_source import Problem

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
    """Restarts torchrun (torch elastic) may make of the ranks within one attempt when one
    crashes, every node's together, before the attempt fails (given to it as PET_MAX_RESTARTS,
    with torch's c10d rendezvous; the attempt's MLflow run records how many it made)."""
    checkpoint_location: Text | None = None
    """Where the job run's checkpoints are kept (what the command writes in
    $JUPYTER_AIR_CHECKPOINT_DIR): a folder (relative to the YAML file's folder) or an fsspec URI
    such as s3://bucket/path (fsspec and its store's package installed)."""
    timeout_minutes: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_MINUTES)] | None = None
    """Per attempt: an attempt still running after this long is stopped and counts as failed
    (so it is retried)."""
    queue_timeout_minutes: Annotated[float, Field(gt=0, le=MAX_TIMEOUT_MINUTES)] | None = None
    """How long an attempt may wait QUEUED for resources a busy cluster has but are in use;
    after that the job run fails with the reason it waited (not retried). Default: as long
    as it takes."""
    working_dir: Text | None = None
    """The workload's folder, relative to the YAML file's folder; must exist. The command runs
    in its snapshot (code_source) or, live, in the folder itself."""
    code_source: Literal["snapshot", "live"] | None = None
    """snapshot: working_dir is copied into the job's folder at submission (respecting
    .gitignore in a git repository and an .airignore in the folder; at most 20,000 files and
    256 MiB) and every attempt, retries
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
        if is_overridden(path, self._overridden):
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

    @field_validator("timeout_minutes", "queue_timeout_minutes", mode="before")
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
    "queue_timeout_minutes": (
        f"must be a positive number of minutes, at most {MAX_TIMEOUT_MINUTES}"
    ),
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
    "queue_timeout_minutes": "none (as long as it takes)",
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
