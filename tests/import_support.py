"""What an import does in a fresh interpreter: the packages it loads and the threads it starts
(imported by the tests that keep imports light; no fixtures here)."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable


def assert_light_import(statement: str, heavy: Iterable[str]) -> None:
    """``statement`` run in a new Python loads none of the packages ``heavy`` (top-level names)
    and starts no thread."""
    code = (
        f"import sys, threading; {statement}; "
        f"loaded = sorted({{m.split('.')[0] for m in sys.modules}} & {set(heavy)!r}); "
        "assert not loaded, loaded; "
        "assert threading.active_count() == 1, threading.enumerate()"
    )
    run_fresh(code)


def run_fresh(code: str) -> str:
    """Run ``code`` in a new Python; its standard output (it must succeed)."""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout
