"""What ``air`` prints: JSON for scripts, tables for people, and the times, durations and
statuses in the words every part of jupyter-air uses (``jupyter_air.rendering``).

Tables and ``Label: value`` lines fit the terminal (``COLUMNS``, else the terminal's width; not
cut when the output is not a terminal): long cells end with "…", ids and links are never cut,
and a table too wide even so leaves out the columns it may do without. What they print of text
jupyter-air did not write (names, reasons, commands) shows its control characters as escapes:
a name holding ESC cannot set the window's title or clear the screen.
"""

from __future__ import annotations

import contextlib
import json
import sys
import textwrap
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TextIO

from ..rendering import (
    duration_text,
    outcome_text,
    printable,
    queue_place,
    status_text,
    time_text,
)

__all__ = [
    "duration_text",
    "fields",
    "json_out",
    "outcome_text",
    "printable",
    "queue_place",
    "say",
    "status_text",
    "table",
    "time_cell",
    "time_text",
    "width",
]

ELLIPSIS = "…"
MIN_CELL = 6  # a cut cell keeps at least this many characters
COMFORTABLE_CELL = 12  # columns are left out before cells get narrower than this
GAP = "  "


def json_out(data: Any, stream: TextIO | None = None, *, compact: bool = False) -> None:
    stream = stream or sys.stdout
    stream.write(json.dumps(data, indent=None if compact else 2, default=str) + "\n")
    stream.flush()


def width() -> int | None:
    """The width lines must fit: ``COLUMNS``, else the terminal's; None when neither is known
    (output to a file or a pipe is not cut)."""
    import os

    try:
        columns = int(os.environ.get("COLUMNS") or 0)
    except ValueError:
        columns = 0
    if columns <= 0 and sys.stdout.isatty():
        with contextlib.suppress(OSError, ValueError):
            columns = os.get_terminal_size(sys.stdout.fileno()).columns
    return columns if columns > 0 else None


def cut(text: str, size: int) -> str:
    return text if len(text) <= size else text[: max(size - 1, 0)] + ELLIPSIS


class Brief(str):
    """A cell with a shorter form, used when the table does not fit the terminal."""

    short: str

    def __new__(cls, text: str, short: str) -> Brief:
        cell = super().__new__(cls, printable(text))
        cell.short = printable(short)
        return cell


def time_cell(t: float | None) -> str:
    """A time, as ``MM-DD HH:MM`` on a narrow terminal."""
    import time

    return Brief(time_text(t), time.strftime("%m-%d %H:%M", time.localtime(t)) if t else "-")


def table(
    headers: list[str],
    rows: list[list[str]],
    indent: int = 0,
    *,
    keep: Iterable[int] = (),
    drop: Sequence[int] = (),
) -> None:
    """Aligned columns. ``keep``: columns never cut (ids); ``drop``: columns left out, in this
    order, while the others would be cut narrower than ``COMFORTABLE_CELL``."""
    kept = set(keep)
    limit = width()
    cells: list[list[str]] = [
        [c if isinstance(c, Brief) else printable(c) for c in row] for row in [headers, *rows]
    ]
    natural = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    if limit is not None and indent + sum(natural) + len(GAP) * (len(natural) - 1) > limit:
        cells = [[c.short if isinstance(c, Brief) else c for c in row] for row in cells]
        natural = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    columns = list(range(len(headers)))
    sizes = dict(enumerate(natural))
    if limit is not None:

        def least(i: int, floor: int = MIN_CELL) -> int:
            return natural[i] if i in kept else min(natural[i], floor)

        def comfortable(i: int) -> int:  # below this a column is better left out
            return least(i, COMFORTABLE_CELL)

        def need(chosen: list[int], size: Callable[[int], int]) -> int:
            return indent + sum(size(i) for i in chosen) + len(GAP) * (len(chosen) - 1)

        for column in drop:
            if need(columns, comfortable) <= limit:
                break
            columns.remove(column)
        while need(columns, sizes.__getitem__) > limit:
            cuttable = [i for i in columns if sizes[i] > least(i)]
            if not cuttable:
                break
            sizes[max(cuttable, key=lambda i: sizes[i])] -= 1
    pad = " " * indent
    for row in cells:
        line = GAP.join(cut(row[i], sizes[i]).ljust(sizes[i]) for i in columns)
        print(pad + line.rstrip())


def _whole(value: str) -> bool:
    """A link or a path: never cut, never wrapped."""
    return " " not in value and ("://" in value or value.startswith("/"))


def fields(rows: Iterable[tuple[str, str | None]], label_width: int, indent: int = 2) -> None:
    """``Label:  value`` lines (empty values left out), long values wrapped under themselves."""
    limit = width()
    for label, text in rows:
        if not text:
            continue
        value = printable(text)
        head = " " * indent + f"{label + ':':<{label_width}}"
        if limit is None or _whole(value) or len(head) + len(value) <= limit:
            print(head + value)
            continue
        wrapped = textwrap.wrap(
            value,
            max(limit, len(head) + MIN_CELL),
            initial_indent=head,
            subsequent_indent=" " * len(head),
            break_on_hyphens=False,
        )
        print("\n".join(wrapped))


def say(text: str, indent: int = 0, stream: TextIO | None = None) -> None:
    """A sentence, wrapped to the terminal."""
    limit = width()
    pad = " " * indent
    text = printable(text)
    lines = [pad + text]
    if limit is not None:
        lines = textwrap.wrap(text, limit, initial_indent=pad, subsequent_indent=pad)
    print("\n".join(lines), file=stream, flush=True)
