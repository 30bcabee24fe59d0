"""torch elastic's restarts of a call's ranks (``@distributed(max_restarts=N)``): what a round
left is set aside before the next one starts, and the kernel says each restart in the cell.

The agent's logs spec calls ``set_round_aside`` when elastic starts the ranks again; the kernel
reads ``restarts.json`` through ``RestartNews``.
"""

from __future__ import annotations

import contextlib
import pickle
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from ..files import write_json
from .rundir import RunDir

if TYPE_CHECKING:
    from .output import RankOutput


def set_round_aside(run_dir: RunDir, restart: int, ranks: list[int]) -> None:
    """Before torch elastic starts ``ranks`` again (restart ``restart``): move what their last
    round left into ``round_dir(restart)``, so that neither the kernel nor the new round takes an
    old result, error or stop for its own, and record the restart with the ranks that failed.
    The kernel, still tailing the old log files, reads them to their end (output.RankFile)."""
    aside = run_dir.round_dir(restart)
    aside.mkdir(exist_ok=True)
    failed: dict[str, str] = {}
    for rank in ranks:
        error = run_dir.error(rank)
        if error.exists():
            failed[str(rank)] = _first_line_of_error(error)
        for path in (error, run_dir.result(rank), run_dir.log_dir(rank)):
            with contextlib.suppress(FileNotFoundError):
                target = aside / path.relative_to(run_dir.path)
                target.parent.mkdir(parents=True, exist_ok=True)
                path.rename(target)
    for path in run_dir.path.glob("stops-*.json"):
        with contextlib.suppress(FileNotFoundError):
            path.rename(aside / path.name)
    record = run_dir.read_json(run_dir.restarts) or {"restarts": []}
    record["restarts"].append({"restart": restart, "time": time.time(), "failed": failed})
    write_json(run_dir.restarts, record)


def _first_line_of_error(path: Path) -> str:
    """``Type: message`` of a rank's error record, on one line."""
    try:
        record = pickle.loads(path.read_bytes())
        name = str(record["type"]).rsplit(".", 1)[-1]
        return f"{name}: {(str(record['message']).splitlines() or [''])[0][:300]}"
    except Exception:
        return "an error"


class RestartNews:
    """The restarts of one call the kernel has not said yet, as lines for the cell."""

    def __init__(self, run_dir: RunDir, most: int) -> None:
        self.run_dir = run_dir
        self.most = most
        self.said = 0

    def lines(self) -> list[str]:
        record = self.run_dir.read_json(self.run_dir.restarts) or {}
        lines = []
        for entry in record.get("restarts", [])[self.said :]:
            failed = entry.get("failed") or {}
            why = "; ".join(f"rank {rank}: {text}" for rank, text in sorted(failed.items()))
            lines.append(
                f"jupyter-air: {why or 'a rank failed'} — torch elastic starts every rank "
                f"again (restart {entry.get('restart')} of {self.most})"
            )
            self.said += 1
        return lines

    def say(self, output: RankOutput | None) -> None:
        """The restarts not said yet, on stderr, after the last lines of the round before."""
        lines = self.lines()
        if lines and output is not None:
            output.pump()
            output.err.close_open_line()
        for line in lines:
            print(line, file=sys.stderr, flush=True)
