"""The local backend's queue: a job run's attempt that needs GPUs of this machine held by other
job runs waits QUEUED until enough of them are free, first come first served.

Which GPUs an attempt gets is decided when it starts, among those that matched its
``accelerator_type`` at submission (its ``gpu_pool``), minus those held by the other RUNNING
job runs of the data folder (``JobStore.claim_gpus``, one transaction, so two supervisors never
take the same GPU). A job run waiting for any of the same GPUs that was submitted before goes
first. The line is the job store, which every Jupyter server and shell of the data folder
shares; GPUs used outside job runs (a kernel's own work, ``.distributed()`` calls, another
user's data folder) are not counted. CPU-only job runs never wait.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from ..backends.base import Waiter
from ..backends.queue_line import Place, behind
from ..rendering import ordinal

if TYPE_CHECKING:
    from .store import JobRun, JobStore
    from .store.job_rows import GpuClaim

BEAT_S = 1.0  # how often a waiting attempt looks again


class LocalQueue:
    def __init__(self, store: JobStore, job: JobRun) -> None:
        self.store = store
        self.job = job
        self.pool = [int(g) for g in job.spec.get("gpu_pool") or []]

    def wait(self, waiter: Waiter) -> bool:
        """Hold the attempt's GPUs (the job run's ``gpus`` from then on); False when cancelled
        while waiting. Raises QueueTimeout after ``waiter.timeout_s``."""
        if not waiter.accelerators or not self.pool:  # CPU, or a job run of an earlier release
            return True
        deadline = waiter.deadline()
        told: dict[str, Any] | None = None
        while True:
            claim = self.store.claim_gpus(self.job.id, self.pool, waiter.nodes, waiter.accelerators)
            if claim.gpus is not None:
                self.job.gpus = claim.gpus
                if told is not None:
                    waiter.placed()
                return True
            place = self._place(waiter, claim)
            if place != told:
                told = place
                waiter.queued(place)
            if waiter.cancelled():
                return False
            if deadline is not None and time.monotonic() > deadline:
                raise waiter.timed_out(place["reason"])
            waiter.pause(BEAT_S)

    def _place(self, waiter: Waiter, claim: GpuClaim) -> dict[str, Any]:
        ahead, held = claim.ahead, claim.held
        position = len(ahead) + 1
        if ahead:
            line = Place(position=position, total=claim.waiting + 1, ahead=ahead[:3])
            reason = f"{ordinal(position)} in line, {behind(line)}"
        else:
            need = waiter.nodes * waiter.accelerators
            free = len(self.pool) - len(held)
            holders = sorted(set(held.values()))
            reason = (
                f"Waiting for {need} GPU{'s' if need != 1 else ''} of this machine "
                f"(GPUs {', '.join(map(str, self.pool))}); {free or 'none'} free now, the others "
                f"held by job run{'s' if len(holders) != 1 else ''} {', '.join(holders)}"
            )
        return {
            "position": position,
            "total": claim.waiting + 1,
            "ahead": [a["job_id"] for a in ahead[:3]],
            "reason": reason,
            "since": self.job.submitted_at,
            "cluster": None,
        }
