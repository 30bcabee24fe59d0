"""The installed package is what Jupyter sees: server extension and labextension both OK."""

from __future__ import annotations

import re
import subprocess
import sys


def jupyter(*args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "jupyter", *args], capture_output=True, text=True, timeout=120
    )
    return re.sub(r"\x1b\[[0-9;]*m", "", result.stdout + result.stderr)


def test_server_extension_is_enabled_and_loads():
    out = jupyter("server", "extension", "list")
    assert re.search(r"jupyter_air\s+enabled", out), out
    assert re.search(r"jupyter_air \S+ OK", out), out


def test_labextension_is_installed_enabled_and_ok():
    out = jupyter("labextension", "list")
    assert re.search(r"jupyter-air v\S+ enabled\s+OK", out), out
