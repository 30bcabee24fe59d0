"""Reading a process's stdout or stderr as it is written, into its node's log file.

One thread per stream reads the pipe in chunks; complete lines get the chunk's arrival time and a
level, and are appended at once. What a terminal would overwrite stays overwritten: of a line with
carriage returns (progress bars) the last segment is kept, and while such a line is still being
redrawn its current state is written at most every ``progress_every_s`` seconds. A line longer than
64 KiB is cut into pieces. A last line without a newline is written when the stream closes.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import time
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field

from .levels import LevelReader
from .logfile import MAX_LINE, LogWriter

CHUNK = 256 * 1024


@dataclass(eq=False)
class StreamCapture:
    """Copies one pipe into a LogWriter from a daemon thread; ``join()`` waits for its end."""

    fd: int
    writer: LogWriter
    stream: str
    _: KW_ONLY
    progress_every_s: float = 2.0
    on_lines: Callable[[int], None] | None = None
    error: BaseException | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        self.levels = LevelReader(stderr=self.stream == "stderr")
        self._thread = threading.Thread(
            target=self._run, name=f"jupyter-air-capture-{self.stream}", daemon=True
        )

    def start(self) -> StreamCapture:
        self._thread.start()
        return self

    def join(self, timeout: float | None = None) -> bool:
        self._thread.join(timeout)
        return not self._thread.is_alive()

    def _run(self) -> None:
        pending = b""
        last_progress = 0.0
        try:
            while True:
                ready, _, _ = select.select([self.fd], [], [], 1.0)
                if not ready:
                    last_progress = self._progress(pending, last_progress)
                    continue
                chunk = os.read(self.fd, CHUNK)
                now = time.time()
                if not chunk:
                    break
                data = pending + chunk
                cut = data.rfind(b"\n")
                if cut < 0:
                    pending = data
                else:
                    pending = data[cut + 1 :]
                    self._emit(data[:cut].decode("utf-8", "replace").split("\n"), now)
                if len(pending) > MAX_LINE * 4:
                    text = pending.decode("utf-8", "replace")
                    pending = b""
                    self._emit([text], now)
                elif b"\r" in pending:
                    last_progress = self._progress(pending, last_progress)
            if pending:
                self._emit([pending.decode("utf-8", "replace")], time.time())
        except BaseException as error:  # reported by the supervisor
            self.error = error
        finally:
            with contextlib.suppress(OSError):
                os.close(self.fd)

    def _progress(self, pending: bytes, last: float) -> float:
        """Write the current state of a line being redrawn (``\\r``), at most every few s."""
        if b"\r" not in pending:
            return last
        now = time.time()
        if now - last < self.progress_every_s:
            return last
        head = pending[: pending.rfind(b"\r")]
        shown = _shown(head.decode("utf-8", "replace"))
        if shown:
            self._emit_one(shown, now)
        return now

    def _emit(self, texts: list[str], t: float) -> None:
        lines = []
        level = self.levels.level
        for text in texts:
            if "\r" in text:
                text = _shown(text)
            if len(text) > MAX_LINE:
                for start in range(0, len(text), MAX_LINE):
                    piece = text[start : start + MAX_LINE]
                    lines.append((level(piece), piece))
            else:
                lines.append((level(text), text))
        self.writer.write(self.stream, lines, t)
        if self.on_lines is not None:
            self.on_lines(len(lines))

    def _emit_one(self, text: str, t: float) -> None:
        self._emit([text], t)


def _shown(text: str) -> str:
    """What a terminal shows of a line with carriage returns: its last non-empty segment."""
    for segment in reversed(text.split("\r")):
        if segment:
            return segment
    return ""
