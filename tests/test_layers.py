"""The package's layers, read from the source with ``ast`` (nothing of jupyter_air is imported):
no import circle, backends that know nothing of workloads, modules that stay short, one place
that sends SIGKILL and a few that name ``JUPYTER_AIR_*`` settings."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "jupyter_air"
MAX_LINES = 500
# Over MAX_LINES and still to be split (other work is changing their bodies); empty this list as
# each one is split, never add to it.
LONG_MODULES_TO_SPLIT: set[str] = set()
# logs/ modules that still read a job run through workloads/ (its log paths, its supervisor's
# liveness): they sit above the rest of logs/, which backends/ use.
LOGS_READING_JOBS = {"jupyter_air.logs.follow", "jupyter_air.logs.query"}
# SIGKILL is sent by the process layer (pids.py) alone; a rank's own last resort (it dies with
# its agent: launch/worker.py) does not count.
SIGKILL_AT_MOST = 1
SIGKILL_OWN_LAST_RESORT = {"jupyter_air.launch.worker"}
ENV_NAMES_AT_MOST = 5


@dataclass
class Module:
    name: str
    path: Path
    tree: ast.Module
    lines: int
    top_imports: set[str] = field(default_factory=set)  # at module level, outside TYPE_CHECKING
    run_imports: set[str] = field(default_factory=set)  # functions too, outside TYPE_CHECKING
    all_imports: set[str] = field(default_factory=set)  # anywhere, TYPE_CHECKING included


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(module: Module, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.name.split(".")
    if module.path.name != "__init__.py":
        package.pop()
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _targets(module: Module, node: ast.Import | ast.ImportFrom, known: set[str]) -> set[str]:
    """The jupyter_air modules an import statement loads (``from pkg import mod`` loads the
    submodule as well as the package)."""
    if isinstance(node, ast.Import):
        names = {alias.name for alias in node.names}
    else:
        base = _resolve(module, node)
        names = {base} | {f"{base}.{alias.name}" for alias in node.names}
    found = set()
    for name in names:
        # ``import a.b.c`` loads a, a.b and a.b.c; a name that is not a module (``from m import
        # f``) is trimmed back to the module that holds it.
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name.startswith("jupyter_air"):
            found.add(name)
    return found - {module.name}


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _top_level_imports(body: list[ast.stmt]) -> list[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: at module level, in its ``try`` and ``if``
    blocks, but not under ``if TYPE_CHECKING:`` nor inside functions or classes' methods."""
    found: list[ast.Import | ast.ImportFrom] = []
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found.append(node)
        elif isinstance(node, ast.If):
            if not _is_type_checking(node):
                found += _top_level_imports(node.body)
            found += _top_level_imports(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody):
                found += _top_level_imports(block)
            for handler in node.handlers:
                found += _top_level_imports(handler.body)
        elif isinstance(node, ast.ClassDef):
            found += _top_level_imports(node.body)
    return found


def _load() -> dict[str, Module]:
    modules = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "labextension" in path.parts:
            continue
        text = path.read_text(encoding="utf-8")
        name = _module_name(path)
        modules[name] = Module(name, path, ast.parse(text, str(path)), len(text.splitlines()))
    known = set(modules)
    for module in modules.values():
        for_types = {
            id(inner)
            for node in ast.walk(module.tree)
            if isinstance(node, ast.If) and _is_type_checking(node)
            for statement in node.body
            for inner in ast.walk(statement)
        }
        for node in ast.walk(module.tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                module.all_imports |= _targets(module, node, known)
                if id(node) not in for_types:
                    module.run_imports |= _targets(module, node, known)
        for node in _top_level_imports(module.tree.body):
            module.top_imports |= _targets(module, node, known)
    return modules


MODULES = _load()


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(name: str) -> None:
        index[name] = low[name] = len(index)
        stack.append(name)
        on_stack.add(name)
        for other in sorted(graph.get(name, ())):
            if other not in index:
                visit(other)
                low[name] = min(low[name], low[other])
            elif other in on_stack:
                low[name] = min(low[name], index[other])
        if low[name] == index[name]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == name:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for name in sorted(graph):
        if name not in index:
            visit(name)
    return sorted(found)


def _describe(cycles: list[list[str]]) -> str:
    return "; ".join(" ↔ ".join(cycle) for cycle in cycles)


def test_the_source_is_read():
    assert len(MODULES) > 100
    core = MODULES["jupyter_air.backends.supervision"]
    assert {"jupyter_air.api.enums", "jupyter_air.backends.base"} <= core.top_imports
    assert "jupyter_air.launch.driver" in MODULES["jupyter_air.launch.cluster"].top_imports
    remote = MODULES["jupyter_air.launch.remote"]
    assert "jupyter_air.launch.rundir" in remote.run_imports - remote.top_imports
    assert "jupyter_air.launch.options" in remote.all_imports - remote.run_imports


def test_no_import_circle():
    """Counting imports in functions (one moved there to get round a circle leaves the circle in
    place) and those of a package's ``__init__``; only imports for type checking are left out."""
    cycles = _cycles({name: module.run_imports for name, module in MODULES.items()})
    assert not cycles, f"import circles: {_describe(cycles)}"


def _in(package: str, name: str) -> bool:
    return name == package or name.startswith(package + ".")


def _reached(start: str) -> dict[str, str | None]:
    """Every module ``start`` imports, directly or not (imports in functions and under
    ``TYPE_CHECKING`` counted), each with the module that imports it."""
    via: dict[str, str | None] = {start: None}
    todo = [start]
    while todo:
        name = todo.pop()
        for target in sorted(MODULES[name].all_imports):
            if target not in via:
                via[target] = name
                todo.append(target)
    return via


def _chain(via: dict[str, str | None], name: str) -> str:
    chain = [name]
    while (before := via[chain[-1]]) is not None:
        chain.append(before)
    return " ← ".join(chain)


def _reaching_workloads(prefix: str, allowed: set[str] = frozenset()) -> list[str]:
    found = []
    for name in sorted(MODULES):
        if not _in(prefix, name) or name in allowed:
            continue
        via = _reached(name)
        above = sorted(target for target in via if _in("jupyter_air.workloads", target))
        if above:
            found.append(_chain(via, above[0]))
    return found


def test_backends_import_nothing_of_workloads():
    """Not directly, not through another module, not for types only."""
    offending = _reaching_workloads("jupyter_air.backends")
    assert not offending, f"backends/ reach workloads/: {'; '.join(offending)}"


def test_logs_import_nothing_of_workloads_but_the_job_readers():
    offending = _reaching_workloads("jupyter_air.logs", LOGS_READING_JOBS)
    assert not offending, f"logs/ reach workloads/: {'; '.join(offending)}"


def test_no_module_over_the_limit():
    long = {name: m.lines for name, m in MODULES.items() if m.lines > MAX_LINES}
    over = sorted(f"{name} ({lines} lines)" for name, lines in long.items())
    unexpected = [entry for entry in over if entry.split()[0] not in LONG_MODULES_TO_SPLIT]
    assert not unexpected, f"modules over {MAX_LINES} lines: {', '.join(unexpected)}"
    split = sorted(LONG_MODULES_TO_SPLIT - set(long))
    assert not split, f"no longer over {MAX_LINES} lines, take off LONG_MODULES_TO_SPLIT: {split}"


def _names_sigkill(tree: ast.Module) -> bool:
    return any(
        (isinstance(node, ast.Attribute) and node.attr == "SIGKILL")
        or (isinstance(node, ast.Name) and node.id == "SIGKILL")
        or (isinstance(node, ast.alias) and node.name == "SIGKILL")
        for node in ast.walk(tree)
    )


def test_sigkill_is_sent_from_few_files():
    senders = sorted(
        name
        for name, module in MODULES.items()
        if _names_sigkill(module.tree) and name not in SIGKILL_OWN_LAST_RESORT
    )
    assert len(senders) <= SIGKILL_AT_MOST, (
        f"signal.SIGKILL in {len(senders)} modules (at most {SIGKILL_AT_MOST}; use "
        f"jupyter_air.pids): {', '.join(senders)}"
    )


def test_settings_are_named_in_few_files():
    naming = sorted(
        name for name, module in MODULES.items() if "JUPYTER_AIR_" in module.path.read_text()
    )
    assert len(naming) <= ENV_NAMES_AT_MOST, (
        f"JUPYTER_AIR_* names in {len(naming)} modules (at most {ENV_NAMES_AT_MOST}; read them "
        f"through jupyter_air.config): {', '.join(naming)}"
    )


@pytest.mark.parametrize(
    ("graph", "expected"),
    [
        ({"a": {"b"}, "b": {"a"}, "c": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
        ({"p.m": {"p"}, "p": {"p.m"}}, [["p", "p.m"]]),
    ],
)
def test_cycles_are_found(graph, expected):
    assert _cycles(graph) == expected
