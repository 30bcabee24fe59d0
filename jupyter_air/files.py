"""Files that a reader never sees half-written, in one place: written under a temporary name in
the same folder (the same filesystem), flushed, then renamed over the old one, which is atomic.

Records of processes (MLflow's endpoint and status, leases, a server's data folder), the GPU
holds, agent tokens, a keeper's exit status and a ``@distributed`` call's run folder (payload,
results, pids) are all written this way: a reader gets the old file or the new one, never a
part. A crash leaves at most a ``.NAME.PID.tmp`` file beside it, never a broken record.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def replacing(path: str | os.PathLike[str]) -> Iterator[Path]:
    """A temporary name beside ``path`` (``.NAME.PID.tmp``) to write the new file to; it
    replaces ``path`` when the block ends, and is removed when the block fails."""
    target = Path(path)
    partial = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    try:
        yield partial
        partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise


def write_atomic(path: str | os.PathLike[str], data: bytes | str, *, mode: int = 0o600) -> None:
    """Replace ``path`` by ``data`` at once; a new file gets ``mode`` (0600: only its owner
    reads it)."""
    with replacing(path) as partial:
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as file:
            file.write(data.encode() if isinstance(data, str) else data)


def copy_atomic(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
    """Copy ``source`` over ``target`` at once, its modification time kept: a reader of
    ``target`` sees the old file or the whole new one."""
    import shutil

    with replacing(target) as partial:
        shutil.copyfile(source, partial)
        shutil.copystat(source, partial)


def write_json(path: str | os.PathLike[str], value: Any, *, mode: int = 0o600, **dump: Any) -> None:
    """``write_atomic`` of ``value`` as JSON (``dump``: ``json.dumps`` options)."""
    write_atomic(path, json.dumps(value, **dump), mode=mode)


def scan_folder(root: str | os.PathLike[str]) -> dict[str, tuple[int, int]]:
    """The regular files under ``root`` (relative paths) and their state (size, modification
    time in ns), without the partial copies these functions make (``.NAME….tmp``)."""
    import stat

    found: dict[str, tuple[int, int]] = {}
    for folder, _dirs, names in os.walk(root):
        for name in names:
            if name.startswith(".") and name.endswith(".tmp"):
                continue  # a copy under way (files.copy_atomic)
            path = os.path.join(folder, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found[os.path.relpath(path, root)] = (info.st_size, info.st_mtime_ns)
    return found
