"""``air run --override FIELD=VALUE``: an override parsed, told apart in error messages (it has no
line in the file), and recorded after the stored workload text so that a job run says what it was
submitted with."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .yaml_source import Problem

OVERRIDDEN = " (from --override)"
MAX_OVERRIDES = 100


@dataclass(frozen=True)
class Override:
    """``FIELD=VALUE`` of ``air run --override``: a dotted field path and its YAML value."""

    path: str
    value: Any
    text: str  # as given

    @classmethod
    def parse(cls, text: str) -> Override:
        """Raises ValueError saying what is wrong with ``text``."""
        import yaml

        name, equals, raw = text.partition("=")
        name = name.strip()
        if not equals or not name:
            raise ValueError(f"{text!r} is not FIELD=VALUE (e.g. compute.num_accelerators=4)")
        parts = name.split(".")
        if not all(parts) or any(not re.fullmatch(r"[A-Za-z0-9_\-]+", p) for p in parts):
            raise ValueError(f"{name!r} is not a dotted field path (e.g. env_variables.FOO)")
        if not raw.strip():
            return cls(name, "", text)
        try:
            value = yaml.safe_load(raw)
        except yaml.YAMLError as error:
            raise ValueError(f"{text!r}: the value is not YAML ({error})") from None
        return cls(name, value, text)


def is_overridden(path: str, overridden: frozenset[str]) -> bool:
    return any(path == o or path.startswith(o + ".") for o in overridden)


def from_override(problem: Problem, overridden: frozenset[str]) -> Problem:
    if not problem.path or not is_overridden(problem.path, overridden):
        return problem
    return Problem(problem.path, problem.message + OVERRIDDEN, hint=problem.hint)


def overrides_comment(overrides: Sequence[Override]) -> str:
    """What is appended to the stored workload text of a job run submitted with overrides: the
    file stays as it was submitted, the overrides follow as comments (``recorded_overrides``
    reads them back)."""
    if not overrides:
        return ""
    lines = "".join(f"#   {o.text}\n" for o in overrides)
    return f"\n{OVERRIDES_HEADER}\n{lines}"


OVERRIDES_HEADER = "# air run --override (applied on top of the file above):"


def recorded_overrides(spec_yaml: str | None) -> list[str]:
    """The ``FIELD=VALUE`` overrides a job run was submitted with (``overrides_comment``)."""
    if not spec_yaml or OVERRIDES_HEADER not in spec_yaml:
        return []
    tail = spec_yaml.rsplit(OVERRIDES_HEADER, 1)[1]
    return [line[4:] for line in tail.splitlines() if line.startswith("#   ")]
