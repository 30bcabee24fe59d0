"""Every rank's stdout and stderr, streamed live into the cell while the function runs.

Ranks write to files in the run folder (torch elastic redirects them); the kernel tails those
files and writes each line to its own stdout or stderr prefixed with ``[rank N]``, keeping the
order within each rank. Progress bars (``\\r`` updates, tqdm) are shown as one line that updates
in place, and never swallow another rank's line: when another rank speaks, the bar's line is
closed first and the bar carries on below.
"""

from __future__ import annotations

import codecs
import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO, TextIO

from .rundir import RunDir

CHUNK = 256 * 1024  # bytes read from one file per pass
HOLD_PARTIAL_S = 0.5  # a line without its newline yet is shown after this long


def prefix(rank: int, node: int | None = None) -> str:
    """``[rank 3] `` on one machine, ``[node 1 rank 3] `` on several."""
    return f"[rank {rank}] " if node is None else f"[node {node} rank {rank}] "


class CellStream:
    """One of the kernel's streams (stdout or stderr) shared by all ranks, remembering which
    rank's unfinished line (a progress bar) is currently open at its end."""

    def __init__(
        self,
        target: Callable[[], TextIO],
        node_of: Callable[[int], int | None] | None = None,
    ) -> None:
        self._target = target
        self._node_of = node_of
        self.open_rank: int | None = None

    def _prefix(self, rank: int) -> str:
        return prefix(rank, self._node_of(rank) if self._node_of is not None else None)

    def line(self, rank: int, text: str) -> None:
        self._write(rank, self._prefix(rank) + text + "\n", closes=True)

    def partial(self, rank: int, text: str) -> None:
        self._write(rank, self._prefix(rank) + text, closes=False)

    def close_open_line(self) -> None:
        if self.open_rank is not None:
            self._emit("\n")
            self.open_rank = None

    def _write(self, rank: int, text: str, *, closes: bool) -> None:
        if self.open_rank == rank:
            text = "\r" + text  # replace this rank's own unfinished line
        elif self.open_rank is not None:
            text = "\n" + text  # leave the other rank's bar as it was, below it
        self._emit(text)
        self.open_rank = None if closes else rank

    def _emit(self, text: str) -> None:
        stream = self._target()
        stream.write(text)

    def flush(self) -> None:
        with contextlib.suppress(Exception):
            self._target().flush()


class RankFile:
    """Tails one log file of one rank, splitting it into lines."""

    def __init__(self, path: Path, rank: int, cell: CellStream) -> None:
        self.path = path
        self.rank = rank
        self.cell = cell
        self._file: BinaryIO | None = None
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._pending_since = 0.0
        self._shown_partial: str | None = None
        self._finished = False

    def pump(self, *, final: bool = False) -> bool:
        """Show what the rank wrote since the last call; True if there was something."""
        if self._finished:
            return False
        text = self._read()
        now = time.monotonic()
        if text:
            if not self._pending:
                self._pending_since = now
            self._pending += text
            *lines, self._pending = self._pending.split("\n")
            for line in lines:
                self.cell.line(self.rank, last_segment(line))
                self._shown_partial = None
            if lines:
                self._pending_since = now
        if final:
            self._pending += self._decoder.decode(b"", final=True)
            if self._pending:
                self.cell.line(self.rank, last_segment(self._pending))
                self._pending, self._shown_partial = "", None
            self.close()
            self._finished = True
        elif self._pending and (
            "\r" in self._pending or now - self._pending_since >= HOLD_PARTIAL_S
        ):
            shown = last_segment(self._pending)
            if shown != self._shown_partial:
                self.cell.partial(self.rank, shown)
                self._shown_partial = shown
        return bool(text)

    def _read(self) -> str:
        if self._file is None:
            try:
                self._file = open(self.path, "rb")  # noqa: SIM115 - kept open while tailing
            except FileNotFoundError:
                return ""
        data = self._file.read(CHUNK)
        if data:
            return self._decoder.decode(data)
        if self._replaced():  # read to its end: the next round's file is read from its start
            self.close()
            return self._decoder.decode(b"", final=True) + ("\n" if self._pending else "")
        return ""

    def _replaced(self) -> bool:
        """Whether the path now names another file than the one read (the ranks' logs of a round
        before a restart were set aside: launch/restarts.set_round_aside)."""
        assert self._file is not None
        try:
            return os.stat(self.path).st_ino != os.fstat(self._file.fileno()).st_ino
        except FileNotFoundError:
            return True

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None


def last_segment(line: str) -> str:
    """What a terminal shows for a line with carriage returns: its last non-empty segment."""
    if "\r" not in line:
        return line
    segments = [s for s in line.split("\r") if s]
    return segments[-1] if segments else ""


class RankOutput:
    """All ranks' output for one call. ``mode="all"`` streams every rank; ``"rank0"`` streams
    rank 0 only (the others are read from their files when they fail)."""

    def __init__(
        self,
        run_dir: RunDir,
        nproc: int,
        mode: str = "all",
        stdout: Callable[[], TextIO] | None = None,
        stderr: Callable[[], TextIO] | None = None,
        node_of: Callable[[int], int | None] | None = None,
        first_rank: int = 0,
    ) -> None:
        self.run_dir = run_dir
        self.out = CellStream(stdout or (lambda: sys.stdout), node_of)
        self.err = CellStream(stderr or (lambda: sys.stderr), node_of)
        ranks = range(first_rank, first_rank + (nproc if mode == "all" else min(1, nproc)))
        self.files = [
            RankFile(path, rank, cell)
            for rank in ranks
            for path, cell in ((run_dir.stdout(rank), self.out), (run_dir.stderr(rank), self.err))
        ]
        self.streamed = set(ranks)

    def pump(self, *, final: bool = False) -> bool:
        busy = False
        for rank_file in self.files:
            busy = rank_file.pump(final=final) or busy
        if final:
            self.out.close_open_line()
            self.err.close_open_line()
        self.out.flush()
        self.err.flush()
        return busy

    def show_tail(self, rank: int, lines: int = 40) -> None:
        """The last lines of a rank that was not streamed (``output="rank0"``), on stderr."""
        if rank in self.streamed:
            return
        for path, cell in (
            (self.run_dir.stdout(rank), self.out),
            (self.run_dir.stderr(rank), self.err),
        ):
            for line in tail_lines(path, lines):
                cell.line(rank, line)
        self.out.flush()
        self.err.flush()

    def close(self) -> None:
        for rank_file in self.files:
            rank_file.close()


def tail_lines(path: Path, lines: int = 40, max_bytes: int = 64 * 1024) -> list[str]:
    """The last ``lines`` lines of a log file, progress updates collapsed."""
    try:
        with open(path, "rb") as file:
            file.seek(0, 2)
            size = file.tell()
            file.seek(max(0, size - max_bytes))
            data = file.read().decode("utf-8", errors="replace")
    except OSError:
        return []
    text = [last_segment(line) for line in data.split("\n")]
    if text and text[-1] == "":
        text.pop()
    return text[-lines:]
