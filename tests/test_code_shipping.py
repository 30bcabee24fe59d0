"""A node's cache of code snapshots (backends/code_shipping.py): what the Jupyter host packs a
node unpacks to the same content, and the cache keeps the snapshots used last, never one in use,
so a node that runs many different versions of code does not fill its disk."""

from __future__ import annotations

import os
import time
from pathlib import Path

from jupyter_air.backends.code_shipping import (
    pack_snapshot,
    prune_cache,
    snapshot_digest,
    unpack_snapshot,
    used,
)


def test_a_snapshot_unpacks_to_the_same_content(tmp_path: Path) -> None:
    code = tmp_path / "code"
    (code / "pkg").mkdir(parents=True)
    (code / "train.py").write_text("print('hi')\n")
    (code / "pkg" / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(code / "pkg" / "run.sh", 0o755)
    os.symlink("train.py", code / "main.py")
    unpack_snapshot(pack_snapshot(str(code)), tmp_path / "node")
    assert snapshot_digest(str(tmp_path / "node")) == snapshot_digest(str(code))
    assert os.readlink(tmp_path / "node" / "main.py") == "train.py"


def test_the_cache_keeps_the_snapshots_used_last_and_any_in_use(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    now = time.time()
    ages = {"d0": 0, "d1": 900, "d2": 7200, "d3": 10800, "d4": 14400, "d5": 18000}  # seconds
    for name, age in ages.items():
        entry = cache / name
        entry.mkdir(parents=True)
        os.utime(entry, (now - age, now - age))
    (cache / ".d9-unpacking").mkdir()  # a snapshot being unpacked: never touched
    used(cache / "d5")  # an attempt starts with it: used now
    assert sorted(prune_cache(cache, keep=2, in_use_s=1800)) == ["d2", "d3", "d4"]
    # d1 is past the two used last, but used 15 minutes ago: it may be in use, so it stays
    assert sorted(p.name for p in cache.iterdir()) == [".d9-unpacking", "d0", "d1", "d5"]
