"""Checkpoints that follow a job run (docs/checkpoints.md).

Every node of every attempt gets ``config.CHECKPOINT_DIR``: a folder on its node, the same
path in each attempt. What a node writes there is brought home while the attempt runs (a file
that stopped changing, at the next scan) and when the attempt ends, each node's files apart
(``HOME/node_K/``). Before each attempt the latest checkpoint is put back on every node the
attempt runs on: node 0's files with node k's own on top, so that in the common pattern (rank 0
saves, every rank loads the file if it exists) every rank resumes from the same epoch.

Home is the job run's folder, or ``checkpoint_location`` (a path, or an fsspec URI such as
``s3://…`` where fsspec and the store's package are installed). Every copy goes through a
temporary name and a rename, on both sides: a reader never sees half a copy. (What the
command itself writes is its own: a save killed half-way is half a file, which is why
docs/checkpoints.md saves to a temporary name and renames.)
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import tempfile
import threading
import time
import urllib.parse
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..config import CHECKPOINT_MAX_GB
from ..files import copy_atomic, scan_folder, write_json
from ..repeating import Repeating

log = logging.getLogger("jupyter_air.workloads.checkpoints")

SCAN_S = 5.0  # a file unchanged over one scan is whole: it is home within two scans
HOME_RECORD = ".jupyter-air-checkpoint.json"  # at home: the latest state saved
GB = 1_000_000_000

State = tuple[int, int]  # size, modification time (ns)


class NodeFolder(Protocol):
    """One node's checkpoint folder, wherever the node is."""

    path: str  # as the node's command sees it

    def scan(self) -> dict[str, State]: ...

    def fetch(self, rel: str, target: Path) -> None:
        """Copy the node's ``rel`` to ``target`` on this machine (atomically)."""

    def put(self, rel: str, source: Path) -> State:
        """Put ``source`` at ``rel`` on the node (atomically); returns its state there."""


@dataclass
class LocalFolder:
    """A node folder this machine sees (the local backend; a cluster sharing its disk)."""

    path: str

    def scan(self) -> dict[str, State]:
        return scan_folder(Path(self.path))

    def fetch(self, rel: str, target: Path) -> None:
        copy_atomic(Path(self.path) / rel, target)

    def put(self, rel: str, source: Path) -> State:
        target = Path(self.path) / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        copy_atomic(source, target)
        info = target.stat()
        return (info.st_size, info.st_mtime_ns)


class Home:
    """Where a job run's checkpoints are kept: a folder here, or an fsspec URI."""

    def __init__(self, location: str) -> None:
        self.location = location
        scheme = urllib.parse.urlparse(location).scheme
        self.fs: Any = None
        self.root = location
        if scheme and scheme != "file" and len(scheme) > 1:
            try:
                import fsspec
            except ImportError:
                raise CheckpointError(
                    f"checkpoint_location {location!r} needs fsspec (and the package of its "
                    "store, e.g. s3fs) installed where the job runs: pip install fsspec"
                ) from None
            self.fs, self.root = fsspec.core.url_to_fs(location)
        elif scheme == "file":
            self.root = urllib.parse.urlparse(location).path

    def _path(self, node: int, rel: str = "") -> str:
        base = f"{self.root.rstrip('/')}/node_{node}"
        return f"{base}/{rel}" if rel else base

    def files(self, node: int) -> dict[str, int]:
        """``rel → size`` of what is kept of node ``node``."""
        base = self._path(node)
        if self.fs is None:
            return {rel: size for rel, (size, _) in scan_folder(Path(base)).items()}
        try:
            found = self.fs.find(base, detail=True)
        except FileNotFoundError:
            return {}
        prefix = self.fs._strip_protocol(base).rstrip("/") + "/"
        return {
            name[len(prefix) :]: int(info.get("size") or 0)
            for name, info in found.items()
            if name.startswith(prefix) and info.get("type", "file") == "file"
        }

    def nodes(self) -> list[int]:
        names: list[str] = []
        if self.fs is None:
            with contextlib.suppress(OSError):
                names = os.listdir(self.root)
        else:
            with contextlib.suppress(FileNotFoundError):
                listed = self.fs.ls(self.root, detail=False)
                names = [n.rstrip("/").rsplit("/", 1)[-1] for n in listed]
        return sorted(int(n[5:]) for n in names if n.startswith("node_") and n[5:].isdigit())

    def store(self, node: int, rel: str, folder: NodeFolder) -> None:
        """Bring ``rel`` of ``folder`` home, whole or not at all."""
        target = self._path(node, rel)
        if self.fs is None:
            Path(target).parent.mkdir(parents=True, exist_ok=True)
            folder.fetch(rel, Path(target))
            return
        with tempfile.TemporaryDirectory(prefix="air-checkpoint-") as tmp:
            local = Path(tmp) / "file"
            folder.fetch(rel, local)
            self.fs.put_file(str(local), target)  # an object store's put is whole or nothing

    @contextlib.contextmanager
    def local_copy(self, node: int, rel: str) -> Iterator[Path]:
        if self.fs is None:
            yield Path(self._path(node, rel))
            return
        with tempfile.TemporaryDirectory(prefix="air-checkpoint-") as tmp:
            local = Path(tmp) / "file"
            self.fs.get_file(self._path(node, rel), str(local))
            yield local

    def remove(self, node: int, rel: str) -> None:
        target = self._path(node, rel)
        with contextlib.suppress(FileNotFoundError, OSError):
            if self.fs is None:
                os.unlink(target)
            else:
                self.fs.rm_file(target)

    def record(self) -> dict[str, Any] | None:
        """What was saved last (attempt, time, bytes, files, run), None before anything was."""
        path = f"{self.root.rstrip('/')}/{HOME_RECORD}"
        try:
            if self.fs is None:
                text = Path(path).read_text(encoding="utf-8")
            else:
                text = self.fs.cat_file(path).decode("utf-8")
            value = json.loads(text)
        except (OSError, ValueError, FileNotFoundError):
            return None
        return value if isinstance(value, dict) else None

    def write_record(self, value: Mapping[str, Any]) -> None:
        path = f"{self.root.rstrip('/')}/{HOME_RECORD}"
        if self.fs is None:
            Path(self.root).mkdir(parents=True, exist_ok=True)
            write_json(path, dict(value), mode=0o644)
        else:
            self.fs.pipe_file(path, json.dumps(dict(value)).encode())


class CheckpointError(RuntimeError):
    """A checkpoint that cannot be kept (its location, its size); the reason is for people."""


@dataclass
class _Kept:
    state: State  # the file on its node, as it was when copied (or put back)
    origin: int  # the node whose folder at home holds it
    size: int


@dataclass
class CheckpointSync:
    """The checkpoints of one job run: put back before each attempt, brought home during and
    after it (``scan`` from a thread every ``scan_s``; ``finish`` at the end)."""

    home: Home
    limit_bytes: int = field(default_factory=lambda: int(CHECKPOINT_MAX_GB.get() * GB))
    scan_s: float = SCAN_S
    folders: dict[int, NodeFolder] = field(default_factory=dict)
    kept: dict[int, dict[str, _Kept]] = field(default_factory=dict)
    seen: dict[int, dict[str, State]] = field(default_factory=dict)
    over: str | None = None  # why nothing more is kept: the limit
    saved: dict[str, Any] = field(default_factory=dict)  # this attempt's: bytes, files, at
    attempt: int = 0
    run_id: str | None = None

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._scans = Repeating(self._scan_logged, self.scan_s, "air-checkpoints")

    # before ------------------------------------------------------------------------------------
    def restore(self, attempt: int, folders: Mapping[int, NodeFolder]) -> dict[str, Any] | None:
        """Put the latest checkpoint on every node of ``attempt``; what was put back (the
        attempt and time it was saved, bytes, files), None when nothing had been saved."""
        self.attempt, self.folders = attempt, dict(folders)
        self.kept, self.seen, self.saved = {n: {} for n in folders}, {}, {}
        record = self.home.record()
        kept_nodes = self.home.nodes()
        base = self.home.files(0) if 0 in kept_nodes else {}
        for node, folder in self.folders.items():
            own = self.home.files(node) if node and node in kept_nodes else {}
            wanted = {rel: (0, size) for rel, size in base.items()}
            wanted.update({rel: (node, size) for rel, size in own.items()})
            for rel, (origin, size) in wanted.items():
                with self.home.local_copy(origin, rel) as source:
                    state = folder.put(rel, source)
                self.kept[node][rel] = _Kept(state, origin, size)
        restored = {(k.origin, r): k.size for kept in self.kept.values() for r, k in kept.items()}
        if record is None or not restored:
            return None
        return {
            "attempt": record.get("attempt"),
            "run_id": record.get("run_id"),
            "saved_at": record.get("saved_at"),
            "bytes": sum(restored.values()),
            "files": len(restored),
        }

    # while -------------------------------------------------------------------------------------
    def start(self) -> CheckpointSync:
        self._scans.start()
        return self

    def _scan_logged(self) -> None:
        try:
            self.scan()
        except Exception:
            log.exception("bringing checkpoints home")

    def scan(self, *, final: bool = False) -> None:
        """Bring home what changed on the nodes: what stopped changing since the last scan, and
        at the end (``final``, the commands stopped) everything."""
        with self._lock:
            for node, folder in self.folders.items():
                try:
                    now = folder.scan()
                except Exception as error:
                    log.warning("checkpoint folder of node %d: %s", node, error)
                    continue
                before = self.seen.get(node)
                kept = self.kept.setdefault(node, {})
                for rel, state in sorted(now.items()):
                    if rel in kept and kept[rel].state == state:
                        continue
                    if final or (before is not None and before.get(rel) == state):
                        self._bring(node, folder, rel, state)
                if before is not None or final:
                    for rel in [r for r in kept if r not in now]:
                        if kept[rel].origin == node:
                            self.home.remove(node, rel)
                        del kept[rel]
                self.seen[node] = now

    def _bring(self, node: int, folder: NodeFolder, rel: str, state: State) -> None:
        size = state[0]
        old = self.kept[node].get(rel)
        total = self.total_bytes() - (old.size if old and old.origin == node else 0) + size
        if total > self.limit_bytes:
            if self.over is None:
                self.over = (
                    f"the checkpoints of this job run would hold {total / GB:.2f} GB (node "
                    f"{node}: {rel}), more than the {self.limit_bytes / GB:g} GB allowed "
                    f"({CHECKPOINT_MAX_GB.name}); nothing more is kept"
                )
                log.error("%s", self.over)
            return
        self.home.store(node, rel, folder)
        self.kept[node][rel] = _Kept(state, node, size)
        now = time.time()
        saved = self.saved
        saved["files"] = int(saved.get("files", 0)) + 1
        saved["bytes"] = int(saved.get("bytes", 0)) + size
        saved["at"] = now
        self.home.write_record(
            {
                "attempt": self.attempt,
                "run_id": self.run_id,
                "saved_at": now,
                "bytes": self.total_bytes(),
            }
        )

    def total_bytes(self) -> int:
        """What home holds of this job run (a file put back on several nodes counts once)."""
        return sum(k.size for n, kept in self.kept.items() for k in kept.values() if k.origin == n)

    # after -------------------------------------------------------------------------------------
    def finish(self) -> dict[str, Any]:
        """Stop the scans, bring home what is left; what this attempt saved."""
        self._scans.stop(timeout_s=60)
        self.scan(final=True)
        return dict(self.saved)


def count_restarts(log_files: Mapping[int, Path], *, most: int, ended_failed: bool) -> int:
    """How often torch elastic restarted a node's ranks in an attempt (``max_restarts`` =
    ``most``), from its agent's lines in the node's log: each round of failed ranks
    (``… failed (exitcode: …) local_rank: …``, one line per rank, within the same second) was
    followed by a restart, but the last one when the attempt ``ended_failed``."""
    import re

    failure = re.compile(rb"^\S+ \S+ \S+ [EW](\d{4} \d\d:\d\d:\d\d)\S* \d+ \S+\] failed \(exitcode")
    most_rounds = 0
    for path in log_files.values():
        rounds: set[bytes] = set()
        with contextlib.suppress(OSError), open(path, "rb") as file:
            for line in file:
                match = failure.match(line)
                if match:
                    rounds.add(match[1])
        most_rounds = max(most_rounds, len(rounds))
    restarts = most_rounds - 1 if ended_failed and most_rounds else most_rounds
    return min(most, restarts)


def remove_home(location: str) -> int:
    """Remove a job run's checkpoints kept in a folder here (log retention); bytes freed."""
    freed = sum(size for size, _ in scan_folder(Path(location)).values())
    shutil.rmtree(location, ignore_errors=True)
    return freed
