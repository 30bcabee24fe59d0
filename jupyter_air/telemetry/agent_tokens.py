"""Per-node tokens of node agents: minted for a node, checked by the server's ingest endpoint.

A token is minted on the Jupyter host (``air agent-token NODE`` or ``mint_token``) and given to
that node's agent; it lets the agent report for that node only, and nothing else (it is not a
Jupyter token). The server keeps only SHA-256 hashes, in ``<data_dir>/agent-tokens.json``
(mode 0600), which it re-reads when the file changes, so minting or revoking takes effect on a
running server. Minting a node's token again replaces its old one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from ..files import write_json
from .models import NODE_PATTERN

FILE = "agent-tokens.json"
PREFIX = "air-agent-"
MAX_TOKENS = 4096


class TokenError(ValueError):
    """A node name that cannot have a token, or a token file that cannot be written."""


def tokens_path(data_dir: str | os.PathLike[str]) -> Path:
    return Path(data_dir) / FILE


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def check_node_name(node: str) -> str:
    if not re.fullmatch(NODE_PATTERN, node or ""):
        raise TokenError(
            f"{node!r} is not a node name: use letters, digits, '.', '_' and '-' (up to 128, "
            "starting with a letter or digit), as in a host name."
        )
    return node


def mint_token(data_dir: str | os.PathLike[str], node: str) -> str:
    """A new token for ``node`` (replacing its previous one); only its hash is stored."""
    check_node_name(node)
    token = PREFIX + secrets.token_urlsafe(32)
    with _locked(tokens_path(data_dir)) as entries:
        if node not in entries and len(entries) >= MAX_TOKENS:
            raise TokenError(f"There are already {MAX_TOKENS} agent tokens; revoke some first.")
        entries[node] = {"sha256": digest(token), "created": round(time.time(), 3)}
    return token


def revoke_token(data_dir: str | os.PathLike[str], node: str) -> bool:
    """Forget ``node``'s token; whether it had one."""
    with _locked(tokens_path(data_dir)) as entries:
        return entries.pop(node, None) is not None


def token_nodes(data_dir: str | os.PathLike[str]) -> list[str]:
    """The nodes that have a token."""
    return sorted(_read(tokens_path(data_dir)))


def _read(path: Path) -> dict[str, dict[str, object]]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise TokenError(f"{path} cannot be read: {error}") from None
    nodes = data.get("nodes") if isinstance(data, dict) else None
    return {k: v for k, v in (nodes or {}).items() if isinstance(v, dict)}


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[dict[str, dict[str, object]]]:
    """The entries of the token file, written back atomically (0600) after the block; writers
    are serialised by a lock file so that two mints cannot lose one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(path.with_suffix(".lock"), os.O_CREAT | os.O_RDWR, 0o600)
    try:
        with contextlib.suppress(ImportError):
            import fcntl

            fcntl.flock(lock, fcntl.LOCK_EX)
        entries = _read(path)
        yield entries
        write_json(path, {"nodes": entries}, indent=1, sort_keys=True)
    finally:
        os.close(lock)  # releases the lock


class AgentTokens:
    """The server's view of the token file: ``node_for(token)`` in memory, and
    ``reload_if_changed`` (a stat, off the event loop) when ``due``: every ``recheck_s`` (a
    revoked token stops working within that), and for any token it does not know (one minted a
    moment ago works at once)."""

    def __init__(
        self,
        data_dir: str | os.PathLike[str],
        recheck_s: float = 2.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path = tokens_path(data_dir)
        self.recheck_s = recheck_s
        self._clock = clock
        self._checked: float | None = None
        self._stamp: tuple[int, int] | None = None
        self._by_digest: dict[str, str] = {}
        self._digests: dict[str, str] = {}  # token → digest: a channel's token, every report

    def due(self, token: str) -> bool:
        """Whether to look at the file again before answering for ``token``."""
        return (
            self._checked is None
            or self._clock() - self._checked >= self.recheck_s
            or self.node_for(token) is None
        )

    def reload_if_changed(self) -> None:
        """Re-read the file when it changed (blocking: call it off the event loop)."""
        self._checked = self._clock()
        try:
            st = self.path.stat()
        except FileNotFoundError:
            self._stamp, self._by_digest = None, {}
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == self._stamp:
            return
        try:
            entries = _read(self.path)
        except TokenError:
            return  # keep what was known; the next change is read again
        self._by_digest = {str(e.get("sha256")): node for node, e in entries.items()}
        self._stamp = stamp

    def node_for(self, token: str) -> str | None:
        """The node a token reports for, or None."""
        if not token.startswith(PREFIX):
            return None
        known = self._digests.get(token)
        if known is None:
            if len(self._digests) >= 2 * MAX_TOKENS:
                self._digests.clear()  # wrong tokens sent by the thousand: start again
            known = self._digests[token] = digest(token)
        return self._by_digest.get(known)
