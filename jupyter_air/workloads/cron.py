"""Cron expressions in a timezone, through croniter: checking them (for the spec's errors) and
the slots they give — the latest at or before a moment, the next after one. A slot is a unix
time in whole seconds."""

from __future__ import annotations

from datetime import datetime, timezone
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

ALIASES = frozenset(
    {"@hourly", "@daily", "@midnight", "@weekly", "@monthly", "@yearly", "@annually"}
)


def check_cron(text: str) -> str:
    """``text`` (stripped) when it is a 5-field cron expression or an alias; ValueError if not."""
    from croniter import croniter

    text = " ".join(text.split())
    if text.startswith("@"):
        if text.lower() not in ALIASES:
            raise ValueError("unknown cron alias")
        return text.lower()
    if len(text.split()) != 5 or not croniter.is_valid(text):
        raise ValueError("not a cron expression")
    return text


def check_timezone(name: str) -> str:
    """``name`` when it is a timezone this machine knows; ValueError if not."""
    try:
        ZoneInfo(name.strip())
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError("unknown timezone") from None
    return name.strip()


def _zone(name: str) -> ZoneInfo:
    return ZoneInfo(name)


def previous_slot(cron: str, tz: str, now: float) -> int:
    """The latest slot at or before ``now``."""
    from croniter import croniter

    # the latest before the next whole second: a slot exactly at ``now`` counts
    moment = datetime.fromtimestamp(int(now) + 1, timezone.utc).astimezone(_zone(tz))
    return int(croniter(cron, moment).get_prev(float))


def next_slot(cron: str, tz: str, after: float) -> int:
    """The first slot after ``after``."""
    from croniter import croniter

    moment = datetime.fromtimestamp(after, timezone.utc).astimezone(_zone(tz))
    return int(croniter(cron, moment).get_next(float))
