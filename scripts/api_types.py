"""Writes the REST API's JSON Schema (jupyter_air/api/schema.json), its TypeScript types
(src/api/models.ts) and the models section of docs/api.md from the pydantic models in
jupyter_air/api. Run by scripts/setup.sh before the frontend build; `--check` only says
whether the committed files are current (exit 1 when not).

    python scripts/api_types.py [--check]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def outputs() -> dict[Path, str]:
    """Every generated file and what it must hold."""
    from jupyter_air.api import schema

    docs = ROOT / "docs" / "api.md"
    return {
        ROOT / "jupyter_air" / "api" / "schema.json": schema.schema_text(),
        ROOT / "src" / "api" / "models.ts": schema.typescript(),
        docs: schema.with_docs_section(docs.read_text(encoding="utf-8")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only check; write nothing")
    args = parser.parse_args(argv)
    stale = []
    for path, text in outputs().items():
        current = path.read_text(encoding="utf-8") if path.exists() else None
        if current == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        names = ", ".join(str(p) for p in stale)
        print(f"stale: {names} (run python scripts/api_types.py)", file=sys.stderr)
        return 1
    for path in stale:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
