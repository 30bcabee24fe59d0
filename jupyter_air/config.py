"""Every ``JUPYTER_AIR_*`` environment variable, in one place: its name, what it does, its type
and default, and whether a user sets it or jupyter-air hands it to a process it starts.

The rest of the package asks a ``Setting`` here (``KEEP_NODES_S.get()``, ``JOB_ID.name``)
instead of naming variables itself, so a setting is read one way everywhere and listed once:
``docs/configuration.md`` is written from ``SETTINGS`` (``python -m jupyter_air.config``) and a
test keeps the two the same. A number that cannot be read is one warning naming the variable and
the default used instead; the job goes on. The data-folder rule (``data_dir``) lives here too:
the Jupyter server, kernels, supervisors and the CLI find the same folder by it.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

log = logging.getLogger(__name__)

USER = "user"  # set by people (or by the Jupyter server for its kernels and terminals)
HANDOFF = "handoff"  # set by jupyter-air for a process it starts, read by that process


@dataclass(frozen=True)
class Setting:
    """One environment variable. ``low``/``high``/``default`` apply to numbers."""

    name: str
    doc: str
    kind: str = USER
    default: float | None = None
    low: float | None = None
    high: float | None = None
    unit: str = ""

    def text(self, environ: Mapping[str, str] | None = None) -> str | None:
        """Its value, stripped; None when unset or empty."""
        value = (os.environ if environ is None else environ).get(self.name, "").strip()
        return value or None

    def number(self, environ: Mapping[str, str] | None = None) -> float | None:
        """Its value as a number within ``low``..``high`` (clamped); the default when unset or
        unreadable (a warning says so)."""
        value = self.text(environ)
        if value is None:
            return self.default
        try:
            number = float(value)
            if number != number:  # NaN
                raise ValueError(value)
        except ValueError:
            log.warning(
                "jupyter-air: %s=%r is not a number%s; using %s",
                self.name,
                value,
                f" of {self.unit}" if self.unit else "",
                "none" if self.default is None else f"{self.default:g}",
            )
            return self.default
        if self.low is not None:
            number = max(self.low, number)
        if self.high is not None:
            number = min(self.high, number)
        return number

    def get(self, environ: Mapping[str, str] | None = None) -> float:
        """``number()`` of a setting that has a default."""
        value = self.number(environ)
        assert value is not None, f"{self.name} has no default"
        return value

    def __str__(self) -> str:
        return self.name


def _s(
    name: str,
    doc: str,
    *,
    kind: str = USER,
    default: float | None = None,
    low: float | None = None,
    high: float | None = None,
    unit: str = "",
) -> Setting:
    return Setting(f"JUPYTER_AIR_{name}", doc, kind, default, low, high, unit)


# set by people ---------------------------------------------------------------------------------
DATA_DIR = _s(
    "DATA_DIR",
    "jupyter-air's data folder: the job store and logs, the embedded MLflow's store, GPU holds, "
    "run folders. The Jupyter server sets it for its kernels and terminals "
    "(c.JupyterAir.data_dir); default `<jupyter data dir>/air`.",
)
CLUSTER = _s(
    "CLUSTER",
    "Where workloads and `nodes=M` calls run when they do not say: a Ray address, `ray` "
    "(RAY_ADDRESS or Ray's own discovery) or `local`. The Jupyter server sets it for its kernels "
    "from c.JupyterAir.cluster.",
)
GPU_BACKEND = _s(
    "GPU_BACKEND",
    "The GPU panel's backend: `auto`, `nvml`, `simulated` or `none`; wins over "
    "c.JupyterAir.gpu_backend.",
)
SIMULATED_GPUS = _s(
    "SIMULATED_GPUS", "GPUs of the simulated backend, 0 to 64 (c.JupyterAir.simulated_gpus)."
)
SIMULATED_FAULTS = _s(
    "SIMULATED_FAULTS",
    "Health faults of the simulated GPUs, e.g. `1:xid,2:ecc` (GPU index, `:`, one of `xid`, "
    "`ecc`, `thermal`, `hw_slowdown`, `row_remap_failure`).",
)
LOG_RETENTION_DAYS = _s(
    "LOG_RETENTION_DAYS",
    "Days a job run's logs are kept after it ends; 0 keeps them forever "
    "(c.JupyterAir.log_retention_days).",
    default=60.0,
    unit="days",
)
MOST_KEEP_S = 3600.0
KEEP_NODES_S = _s(
    "KEEP_NODES_S",
    "Seconds a cleanly ended `nodes=M` call's Ray nodes are kept for the next call of the same "
    "shape, 0 to 3600 (the `keep_nodes` option wins).",
    default=60.0,
    low=0.0,
    high=MOST_KEEP_S,
    unit="seconds",
)
KEEP_RUNNERS_S = _s(
    "KEEP_RUNNERS_S",
    "Seconds a kernel keeps its Ray connection and its node runners (one Ray worker process on "
    "each Ray node its `nodes=M` calls used, and one more on a GPU node for its bundles' GPU "
    "task, holding no CPU or GPU) after its last call, so that a call placed anew starts "
    "without new Ray workers; and how long the standby supervisor a "
    "Ray job run leaves (connected, with a runner on each Ray node) waits for the data "
    "folder's next Ray job run; 0 to 3600, 0: they end with each call, and no standby.",
    default=600.0,
    low=0.0,
    high=MOST_KEEP_S,
    unit="seconds",
)
RAY_CONNECT_TIMEOUT_S = _s(
    "RAY_CONNECT_TIMEOUT_S",
    "Seconds to wait for a Ray cluster's address to answer before refusing the submission.",
    default=10.0,
    low=1.0,
    unit="seconds",
)
RAY_PLACEMENT_TIMEOUT_S = _s(
    "RAY_PLACEMENT_TIMEOUT_S",
    "Seconds a .distributed(nodes=M) call waits for its Ray nodes to be placed before it "
    "fails (a workload waits QUEUED instead; queue_timeout_minutes limits that).",
    default=60.0,
    low=1.0,
    unit="seconds",
)
RAY_LOST_S = _s(
    "RAY_LOST_S",
    "Seconds without an answer from the Ray cluster after which a running attempt fails.",
    default=60.0,
    low=1.0,
    unit="seconds",
)
KILL_GRACE_S = _s(
    "KILL_GRACE_S",
    "Seconds between SIGTERM and SIGKILL when a workload's processes are stopped.",
    default=10.0,
    low=0.0,
    unit="seconds",
)
LOG_UPLOAD_INTERVAL_S = _s(
    "LOG_UPLOAD_INTERVAL_S",
    "Seconds between uploads of a running attempt's logs to its MLflow run (at least 1).",
    default=30.0,
    low=1.0,
    unit="seconds",
)
SYSTEM_METRICS_INTERVAL_S = _s(
    "SYSTEM_METRICS_INTERVAL_S",
    "Seconds between system-metric samples of a run on each node (default: MLflow's own, 10).",
    low=0.1,
    unit="seconds",
)
CHECKPOINT_MAX_GB = _s(
    "CHECKPOINT_MAX_GB",
    "Most a job run's checkpoints may hold (every node's JUPYTER_AIR_CHECKPOINT_DIR together); "
    "past it the attempt fails, saying so, and is not retried.",
    default=50.0,
    low=0.001,
    unit="GB",
)
FORK_RANKS = _s(
    "FORK_RANKS",
    "`0`: each rank of a `.distributed()` call is an interpreter of its own "
    "(`python -m jupyter_air.launch.worker`) instead of a fork of its launcher agent, which has "
    "imported torch already (Linux): about a second more a call.",
)
AGENT_TOKEN = _s(
    "AGENT_TOKEN",
    "`air agent`'s token for the Jupyter server it reports to (kept out of the process list, "
    "unlike --token).",
)

# handed by jupyter-air to the processes it starts ------------------------------------------------
JOB_ID = _s(
    "JOB_ID",
    "The job run a workload's process belongs to (its nodes and their children).",
    kind=HANDOFF,
)
ATTEMPT = _s("ATTEMPT", "The attempt (1, 2, …) a workload's process belongs to.", kind=HANDOFF)
WORKING_DIR = _s(
    "WORKING_DIR", "The working folder submitted (the command runs in its snapshot).", kind=HANDOFF
)
CHECKPOINT_DIR = _s(
    "CHECKPOINT_DIR",
    "A folder on the node for the job run's checkpoints: the same path in every attempt, copied "
    "home while the attempt runs, put back on every node before a retry (docs/checkpoints.md).",
    kind=HANDOFF,
)
GROUP = _s(
    "GROUP",
    "The node group a command belongs to (on this machine or a Ray node): what it leaves is "
    "found by it.",
    kind=HANDOFF,
)
NODE_IP = _s("NODE_IP", "The address Ray knows for the node a command runs on.", kind=HANDOFF)
AGENT_PID = _s(
    "AGENT_PID", "The pid of a `@distributed` call's node agent, for its ranks.", kind=HANDOFF
)
MLFLOW_SERVER_TOKEN = _s(
    "MLFLOW_SERVER_TOKEN",
    "The embedded MLflow server's token (its guard gives it to MLflow, never to a command line).",
    kind=HANDOFF,
)
MLFLOW_UI = _s(
    "MLFLOW_UI",
    "Where the MLflow UI is for run links (a path on the Jupyter server, or a URL).",
    kind=HANDOFF,
)
BASE_URL = _s("BASE_URL", "The Jupyter server's base URL, for links from kernels.", kind=HANDOFF)
SERVER_URL = _s(
    "SERVER_URL",
    "The Jupyter server's full URL, for links printed outside JupyterLab.",
    kind=HANDOFF,
)
ROOT_DIR = _s("ROOT_DIR", "The Jupyter server's root folder (notebook paths).", kind=HANDOFF)
NOTEBOOK_PATH = _s(
    "NOTEBOOK_PATH", "The notebook a kernel runs, also after a rename.", kind=HANDOFF
)
WIDGETS = _s(
    "WIDGETS",
    "`1`: the kernel's frontend shows widgets (JupyterLab with jupyter-air).",
    kind=HANDOFF,
)

# the data folder ------------------------------------------------------------------------------
# torch elastic's restarts (max_restarts): a fresh rendezvous store for every round. With the
# store its agent shares across rounds (torch's default), a restarted round's ranks read the
# addresses of the round before and fail ("Gloo connectFullMesh failed … Connection refused").
RESTARTED_RANKS_ENV = {"TORCH_DISABLE_SHARE_RDZV_TCP_STORE": "1"}

SERVER_RECORD = re.compile(r"^jupyter-air-(?P<pid>\d+)\.json$")


def data_dir(
    explicit: str | os.PathLike[str] | None = None, *, follow_servers: bool = True
) -> Path:
    """jupyter-air's data folder — the one rule for the Jupyter server, kernels, supervisors
    and the CLI: ``explicit`` (``c.JupyterAir.data_dir``, ``--data-dir``), else
    ``DATA_DIR``, else (``follow_servers``: for clients, not for a server deciding
    its own) the one the running jupyter-air servers use, else ``<jupyter data dir>/air``."""
    if explicit:
        return Path(explicit).expanduser()
    env = DATA_DIR.text()
    if env:
        return Path(env).expanduser()
    served = served_data_dir() if follow_servers else None
    if served is not None:
        return served
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "air"


def record_server(runtime_dir: str | os.PathLike[str], data: Path) -> Path:
    """Say, in Jupyter's runtime folder, which data folder this server process uses."""
    folder = Path(runtime_dir)
    folder.mkdir(parents=True, exist_ok=True)
    from .files import write_json

    record = folder / f"jupyter-air-{os.getpid()}.json"
    write_json(record, {"pid": os.getpid(), "data_dir": str(data)}, mode=0o644)
    return record


def served_data_dir(runtime_dir: str | os.PathLike[str] | None = None) -> Path | None:
    """The data folder of the running jupyter-air servers when they all use the same one; None
    when none runs, or when they use different ones (the caller then keeps the default)."""
    found = set(served_data_dirs(runtime_dir).values())
    return found.pop() if len(found) == 1 else None


def served_data_dirs(runtime_dir: str | os.PathLike[str] | None = None) -> dict[int, Path]:
    """The data folder of each running jupyter-air server, by its pid (the ``pid`` of its
    ``jpserver-<pid>.json``)."""
    from .pids import pid_alive

    if runtime_dir is None:
        from jupyter_core.paths import jupyter_runtime_dir

        runtime_dir = jupyter_runtime_dir()
    try:
        names = os.listdir(runtime_dir)
    except OSError:
        return {}
    found: dict[int, Path] = {}
    for name in names:
        match = SERVER_RECORD.match(name)
        if not match or not pid_alive(int(match["pid"])):
            continue
        try:
            with open(os.path.join(runtime_dir, name), encoding="utf-8") as file:
                found[int(match["pid"])] = Path(str(json.load(file)["data_dir"]))
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return found


SETTINGS: tuple[Setting, ...] = tuple(v for v in list(globals().values()) if isinstance(v, Setting))


def reference() -> str:
    """docs/configuration.md's table of variables, from ``SETTINGS``."""
    lines = []
    for kind, title in ((USER, "Set by you"), (HANDOFF, "Set by jupyter-air for what it starts")):
        lines += [f"## {title}", "", "| variable | default | what it does |", "| --- | --- | --- |"]
        for setting in (s for s in SETTINGS if s.kind == kind):
            default = "" if setting.default is None else f"{setting.default:g} {setting.unit}"
            lines.append(f"| `{setting.name}` | {default.strip()} | {setting.doc} |")
        lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    print(reference(), end="")
