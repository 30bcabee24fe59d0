"""``air explain FIELD`` (also ``air run -h FIELD``): a workload YAML field's type, default,
allowed values, limits and help, from the spec's own schema (``workloads/fields.py``)."""

from __future__ import annotations

import argparse

from .common import EXIT_OK, EXIT_USAGE, CliError
from .render import json_out, table, width


def cmd_explain(args: argparse.Namespace) -> int:
    from ..workloads.fields import UnknownField, all_fields, explain

    if not args.field:
        fields = all_fields()
        if args.output == "json":
            json_out([f.to_dict() for f in fields])
            return EXIT_OK
        rows = [[f.path, f.type, "required" if f.required else f.default or ""] for f in fields]
        table(["FIELD", "TYPE", "DEFAULT"], rows, keep=(0,))
        print("\n`air explain FIELD` says more of one (e.g. air explain compute.num_nodes).")
        return EXIT_OK
    try:
        found = explain(args.field)
    except UnknownField as error:
        raise CliError(str(error), EXIT_USAGE) from None
    if args.output == "json":
        json_out(found.to_dict())
    else:
        print(found.text(width() or 80))
    return EXIT_OK


def field_help_argv(argv: list[str]) -> list[str]:
    """``air run -h FIELD`` as ``air explain FIELD`` (a FIELD that is not a file: ``air run -h
    workload.yaml`` is still the command's help)."""
    import os

    if len(argv) < 3 or argv[0] != "run":
        return argv
    for i, arg in enumerate(argv[1:-1], start=1):
        following = argv[i + 1]
        if arg in ("-h", "--help") and not following.startswith("-"):
            if os.path.exists(following):
                return argv
            return ["explain", following, *argv[i + 2 :]]
    return argv
