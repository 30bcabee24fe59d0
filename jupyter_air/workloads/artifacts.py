"""Log files attached to the attempt's MLflow run as ``logs/attempt_K/node_N.log``: every
``config.LOG_UPLOAD_INTERVAL_S`` seconds (30 by default) while the attempt runs, when the
file grew, and once more at the end. A periodic upload sends a copy that ends on a line boundary.
"""

from __future__ import annotations

import logging
import tempfile
import threading
from collections.abc import Callable
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Any

from ..config import LOG_UPLOAD_INTERVAL_S
from ..repeating import Repeating

log = logging.getLogger(__name__)


def upload_interval() -> float:
    return LOG_UPLOAD_INTERVAL_S.get()


@dataclass(eq=False)
class LogUploader:
    """Uploads the node logs of one attempt to its run, periodically from a thread and at the
    end. ``sizes()`` gives the complete-line size of each file (the writers' counters)."""

    client: Any
    run_id: str
    attempt: int
    files: dict[int, Path]
    sizes: Callable[[], dict[int, int]]
    _: KW_ONLY
    interval_s: float = field(default_factory=upload_interval)
    uploaded: dict[int, int] = field(default_factory=dict, init=False)
    last_error: str | None = field(default=None, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False)

    def __post_init__(self) -> None:
        self._uploads = Repeating(
            lambda: self.upload(final=False), self.interval_s, "jupyter-air-logs"
        )

    @property
    def artifact_path(self) -> str:
        return f"logs/attempt_{self.attempt}"

    def start(self) -> LogUploader:
        self._uploads.start()
        return self

    def finish(self) -> None:
        """Stop the periodic uploads and upload every file as it ends."""
        self._uploads.stop(timeout_s=60)
        self.upload(final=True)

    def upload(self, *, final: bool) -> None:
        with self._lock:
            sizes = self.sizes()
            with tempfile.TemporaryDirectory(prefix="air-logs-") as tmp:
                for node, path in sorted(self.files.items()):
                    size = sizes.get(node, 0)
                    if not path.exists() or (not final and self.uploaded.get(node) == size):
                        continue
                    try:
                        source = path if final else _copy_prefix(path, Path(tmp), size)
                        self.client.log_artifact(self.run_id, str(source), self.artifact_path)
                        self.uploaded[node] = size
                    except Exception as error:  # never fail an attempt for its artifacts
                        self.last_error = str(error)
                        log.warning(
                            "could not upload %s to run %s: %s", path.name, self.run_id, error
                        )


def _copy_prefix(path: Path, folder: Path, size: int) -> Path:
    target = folder / path.name
    with open(path, "rb") as src, open(target, "wb") as dst:
        remaining = size
        while remaining > 0:
            block = src.read(min(remaining, 1 << 20))
            if not block:
                break
            dst.write(block)
            remaining -= len(block)
    return target
