"""The code a job run runs: at submission, a copy of ``working_dir`` in the job's folder
(``code_source: snapshot``, the default), so that every attempt — a retry at 3 am too — runs the
files as they were submitted, not as they were edited since; or the folder itself
(``code_source: live``).

In a git repository the copy is what git would commit: ``git ls-files --cached --others
--exclude-standard`` (tracked files and untracked ones that ``.gitignore`` does not exclude);
elsewhere every file of the folder. ``.git`` is never copied. A snapshot has limits (files and
bytes, below): past them the submission is refused before anything is created, saying what to do.
Each attempt's MLflow run gets the git commit and whether the folder had uncommitted changes, and
the snapshot as its artifact ``code/`` when it is small (else its path as a tag).

Symbolic links are copied as links. A link that points outside the folder (after every link and
``..`` on its way) refuses the submission, naming the link: what it points to is not the
folder's to copy to every node and into an artifact others can read. The artifact leaves links
out (an upload would read their targets) and lists them in ``code/LINKS.txt``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ..backends.code_shipping import walk_files
from ..config import WORKING_DIR
from ..rendering import size_text

# the limits of a snapshot, and of the copy each attempt's run keeps as its artifact code/
MAX_SNAPSHOT_BYTES = 256 << 20
MAX_SNAPSHOT_FILES = 20_000
MAX_ARTIFACT_BYTES = 5 << 20

SNAPSHOT = "snapshot"
LIVE = "live"
CODE_FOLDER = "code"  # in the job's folder
LINKS_FILE = "LINKS.txt"  # in the artifact code/: the snapshot's links, which are not uploaded
AIRIGNORE = ".airignore"  # in the working folder: what no snapshot holds (.gitignore's syntax)
BIGGEST_NAMED = 3  # files a refusal for size names
WORKING_DIR_ENV = WORKING_DIR.name  # each node's command: the working_dir submitted
GIT_TIMEOUT_S = 30.0

TAG_GIT_COMMIT = "mlflow.source.git.commit"
TAG_GIT_DIRTY = "jupyter_air.git_dirty"
TAG_CODE_SOURCE = "jupyter_air.code_source"
TAG_CODE_PATH = "jupyter_air.code_path"


class SnapshotRefused(ValueError):
    """The working folder cannot be snapshotted as it is; ``hint`` says what to do."""

    hint = ""


class LinkOutside(SnapshotRefused):
    """A symbolic link of the working folder points outside it: what it points to is not the
    user's code to copy (a link to ``/etc`` or to another project's secrets would reach every
    node and the run's artifact ``code/``)."""

    def __init__(self, folder: str, name: str, target: str) -> None:
        self.folder, self.name, self.target = folder, name, target
        super().__init__(
            f"{folder} holds the symbolic link {name} -> {target}, which points outside the "
            "folder: a snapshot copies only what is inside it"
        )

    hint = (
        "copy the file it points to into the folder, remove the link (or list it in a "
        ".gitignore of a git repository), or set code_source: live to run the folder as it is"
    )


class SnapshotTooLarge(SnapshotRefused):
    """The working folder is over a snapshot's limits (``files``/``bytes``: counted so far;
    ``biggest``: the largest files among them, for the message)."""

    def __init__(
        self, folder: str, files: int, size: int, biggest: list[tuple[int, str]] | None = None
    ) -> None:
        self.folder, self.files, self.size = folder, files, size
        over = (
            f"more than {MAX_SNAPSHOT_FILES:,} files"
            if files > MAX_SNAPSHOT_FILES
            else f"more than {size_text(MAX_SNAPSHOT_BYTES)}"
        )
        largest = sorted(biggest or [], reverse=True)[:BIGGEST_NAMED]
        named = ", ".join(f"{name} ({size_text(bytes_)})" for bytes_, name in largest)
        super().__init__(
            f"{folder} holds {over} to snapshot (at most {MAX_SNAPSHOT_FILES:,} files and "
            f"{size_text(MAX_SNAPSHOT_BYTES)})" + (f"; the largest: {named}" if named else "")
        )

    hint = (
        f"list what the command does not need (data, checkpoints, environments) in an "
        f"{AIRIGNORE} (or a .gitignore of a git repository), or set code_source: live to run "
        "the folder as it is"
    )


@dataclass
class Git:
    """The git repository a folder is in: HEAD's commit (None before the first commit) and
    whether the folder has changes git would show (untracked files that are not ignored too)."""

    commit: str | None
    dirty: bool


@dataclass
class Listing:
    """What a snapshot of ``folder`` copies: paths relative to it, their total size."""

    folder: str
    paths: list[str]
    bytes: int
    git: Git | None


@dataclass
class CodeRecord:
    """What a job run records of its code (in its spec's JSON, key ``code``)."""

    source: str  # snapshot or live
    folder: str  # the working_dir submitted
    path: str | None = None  # the snapshot (in the job's folder)
    files: int | None = None
    bytes: int | None = None
    git_commit: str | None = None
    git_dirty: bool | None = None
    git: bool = False  # the folder is in a git repository

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: Any) -> CodeRecord | None:
        if not isinstance(data, dict) or data.get("source") not in (SNAPSHOT, LIVE):
            return None
        known = {k: data[k] for k in cls.__dataclass_fields__ if k in data}
        return cls(**known)


def resolve_source(asked: str | None) -> str:
    """The code source of a submission: as the spec says; when it says nothing, a snapshot, on
    every backend (the Ray backend ships it to its nodes: ``pack_snapshot``)."""
    return asked if asked in (SNAPSHOT, LIVE) else SNAPSHOT


def attempt_cwd(working_dir: str | None, code: CodeRecord | None) -> str:
    """Where each attempt's command runs: the snapshot, or the working folder itself."""
    if code is not None and code.source == SNAPSHOT and code.path:
        return code.path
    return working_dir or os.getcwd()


# git ------------------------------------------------------------------------------------------
def _git(folder: str, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    if shutil.which("git") is None:
        return None
    try:
        return subprocess.run(
            ["git", "-C", folder, *args],
            capture_output=True,
            timeout=GIT_TIMEOUT_S,
            stdin=subprocess.DEVNULL,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0", "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None


def git_info(folder: str) -> Git | None:
    """The repository ``folder`` is in, or None when it is in none (or git is not installed)."""
    inside = _git(folder, "rev-parse", "--is-inside-work-tree")
    if inside is None or inside.returncode != 0 or inside.stdout.strip() != b"true":
        return None
    head = _git(folder, "rev-parse", "--verify", "--quiet", "HEAD")
    commit = head.stdout.decode().strip() if head is not None and head.returncode == 0 else None
    status = _git(folder, "status", "--porcelain", "--untracked-files=normal", "--", ".")
    dirty = status is None or status.returncode != 0 or bool(status.stdout.strip())
    return Git(commit or None, dirty)


# listing and copying ----------------------------------------------------------------------------
def list_snapshot(folder: str, *, data: str | os.PathLike[str] | None = None) -> Listing:
    """The files a snapshot of ``folder`` would copy — never those of jupyter-air's ``data``
    folder when it is inside (the job store, other jobs' snapshots). Raises SnapshotTooLarge
    past the limits (counting stops there: a huge folder is not walked to its end)."""
    git = git_info(folder)
    names = _git_files(folder) if git is not None else None
    candidates = names if names is not None else walk_files(folder)
    skipped = _inside(Path(data), Path(folder)) if data is not None else None
    ignored = _airignore(folder)
    real_folder = os.path.realpath(folder)
    paths: list[str] = []
    total = 0
    biggest: list[tuple[int, str]] = []  # the largest files so far (size, name), for a refusal
    for relative in candidates:
        parts = Path(relative).parts
        if not parts or ".git" in parts or (skipped and parts[: len(skipped)] == skipped):
            continue
        if ignored is not None and ignored(relative):
            continue
        path = os.path.join(folder, relative)
        try:
            info = os.lstat(path)
        except OSError:
            continue  # listed by git, deleted since
        if _is_link(info.st_mode):
            _check_link(folder, real_folder, relative, path)
        elif not _is_file(info.st_mode):
            continue  # a submodule's folder
        paths.append(relative)
        size = info.st_size if _is_file(info.st_mode) else 0
        total += size
        biggest = sorted([*biggest, (size, relative)], reverse=True)[:BIGGEST_NAMED]
        if len(paths) > MAX_SNAPSHOT_FILES or total > MAX_SNAPSHOT_BYTES:
            raise SnapshotTooLarge(folder, len(paths), total, biggest)
    return Listing(folder, sorted(paths), total, git)


def _airignore(folder: str) -> Any:
    """Whether a path (relative to ``folder``) is listed in its ``.airignore`` (the patterns
    of a .gitignore, applied to tracked files too); None without one."""
    path = os.path.join(folder, AIRIGNORE)
    if not os.path.isfile(path):
        return None
    import pathspec

    with open(path, encoding="utf-8", errors="replace") as file:
        spec = pathspec.GitIgnoreSpec.from_lines(file.read().splitlines())
    return spec.match_file


def _inside(path: Path, folder: Path) -> tuple[str, ...] | None:
    """``path`` relative to ``folder`` (as parts) when it is inside it."""
    try:
        return path.resolve().relative_to(folder.resolve()).parts or None
    except ValueError:
        return None


def _git_files(folder: str) -> list[str] | None:
    listed = _git(folder, "ls-files", "--cached", "--others", "--exclude-standard", "-z")
    if listed is None or listed.returncode != 0:
        return None
    names = [os.fsdecode(n) for n in listed.stdout.split(b"\0") if n]
    return list(dict.fromkeys(names))  # a file in conflict is listed once per stage


def _check_link(folder: str, real_folder: str, relative: str, path: str) -> None:
    """Refuse a link whose target, followed to the end (links of links, ``..``), is outside the
    folder. A link whose target does not exist is kept when it would be inside."""
    target = os.path.realpath(path)
    if target != real_folder and not target.startswith(real_folder.rstrip(os.sep) + os.sep):
        raise LinkOutside(folder, relative, os.readlink(path))


def _is_file(mode: int) -> bool:
    import stat

    return stat.S_ISREG(mode)


def _is_link(mode: int) -> bool:
    import stat

    return stat.S_ISLNK(mode)


def copy_snapshot(listing: Listing, target: Path) -> CodeRecord:
    """Copy the listed files into ``target`` (which must not exist), links as links. Raises
    OSError or SnapshotTooLarge (the files grew since they were listed); the caller removes
    what was copied."""
    target.mkdir(parents=True)
    real_folder = os.path.realpath(listing.folder)
    total = 0
    copied = 0
    for relative in listing.paths:
        source = os.path.join(listing.folder, relative)
        destination = target / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            if os.path.islink(source):
                link = os.readlink(source)
                if os.path.isabs(link):  # into the copy, not back into the live folder
                    inside = os.path.relpath(os.path.realpath(source), real_folder)
                    link = os.path.relpath(target / inside, destination.parent)
                os.symlink(link, destination)
            else:
                shutil.copy2(source, destination)
                total += destination.stat().st_size
        except FileNotFoundError:
            continue  # deleted since it was listed
        copied += 1
        if total > MAX_SNAPSHOT_BYTES:
            raise SnapshotTooLarge(listing.folder, copied, total)
    return CodeRecord(
        source=SNAPSHOT,
        folder=listing.folder,
        path=str(target),
        files=copied,
        bytes=total,
        git_commit=listing.git.commit if listing.git else None,
        git_dirty=listing.git.dirty if listing.git else None,
        git=listing.git is not None,
    )


def artifact_folder(code_path: str, into: Path) -> Path:
    """The snapshot as its artifact ``code/`` is uploaded: its files (hard links where the
    filesystem allows, else copies) without its symbolic links, since an upload reads what a
    link points to, and ``LINKS.txt`` naming each link as ``name -> target``."""
    links = []
    for relative in walk_files(code_path):
        source = os.path.join(code_path, relative)
        if os.path.islink(source):
            links.append(f"{relative} -> {os.readlink(source)}")
            continue
        destination = into / relative
        destination.parent.mkdir(parents=True, exist_ok=True)
        try:
            os.link(source, destination)
        except OSError:
            shutil.copy2(source, destination)
    if links:
        listed = into / LINKS_FILE
        k = 1
        while listed.exists():  # the code's own LINKS.txt: a hard link to the snapshot's file
            k += 1
            listed = into / f"LINKS-{k}.txt"
        with open(listed, "x") as file:  # a new file: never written through to the snapshot
            file.write("\n".join(links) + "\n")
    return into


def live_record(folder: str) -> CodeRecord:
    git = git_info(folder)
    return CodeRecord(
        source=LIVE,
        folder=folder,
        git_commit=git.commit if git else None,
        git_dirty=git.dirty if git else None,
        git=git is not None,
    )


def run_tags(code: CodeRecord | None) -> dict[str, str]:
    """The tags of an attempt's MLflow run that say which code it ran. A live folder is looked
    at again when the attempt starts: that is what it runs."""
    if code is None:
        return {}
    tags = {TAG_CODE_SOURCE: code.source}
    if code.source == LIVE:
        code = live_record(code.folder)
    if code.git_commit:
        tags[TAG_GIT_COMMIT] = code.git_commit
    if code.git:
        tags[TAG_GIT_DIRTY] = "true" if code.git_dirty else "false"
    if code.path and not artifact_sized(code):
        tags[TAG_CODE_PATH] = code.path
    return tags


def artifact_sized(code: CodeRecord | None) -> bool:
    """The snapshot is kept as each attempt's artifact ``code/`` (else its path is a tag)."""
    return bool(
        code is not None and code.path and code.bytes is not None
        and code.bytes <= MAX_ARTIFACT_BYTES
    )  # fmt: skip


def code_text(code: CodeRecord | None) -> str | None:
    """``snapshot of 12 files, 3.4 KiB; git 3f2a9c1b0d4e (uncommitted changes)``."""
    if code is None:
        return None
    if code.source == SNAPSHOT:
        text = f"snapshot of {code.files} file{'s' if code.files != 1 else ''}, "
        text += size_text(code.bytes or 0)
    else:
        text = f"live ({code.folder} as each attempt finds it)"
    if code.git:
        commit = code.git_commit[:12] if code.git_commit else "no commit yet"
        text += f"; git {commit}" + (" (uncommitted changes)" if code.git_dirty else "")
    return text
