"""jupyter-air's data folder is private to its owner: folders 0700, files 0600.

The rule, in one place:
- every folder jupyter-air makes in the data folder is made with ``private_folder`` (0700, each
  missing level), and every file it opens for writing there with ``open_private`` (0600), or a
  mode of 0600 (SQLite's ``-wal`` and ``-shm`` files take the database's mode; the embedded
  MLflow server and its guard run with a umask of 077: they run nothing of the user's);
- a data folder made by an earlier version is narrowed once per process, when it is opened
  (``secure_data_dir``): the data folder itself, what jupyter-air keeps directly in it (by name:
  the data folder may hold files of the user's), and every entry directly in ``workloads/`` and
  ``mlflow/`` (the databases, the server's files, ``jobs/``, ``artifacts/``). What lies deeper
  (millions of log lines, the snapshots) is not walked: the folders above it are 0700, so
  nobody else reaches it.

The job's own processes keep the umask they were given: the files a job writes in its working
folder are the user's business. A snapshot keeps each file's mode (an executable stays one); it
lies in the job's 0700 folder.
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from pathlib import Path
from typing import BinaryIO

FOLDER_MODE = 0o700
FILE_MODE = 0o600
UMASK = 0o077  # for processes of ours that run nothing of the user's (the MLflow guard)

# what ``secure_data_dir`` narrows in the data folder, and where it narrows every entry
_OURS = (
    "workloads", "mlflow", "gpu-holds", "runs",
    "agent-tokens.json", "agent-tokens.lock", "cluster-agents.log",
)  # fmt: skip
_ALL_OURS = ("workloads", "mlflow")
_secured: set[str] = set()
_lock = threading.Lock()


def private_folder(path: str | os.PathLike[str]) -> Path:
    """``path``, made a folder only its owner can enter: each missing level is made 0700, and
    the folder itself narrowed to 0700 when it exists with more."""
    folder = Path(path)
    missing = []
    current = folder
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    for level in reversed(missing):
        with contextlib.suppress(FileExistsError):  # made by another process meanwhile
            level.mkdir(mode=FOLDER_MODE)
    narrow(folder)
    return folder


def open_private(path: str | os.PathLike[str]) -> BinaryIO:
    """``path`` opened to append, made 0600 when it is new (and narrowed when it is not)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, FILE_MODE)
    narrow_fd(fd)
    return os.fdopen(fd, "ab")


def create_private(path: str | os.PathLike[str]) -> None:
    """Make an empty ``path`` with mode 0600 unless it exists (before SQLite creates it)."""
    with contextlib.suppress(FileExistsError):
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, FILE_MODE))


def narrow(path: str | os.PathLike[str]) -> None:
    """Take group and other permissions away from ``path`` (a folder: 0700 at most, a file:
    0600 at most) when this user owns it; links, missing paths and others' files are left."""
    try:
        info = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(info.st_mode) or info.st_uid != os.getuid():
        return
    allowed = FOLDER_MODE if stat.S_ISDIR(info.st_mode) else FILE_MODE
    mode = stat.S_IMODE(info.st_mode)
    if mode & ~allowed:
        with contextlib.suppress(OSError):
            os.chmod(path, mode & allowed)


def narrow_fd(fd: int) -> None:
    info = os.fstat(fd)
    mode = stat.S_IMODE(info.st_mode)
    if info.st_uid == os.getuid() and mode & ~FILE_MODE:
        with contextlib.suppress(OSError):
            os.fchmod(fd, mode & FILE_MODE)


def secure_data_dir(data: str | os.PathLike[str]) -> Path:
    """Make the data folder (and what an earlier version left in it with wider modes) private:
    once per process and folder, a few ``lstat`` calls (see the module's docstring)."""
    folder = Path(data)
    key = os.path.abspath(folder)
    with _lock:
        if key in _secured:
            return folder
        _secured.add(key)
    private_folder(folder)
    for name in _OURS:
        narrow(folder / name)
    for name in _ALL_OURS:
        narrow_entries(folder / name)
    return folder


def narrow_entries(folder: str | os.PathLike[str]) -> None:
    """``narrow`` every entry directly in ``folder`` (not deeper)."""
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return
    for entry in entries:
        narrow(entry.path)
