"""What ``air list runs --filter`` selects job runs by, as a SQL ``WHERE`` clause."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class JobFilter:
    """What ``air list runs --filter`` selects by, besides the status and the experiment."""

    experiment_glob: str | None = None  # * ? [...] as a shell matches, case-sensitive
    user: str | None = None
    accelerator_type: str | None = None  # any case
    num_accelerators: int | None = None  # per node
    schedule: str | None = None  # a schedule's id or name
    shared_with: str | None = None  # only job runs shared with this user (air share job)


def _job_filter(
    status: str | Iterable[str] | None, experiment: str | None, more: JobFilter | None = None
) -> tuple[str, list[str | int]]:
    """The ``WHERE`` clause (empty, or starting with a space) and its arguments for job runs of
    ``status`` (one or several), ``experiment`` and ``more``."""
    where: list[str] = []
    args: list[str | int] = []
    more = more or JobFilter()
    clauses: tuple[tuple[str | int | None, str], ...] = (
        (more.experiment_glob, "experiment_name GLOB ?"),
        (more.user, "user = ?"),
        (more.accelerator_type, "UPPER(json_extract(compute, '$.accelerator_type')) = UPPER(?)"),
        (more.num_accelerators, "json_extract(compute, '$.num_accelerators') = ?"),
    )
    for value, clause in clauses:
        if value is not None:
            where.append(clause)
            args.append(value)
    if more.shared_with is not None:
        where.append("id IN (SELECT job_id FROM job_grants WHERE user = ?)")
        args.append(more.shared_with)
    if more.schedule is not None:
        where.append("(schedule_id = ? OR schedule_name = ?)")
        args.extend([more.schedule, more.schedule])
    if status:
        statuses = [status] if isinstance(status, str) else list(status)
        where.append(f"status IN ({', '.join('?' * len(statuses))})")
        args.extend(statuses)
    if experiment:
        where.append("experiment_name = ?")
        args.append(experiment)
    return (" WHERE " + " AND ".join(where) if where else ""), args
