"""YAML read with positions: the data, plus the line of every field, so that spec errors can say
where they are (``compute.num_accelerators: … (line 5)``).

PyYAML's composer gives a node tree with start marks; we walk it once to map field paths to lines
and to find duplicate keys (which ``safe_load`` would silently resolve to the last one).

Aliases (``*name``) make the tree a graph whose expansion can be exponential (nine levels of nine
aliases: 387 million values from a 1 KB file). Each node is walked once — an alias's lines are its
anchor's — and a document whose expansion exceeds ``MAX_VALUES`` is refused before anything reads
the data (validation and error messages would otherwise expand it).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

Path = tuple[str | int, ...]

MAX_VALUES = 100_000  # scalars, mappings and sequences, aliases expanded


@dataclass
class Problem:
    """One thing wrong with a document: where (a dotted field path and a line) and what."""

    path: str
    message: str
    line: int | None = None
    column: int | None = None
    hint: str | None = None  # after the position: "did you mean 'num_accelerators'?"

    def __str__(self) -> str:
        where = ""
        if self.line is not None:
            where = f" (line {self.line}" + (
                f", column {self.column})" if self.column is not None else ")"
            )
        head = f"{self.path}: " if self.path else ""
        hint = f"; {self.hint}" if self.hint else ""
        return f"{head}{self.message}{where}{hint}"


@dataclass
class Document:
    data: Any
    lines: dict[Path, int] = field(default_factory=dict)  # path → 1-based line of its key/item
    value_lines: dict[Path, int] = field(default_factory=dict)  # path → line of its value
    problems: list[Problem] = field(default_factory=list)  # duplicates and the like

    def line_of(self, path: Path, *, value: bool = False) -> int | None:
        """The line of ``path``, or of its nearest ancestor that has one."""
        table = self.value_lines if value else self.lines
        probe = tuple(path)
        while probe:
            if probe in table:
                return table[probe]
            if probe in self.lines:
                return self.lines[probe]
            probe = probe[:-1]
        return self.lines.get((), 1)


class YamlSyntaxError(ValueError):
    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def load(text: str) -> Document:
    """Parse one YAML document; raise YamlSyntaxError with its line and column."""
    import yaml

    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        if node is not None:
            _check_expansion(node)
        data = yaml.load(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        what = error.problem or error.context or "invalid YAML"
        if error.context and error.problem:
            what = f"{error.problem} ({error.context})"
        raise YamlSyntaxError(
            Problem(
                "",
                f"YAML syntax error: {what}",
                line=mark.line + 1 if mark else None,
                column=mark.column + 1 if mark else None,
            )
        ) from None
    except yaml.YAMLError as error:  # e.g. more than one document
        raise YamlSyntaxError(Problem("", f"YAML error: {error}")) from None
    except RecursionError:
        raise YamlSyntaxError(
            Problem("", "the document is nested too deeply to be a workload file")
        ) from None
    document = Document(data)
    if node is not None:
        document.lines[()] = node.start_mark.line + 1
        _walk(node, (), document, set())
    return document


def _check_expansion(root: Any) -> None:
    """Refuse a document that aliases expand beyond MAX_VALUES (each node counted once, with
    its expanded size remembered)."""
    import yaml

    sizes: dict[int, int] = {}

    def size(node: Any) -> int:
        known = sizes.get(id(node))
        if known is not None:
            return known
        sizes[id(node)] = 1  # a node that contains itself counts once
        total = 1
        if isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        elif isinstance(node, yaml.SequenceNode):
            children = list(node.value)
        else:
            children = []
        for child in children:
            total += size(child)
            if total > MAX_VALUES:
                break
        sizes[id(node)] = total
        return total

    if size(root) > MAX_VALUES:
        raise YamlSyntaxError(
            Problem(
                "",
                f"the document expands to more than {MAX_VALUES:,} values through YAML aliases "
                "(*name): a workload file is a few fields; write the values out instead",
                line=root.start_mark.line + 1,
            )
        )


def _walk(node: Any, path: Path, document: Document, walked: set[int]) -> None:
    import yaml

    if not (isinstance(node, yaml.ScalarNode) and node.value == ""):  # an empty value: key's line
        document.value_lines[path] = node.start_mark.line + 1
    if id(node) in walked:
        return  # an alias of a node already walked: its lines are the anchor's
    walked.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: dict[Any, int] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else str(key_node)
            line = key_node.start_mark.line + 1
            child = (*path, key)
            if key in seen:
                document.problems.append(
                    Problem(
                        dotted(child),
                        f"duplicate field (first given on line {seen[key]})",
                        line=line,
                    )
                )
            seen[key] = line
            document.lines[child] = line
            _walk(value_node, child, document, walked)
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            child = (*path, index)
            document.lines[child] = item.start_mark.line + 1
            _walk(item, child, document, walked)


def dotted(path: Path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
