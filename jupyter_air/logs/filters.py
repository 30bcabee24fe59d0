"""What a log query asks for, checked once: the levels, the text, the time range (a filter),
and positions in a job's logs (cursors, ``"attempt:node:offset"``, an offset being a line
boundary). Shared by the scan of one log file and the query over a job's attempts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import TypedDict

from .levels import LEVELS
from .logfile import parse_timestamp, timestamp

TimeBound = float | int | str | datetime | None


class Filters(TypedDict, total=False):
    """A log query's filters as keyword arguments (``LogFilter.make``'s)."""

    level: str | Iterable[str] | None
    q: str | None
    since: TimeBound
    until: TimeBound


class InvalidQuery(ValueError):
    """A log query that cannot be answered as asked (bad cursor, node, level, time...)."""


@dataclass(frozen=True)
class LogFilter:
    levels: frozenset[str] | None = None  # None: every level
    q: str | None = None
    since: str | None = None  # stored-timestamp form, inclusive
    until: str | None = None  # exclusive

    @classmethod
    def make(
        cls,
        level: str | Iterable[str] | None = None,
        q: str | None = None,
        since: TimeBound = None,
        until: TimeBound = None,
    ) -> LogFilter:
        return cls(_levels(level), (q or None), _bound(since), _bound(until))

    @property
    def empty(self) -> bool:
        return self.levels is None and not self.q and not self.since and not self.until


# cursors ------------------------------------------------------------------------------------
def make_cursor(attempt: int, node: int, offset: int) -> str:
    return f"{attempt}:{node}:{offset}"


def parse_cursor(cursor: str) -> tuple[int, int, int]:
    try:
        attempt, node, offset = (int(part) for part in str(cursor).split(":"))
    except ValueError:
        raise InvalidQuery(f"{cursor!r} is not a log position") from None
    if attempt < 0 or node < 0 or offset < 0:
        raise InvalidQuery(f"{cursor!r} is not a log position")
    return attempt, node, offset


def _levels(level: str | Iterable[str] | None) -> frozenset[str] | None:
    if level is None or level == "":
        return None
    names = [level] if isinstance(level, str) else list(level)
    out = set()
    for name in names:
        for part in str(name).split(","):
            part = part.strip().lower()
            if not part:
                continue
            part = {"warn": "warning", "err": "error"}.get(part, part)
            if part not in LEVELS:
                raise InvalidQuery(f"level must be info, warning or error, not {name!r}")
            out.add(part)
    if not out or out == set(LEVELS):
        return None
    return frozenset(out)


def _bound(value: TimeBound) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        return timestamp(value.timestamp())
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return timestamp(float(value))
    if isinstance(value, str):
        text = value.strip()
        try:
            return timestamp(float(text))
        except ValueError:
            pass
        try:
            return timestamp(parse_timestamp(text))
        except ValueError:
            raise InvalidQuery(
                f"{value!r} is not a time (unix seconds or ISO 8601, e.g. 2025-11-29T10:13:20Z)"
            ) from None
    raise InvalidQuery(f"{value!r} is not a time")
