"""A folder on a Ray node, reached through the node's actor: a job run's checkpoint folder on a
host that shares no disk with the Jupyter host.

The node's actor (``ray_node.NodeRunner``) makes the folder (in its Ray node's temporary folder:
the same path in every attempt on that node), lists it, and reads and writes its files in
chunks, so a checkpoint of many GB never sits whole in memory or in Ray's object store.
``ActorFolder`` is the Jupyter host's side: what ``workloads/checkpoints.py`` scans, fetches from
and puts into (its ``NodeFolder``). Every write goes to a temporary name (``.NAME….tmp``, which a
scan passes over) and is renamed when whole, on both sides: a reader never sees half a file.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

CHUNK = 64 << 20  # bytes a call carries
CALL_S = 60.0  # a listing, or a chunk: a node that does not answer within it is gone


def inside(root: str, rel: str) -> Path:
    """``rel`` below ``root``, refused when it points out of it (``..``, an absolute path)."""
    base = Path(root).resolve()
    path = (base / rel).resolve()
    if path == base or not path.is_relative_to(base):
        raise ValueError(f"{rel!r} is not a file of {root}")
    return path


def read_chunk(root: str, rel: str, offset: int) -> bytes:
    """At most ``CHUNK`` bytes of ``rel`` from ``offset`` (fewer: the file's end)."""
    with open(inside(root, rel), "rb") as file:
        file.seek(offset)
        return file.read(CHUNK)


def write_chunk(root: str, rel: str, offset: int, data: bytes, last: bool) -> tuple[int, int]:
    """``data`` at ``offset`` of ``rel``'s copy under way; ``last``: the copy is whole and
    replaces ``rel``. The file's state (size, modification time in ns) once whole, else
    the copy's."""
    target = inside(root, rel)
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.put.tmp")
    with open(partial, "r+b" if offset else "wb") as file:
        file.seek(offset)
        file.write(data)
    if not last:
        return (offset + len(data), 0)
    partial.replace(target)
    info = target.stat()
    return (info.st_size, info.st_mtime_ns)


@dataclass
class ActorFolder:
    """A node's folder seen from the Jupyter host, through its actor (``NodeFolder``)."""

    actor: Any
    path: str  # as the node's command sees it

    def scan(self) -> dict[str, tuple[int, int]]:
        import ray

        found = ray.get(self.actor.scan_folder.remote(self.path), timeout=CALL_S)
        return {rel: (int(state[0]), int(state[1])) for rel, state in found.items()}

    def fetch(self, rel: str, target: Path) -> None:
        import ray

        from ..files import replacing

        with replacing(target) as partial, open(partial, "wb") as out:
            offset = 0
            while True:
                data = ray.get(self.actor.read_chunk.remote(self.path, rel, offset), timeout=CALL_S)
                out.write(data)
                offset += len(data)
                if len(data) < CHUNK:
                    break

    def put(self, rel: str, source: Path) -> tuple[int, int]:
        import ray

        with open(source, "rb") as file:
            offset = 0
            while True:
                data = file.read(CHUNK)
                last = len(data) < CHUNK
                ref = self.actor.write_chunk.remote(self.path, rel, offset, data, last)
                state = ray.get(ref, timeout=CALL_S)
                offset += len(data)
                if last:
                    return (int(state[0]), int(state[1]))
