"""From a failed launch to the one error the cell raises.

The first rank to fail on its own is the cause. Ranks the launch stopped itself (elastic's
SIGTERM to the others once one failed, the kernel's SIGTERM/SIGKILL: see ``rundir.record_stops``)
and ranks that merely noticed a peer going away ("Connection closed by peer") come after it
whatever their time. Times are compared to the second, the precision of elastic's failure
records; within one second a rank that left an error record (its own exception) comes first.

The cause's exception is raised again in the kernel with its own type when it unpickles there,
caused by a ``RemoteTraceback`` holding the rank's traceback (cell lines included, cells named as
IPython names them: ``Cell In[3]``); otherwise a ``RankFailedError`` says what happened: the
exception's type and message, the signal that killed the rank, or its exit code.
"""

from __future__ import annotations

import math
import pickle
import re
import sys
from dataclasses import dataclass
from typing import Any

from .errors import RankFailedError, RemoteTraceback
from .output import tail_lines
from .rundir import RunDir, read_stops


@dataclass
class RankFailure:
    rank: int
    time: float  # the error record's time when there is one, else elastic's (whole seconds)
    exitcode: int | None = None
    signal: str | None = None
    record: dict[str, Any] | None = None  # error-<rank>.pkl, when the rank wrote one
    stopped_at: float | None = None  # when the launch itself signalled the rank to stop

    @property
    def secondary(self) -> bool:
        return bool(self.record and self.record.get("secondary"))

    @property
    def stopped(self) -> bool:
        """Stopped by the launch (not failed on its own): signalled before it left any error
        record of its own."""
        if self.stopped_at is None:
            return False
        return self.record is None or float(self.record["time"]) >= self.stopped_at


def cause_order(failure: RankFailure) -> tuple[Any, ...]:
    """Sort key putting the cause first: failed on its own, first to the second, an error
    record before none within that second, then to the sub-second, then the lower rank."""
    return (
        failure.stopped,
        failure.secondary,
        math.floor(failure.time),
        failure.record is None,
        failure.time,
        failure.rank,
    )


def collect_failures(
    run_dir: RunDir, nproc: int, outcome: dict[str, Any] | None
) -> list[RankFailure]:
    """Every rank that failed, the cause first."""
    failures: dict[int, RankFailure] = {}
    for key, info in ((outcome or {}).get("failures") or {}).items():
        rank = int(key)
        failures[rank] = RankFailure(
            rank,
            float(info.get("timestamp") or 0.0),
            exitcode=info.get("exitcode"),
            signal=info.get("signal"),
        )
    for rank in range(nproc):
        record = read_error(run_dir, rank)
        if record is None:
            continue
        failure = failures.setdefault(rank, RankFailure(rank, float(record["time"])))
        failure.record = record
        failure.time = float(record["time"])
    for rank, when in read_stops(run_dir).items():
        if rank in failures:
            failures[rank].stopped_at = when
    return sorted(failures.values(), key=cause_order)


def read_error(run_dir: RunDir, rank: int) -> dict[str, Any] | None:
    try:
        return pickle.loads(run_dir.error(rank).read_bytes())
    except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError):
        return None


def rank_error(
    failure: RankFailure,
    *,
    function_name: str,
    nproc: int,
    run_dir: RunDir,
    node: tuple[int, str] | None = None,
) -> tuple[BaseException, RemoteTraceback]:
    """The exception to raise for the failing rank, and the remote traceback to raise it from.
    ``node``: where the rank ran, on several nodes: the node and its host."""
    where = f"rank {failure.rank} of {nproc}"
    if node is not None:
        where = f"node {node[0]} rank {failure.rank} of {nproc} (host {node[1]})"
    call = f"{function_name}.distributed()"
    logs = f"Logs and error files: {run_dir}"
    record = failure.record
    if record is not None:
        text = cell_names(record["traceback"])
        remote = RemoteTraceback(f"\n\n{where} raised:\n\n{text.rstrip()}\n")
        original = _unpickle(record.get("exception"))
        note = (
            f"{call}: raised on {where} (its traceback is above); every other rank was "
            f"stopped. {logs}"
        )
        if isinstance(original, Exception):
            _add_note(original, note)
            return original, remote
        error = RankFailedError(
            f"{call}: {where} failed with {record['type']}: {record['message']}\n{note}",
            rank=failure.rank,
            world_size=nproc,
            exitcode=failure.exitcode,
            exception_type=record["type"],
            run_dir=str(run_dir),
        )
        return error, remote
    stderr = tail_lines(run_dir.stderr(failure.rank), 20)
    shown = "\n".join(stderr) if stderr else "(it wrote nothing to stderr)"
    remote = RemoteTraceback(f"\n\nlast lines of {where}'s stderr:\n\n{shown}\n")
    if failure.signal:
        how = f"was killed by {failure.signal}"
        if failure.signal == "SIGKILL":
            how += " (outside jupyter-air: often the out-of-memory killer, see `dmesg`)"
    elif failure.exitcode is not None:
        how = (
            f"exited with code {failure.exitcode} without raising an exception (os._exit, "
            "a crash in native code, …)"
        )
    else:
        how = "ended without a result"
    error = RankFailedError(
        f"{call}: {where} {how}; every other rank was stopped. {logs}",
        rank=failure.rank,
        world_size=nproc,
        exitcode=failure.exitcode,
        signal=failure.signal,
        run_dir=str(run_dir),
    )
    return error, remote


def _unpickle(data: bytes | None) -> Any:
    if not data:
        return None
    try:
        import cloudpickle

        return cloudpickle.loads(data)
    except Exception:
        return None


def _add_note(error: BaseException, note: str) -> None:
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        add_note(note)


def cell_names(text: str) -> str:
    """Name notebook cells in a traceback as IPython does (``Cell In[3], line 4``)."""
    mapping = _cell_filenames()
    if not mapping:
        return text

    def name(match: re.Match[str]) -> str:
        number = mapping.get(match.group(1))
        return f"Cell In[{number}]," if number is not None else match.group(0)

    return re.sub(r'File "([^"]+)",', name, text)


def _cell_filenames() -> dict[str, int]:
    ipython = sys.modules.get("IPython")
    try:
        shell = ipython.get_ipython() if ipython else None
        return dict(getattr(shell.compile, "_filename_map", {}) or {}) if shell else {}
    except Exception:
        return {}
