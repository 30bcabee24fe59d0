"""How times, durations and outcomes read for people: one wording for ``air``, the run displays
in cell outputs and the magics (the panels word them the same way in ``src/*/format.ts``); and
what a terminal may be shown of text we did not write (names, reasons, commands)."""

from __future__ import annotations

import re
import time
from typing import Any, Protocol

NONE = "-"


def size_text(size: int) -> str:
    """``512 B``, ``2 KiB``, ``1.5 GiB``."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift:
            return f"{size / (1 << shift):.1f} {unit}".replace(".0 ", " ")
    return f"{size} B"


# C0 controls, DEL and C1 controls: in a terminal they act (ESC starts a sequence that can set
# the window's title or clear the screen, BEL rings) instead of showing
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_CONTROL_IN_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")  # all but TAB and LF
_CONTROL_NAMES = {0x00: "NUL", 0x07: "BEL", 0x08: "BS", 0x09: "TAB", 0x0A: "LF", 0x0B: "VT"}
_CONTROL_NAMES |= {0x0C: "FF", 0x0D: "CR", 0x1B: "ESC", 0x7F: "DEL", 0x9B: "CSI"}


def control_character(text: str) -> str | None:
    """``U+001B (ESC) at position 4`` for the first control character of ``text`` (positions
    from 1), None when it has none."""
    found = _CONTROL.search(text)
    if found is None:
        return None
    code = ord(found.group())
    name = f" ({_CONTROL_NAMES[code]})" if code in _CONTROL_NAMES else ""
    return f"U+{code:04X}{name} at position {found.start() + 1}"


def printable(text: str, *, lines: bool = False) -> str:
    """``text`` with its control characters written as escapes (``\\x1b``): what a terminal
    printer shows of text it did not write. ``lines``: a message of several lines, whose line
    breaks and tabs stay."""
    pattern = _CONTROL_IN_LINES if lines else _CONTROL
    return pattern.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


class _Ended(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def status(self) -> str: ...

    @property
    def reason(self) -> str | None: ...


def seconds_text(seconds: float) -> str:
    """``2.3 s``, ``2 min 5 s``, ``2 h 5 min``."""
    seconds = max(0.0, seconds)
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes} min"


def duration_text(seconds: float | None) -> str:
    return NONE if seconds is None else seconds_text(seconds)


def time_text(t: float | None) -> str:
    """A unix time in this machine's time zone, to the second."""
    return NONE if t is None else time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(t))


def status_text(status: str, reason: str | None) -> str:
    """``FAILED (node 1 exited with code 3)``."""
    return status + (f" ({reason})" if reason else "")


def ordinal(n: int) -> str:
    """``1st``, ``2nd``, ``3rd``, ``11th``…"""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def queue_place(queue: dict[str, Any] | None) -> str:
    """A queued job run's place: ``2nd of 3`` (empty when it is not queued)."""
    if not queue:
        return ""
    return f"{ordinal(int(queue.get('position', 0)))} of {int(queue.get('total', 0))}"


def outcome_text(job: _Ended) -> str:
    """How a job run ended: ``Job run 3f2a9c1b0d4e SUCCEEDED: the command succeeded``."""
    return f"Job run {job.id} {job.status}: {job.reason}"
