"""A workload's code on nodes that do not see the Jupyter host's folders: one hash for what a
snapshot holds (the same code, the same digest, whichever job's folder holds it, so a node that
has it already is sent nothing), and the snapshot packed on the Jupyter host, unpacked on a node
into its cache, which keeps the snapshots used last (``prune_cache``).
``workloads/snapshot.py`` makes snapshots; the Ray backend ships them with these.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path


def walk_files(folder: str) -> Iterator[str]:
    """Every file and link below ``folder`` (links to folders as entries, never followed), in
    time linear in their count."""
    for root, dirs, files in os.walk(folder, followlinks=False):
        linked = {d for d in dirs if os.path.islink(os.path.join(root, d))}
        dirs[:] = sorted(d for d in dirs if d != ".git" and d not in linked)
        for name in sorted([*files, *linked]):
            yield os.path.relpath(os.path.join(root, name), folder)


def snapshot_digest(code_path: str) -> str:
    """What a snapshot holds, as one hash: each entry's name, kind (file, executable file, link)
    and content or target. The same code has the same digest whichever job's folder holds it, so
    a node that has it already is sent nothing."""
    import hashlib

    digest = hashlib.sha256()
    for relative in walk_files(code_path):
        path = os.path.join(code_path, relative)
        if os.path.islink(path):
            entry, data = b"L", os.fsencode(os.readlink(path))
        else:
            entry = b"X" if os.access(path, os.X_OK) else b"F"
            with open(path, "rb") as file:
                data = hashlib.sha256(file.read()).digest()
        digest.update(entry + os.fsencode(relative) + b"\0" + data + b"\0")
    return digest.hexdigest()


def pack_snapshot(code_path: str) -> bytes:
    """The snapshot as a compressed tar (links as links), for ``unpack_snapshot`` on a node."""
    import io
    import tarfile

    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz", compresslevel=1) as tar:
        for relative in walk_files(code_path):
            tar.add(os.path.join(code_path, relative), arcname=relative, recursive=False)
    return buffer.getvalue()


def unpack_snapshot(data: bytes, target: Path) -> None:
    """A packed snapshot into ``target`` (which must not exist): nothing lands outside it (no
    absolute names, ``..`` or links out of it; tarfile's ``data`` filter)."""
    import io
    import tarfile

    target.mkdir(parents=True)
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as tar:
        tar.extractall(target, filter="data")


KEEP_SNAPSHOTS = 16  # a node's cache keeps the snapshots used last, this many at least
IN_USE_S = 3600.0  # and never removes one used within this long (an attempt about to copy it)


def used(entry: Path) -> None:
    """Mark a cached snapshot as used now (its folder's modification time)."""
    import contextlib

    with contextlib.suppress(OSError):
        os.utime(entry)


def prune_cache(cache: Path, keep: int = KEEP_SNAPSHOTS, in_use_s: float = IN_USE_S) -> list[str]:
    """Remove the snapshots of a node's cache beyond the ``keep`` used last, but none used
    within ``in_use_s``; the digests removed. (Attempts run in their own copy, so a snapshot
    removed later only has to be sent again.)"""
    import shutil
    import time

    try:
        entries = [e for e in cache.iterdir() if e.is_dir() and not e.name.startswith(".")]
    except OSError:
        return []
    entries.sort(key=lambda e: e.stat().st_mtime, reverse=True)
    cutoff = time.time() - in_use_s
    removed = []
    for entry in entries[keep:]:
        if entry.stat().st_mtime < cutoff:
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry.name)
    return removed
