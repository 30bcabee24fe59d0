"""Writes the field reference of the workload YAML into docs/workloads.md (between its
``<!-- fields:start … -->`` and ``<!-- fields:end -->`` markers) from the spec's own schema
(jupyter_air/workloads/fields.py); ``--check`` only says whether the doc is current (exit 1
when not).

    python scripts/field_reference.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOC = ROOT / "docs" / "workloads.md"


def main(argv: list[str] | None = None) -> int:
    from jupyter_air.workloads.fields import with_reference

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; write nothing")
    args = parser.parse_args(argv)
    current = DOC.read_text(encoding="utf-8")
    wanted = with_reference(current)
    if current == wanted:
        return 0
    if args.check:
        print(f"stale: {DOC.relative_to(ROOT)} (run python scripts/field_reference.py)")
        return 1
    DOC.write_text(wanted, encoding="utf-8")
    print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
