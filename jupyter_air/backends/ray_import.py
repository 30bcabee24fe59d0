"""Ray imported in a third of the time in jupyter-air's own processes (the ``air`` command, a
workload's supervisor, a node keeper, the telemetry agents' driver).

``import ray`` imports ``jsonschema``, which imports its optional ``rfc3987_syntax`` for the
``iri`` formats when it is installed; that package compiles 38 grammars at import: 1.1 s of the
1.5 s of ``import ray`` on a 2-core machine (bench/README.md). Nothing in Ray checks those
formats, so these processes tell Python the package is absent before anything imports Ray. A
user's kernel is left alone: it imports what it imports.
"""

from __future__ import annotations

import sys

SLOW_OPTIONAL = ("rfc3987_syntax",)


def without_slow_optional_imports() -> None:
    """Mark the slow optional packages absent (``import`` of one raises ImportError, which its
    importers expect), unless something imported one already. Call first in a process's main."""
    for name in SLOW_OPTIONAL:
        sys.modules.setdefault(name, None)  # type: ignore[arg-type]
