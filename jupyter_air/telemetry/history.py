"""A bounded, time-windowed history of samples.

Each sample is stored with its wire form (compact JSON without the per-process lists, health and
MIG readings, which only the latest sample carries), encoded once when it arrives, so serving two
hours of history to a newly opened panel is a join, not a re-encode. Only the latest entry keeps
the full sample: an older one is its wire form alone, which keeps a node's two hours small. An
agent's newest sample is kept as the model its report was validated into and made a dict only when
a panel reads it (most are replaced by the next report unread). All mutation happens on one thread
(the poll loop's event loop).
"""

from __future__ import annotations

import json
import math
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING

from .samples import Sample

if TYPE_CHECKING:
    from .models import Sample as SampleModel

LATEST_ONLY = ("processes", "health", "mig")


class Entry:
    """A sample's time and wire form; the latest entry also its full sample, as a dict
    (``sample``) and, for an agent's, the validated model it came as (``model``)."""

    __slots__ = ("_sample", "model", "t", "wire")

    def __init__(
        self,
        t: float,
        wire: str,
        sample: Sample | None = None,
        model: SampleModel | None = None,
    ) -> None:
        self.t = t
        self.wire = wire
        self._sample = sample
        self.model = model

    @property
    def full(self) -> bool:
        """Whether the entry keeps its full sample (the latest does)."""
        return self._sample is not None or self.model is not None

    @property
    def sample(self) -> Sample | None:
        """The full sample as a dict (made from the model when first read), or None."""
        if self._sample is None and self.model is not None:
            self._sample = self.model.model_dump(mode="json")  # type: ignore[assignment]
        return self._sample

    def slim(self) -> Entry:
        """This entry without its full sample."""
        return Entry(self.t, self.wire)


def wire_form(sample: Sample) -> str:
    """Compact JSON of a sample without what only matters for the latest sample."""
    slim = {
        "t": sample["t"],
        "node": sample["node"],
        "host": sample["host"],
        "gpus": [{k: v for k, v in gpu.items() if k not in LATEST_ONLY} for gpu in sample["gpus"]],
    }
    return json.dumps(slim, separators=(",", ":"), allow_nan=False)


class History:
    """Samples from the last ``window_s`` seconds, at most ``capacity`` of them.

    The capacity is the number of regular samples the window holds, with head-room for manual
    refreshes; samples older than the window are dropped even when the capacity is not reached
    (after a pause the window is shown with a gap, not stretched).
    """

    def __init__(
        self, window_s: float, interval_s: float, clock: Callable[[], float] = time.time
    ) -> None:
        if window_s <= 0 or interval_s <= 0:
            raise ValueError("history window and poll interval must be positive")
        self.window_s = window_s
        self.capacity = math.ceil(window_s / interval_s * 1.25) + 8
        self._entries: deque[Entry] = deque(maxlen=self.capacity)
        self._clock = clock

    def __len__(self) -> int:
        return len(self._entries)

    def append(self, sample: Sample, wire: str | None = None) -> Entry:
        """Add the newest sample (``wire``: its wire form, when already encoded)."""
        return self._add(
            Entry(sample["t"], wire if wire is not None else wire_form(sample), sample)
        )

    def append_model(self, model: SampleModel, wire: str) -> Entry:
        """Add the newest sample as the validated model it came as, with its wire form."""
        return self._add(Entry(model.t, wire, model=model))

    def append_wire(self, t: float, wire: str) -> Entry:
        """Add a sample known by its wire form alone (one of a backlog, not the newest)."""
        return self._add(Entry(t, wire))

    def _add(self, entry: Entry) -> Entry:
        if self._entries and self._entries[-1].full:
            self._entries[-1] = self._entries[-1].slim()
        self._entries.append(entry)
        self._prune()
        return entry

    def latest(self) -> Entry | None:
        return self._entries[-1] if self._entries else None

    def since(self, t: float | None = None) -> list[Entry]:
        """Entries newer than ``t`` (all within the window when ``t`` is None), oldest first."""
        self._prune()
        if t is None:
            return list(self._entries)
        out: list[Entry] = []
        for entry in reversed(self._entries):
            if entry.t <= t:
                break
            out.append(entry)
        out.reverse()
        return out

    def _prune(self) -> None:
        horizon = self._clock() - self.window_s
        while self._entries and self._entries[0].t < horizon:
            self._entries.popleft()
