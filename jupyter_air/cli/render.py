"""What ``air`` prints: JSON for scripts, aligned tables for people, and the times, durations
and statuses in the words every part of jupyter-air uses (``jupyter_air.rendering``)."""

from __future__ import annotations

import json
import sys
from typing import Any, TextIO

from ..rendering import duration_text, outcome_text, status_text, time_text

__all__ = ["duration_text", "json_out", "outcome_text", "status_text", "table", "time_text"]


def json_out(data: Any, stream: TextIO | None = None, *, compact: bool = False) -> None:
    stream = stream or sys.stdout
    stream.write(json.dumps(data, indent=None if compact else 2, default=str) + "\n")
    stream.flush()


def table(headers: list[str], rows: list[list[str]], indent: int = 0) -> None:
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(str(cell)))
    pad = " " * indent

    def line(cells: list[str]) -> str:
        text = "  ".join(str(c).ljust(widths[i]) for i, c in enumerate(cells))
        return pad + text.rstrip()

    print(line(headers))
    for row in rows:
        print(line(row))
