"""The import rules of CONTRIBUTING.md, checked against the code: every import inside ``otel_prov``
(module level or deferred in a function) goes where the "May import" column of the package table says
it may, and no two modules import each other at load time, directly or around a circle.  The table is
read from CONTRIBUTING.md itself, so the two cannot drift apart."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "otel_prov"


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(REPO).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def _imports(module: str, top_level_only: bool) -> set[str]:
    """The ``otel_prov`` modules ``module`` imports."""
    path = MODULES[module]
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = list(ast.walk(tree))
    if top_level_only:  # what runs at load time (an ``if TYPE_CHECKING:`` block's too, to be strict)
        nodes = [n for stmt in tree.body
                 for n in ([stmt] if not isinstance(stmt, ast.If) else [*stmt.body, *stmt.orelse])]
    found = set()
    for node in nodes:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for alias in node.names:
                name = f"{target}.{alias.name}"
                found.add(name if name in MODULES else target)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return {m for m in found if m in MODULES and m != module}


def _unit(module: str) -> str:
    """The row of the package table a module belongs to: ``mapping``, ``settings``, ``__init__``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _rules() -> dict[str, list[str] | None]:
    """The table's "May import" column, per row (None: anything)."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    rules: dict[str, list[str] | None] = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or not cells[0].startswith("`"):
            continue
        row = cells[0].strip("`").removeprefix("otel_prov/").removesuffix("/").removesuffix(".py")
        row = "__init__" if row == "__init__" else row
        allowed = cells[2]
        if allowed in ("anything", "everything"):
            rules[row] = None
        else:
            rules[row] = re.findall(r"`([\w.]+)`", allowed) + (
                ["__init__"] if "public API" in allowed else [])
    return rules


def test_the_table_has_a_row_for_every_part() -> None:
    rules = _rules()
    assert {_unit(m) for m in MODULES} <= set(rules), "a package or module CONTRIBUTING.md does not list"


def test_every_import_goes_where_the_table_says_it_may() -> None:
    rules = _rules()
    wrong = []
    for module in sorted(MODULES):
        allowed = rules[_unit(module)]
        if allowed is None:
            continue
        for target in sorted(_imports(module, top_level_only=False)):
            unit = _unit(target)
            relative = ".".join(target.split(".")[1:])
            if unit == _unit(module) or any(relative == a or relative.startswith(a + ".") for a in allowed) \
                    or (unit == "__init__" and "__init__" in allowed):
                continue
            wrong.append(f"{module} imports {target}")
    assert wrong == []


def test_no_modules_import_each_other_at_load_time() -> None:
    graph = {m: _imports(m, top_level_only=True) for m in MODULES}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    assert circles == []


def test_nothing_outside_stores_knows_which_backend_it_got() -> None:
    """Outside ``stores/``, a store is opened through the registry and used through the protocols
    (``stores``, ``stores.base``; ``stores.sessions``, the session index, works through them too): no
    module imports a backend's."""
    wrong = [f"{module} imports {target}" for module in sorted(MODULES) if _unit(module) != "stores"
             for target in sorted(_imports(module, top_level_only=False))
             if _unit(target) == "stores"
             and target not in ("otel_prov.stores", "otel_prov.stores.base", "otel_prov.stores.sessions")]
    assert wrong == []


def test_stores_imports_run_one_way_even_when_deferred() -> None:
    """Within ``stores/``, no two modules import each other at all (a deferred import included): each
    backend sits on the modules below it."""
    inside = {m for m in MODULES if _unit(m) == "stores" and m != "otel_prov.stores"}
    graph = {m: _imports(m, top_level_only=False) & inside for m in inside}

    def reaches(start: str, goal: str, seen: set[str]) -> bool:
        return any(n == goal or (n not in seen and not seen.add(n) and reaches(n, goal, seen))
                   for n in graph[start])

    circles = sorted(m for m in inside if reaches(m, m, set()))
    assert circles == []


TESTS = REPO / "tests"
TEST_DIRS = {"mapping", "model", "ingest", "stores", "serve", "read", "render", "web", "cli", "examples",
             "system"}
"""tests/ mirrors the package: a directory per part of ``otel_prov`` that has tests of its own (and
``system`` for what crosses them all: real processes end to end, the docs, the newcomer's path); the
tests of a top-level module (``settings.py``, ``instrument.py``) sit at the top."""


def test_no_test_module_imports_another() -> None:
    """Shared code lives in tests/support/ (and fixtures in conftest.py), never in a test module."""
    offenders = []
    for path in TESTS.rglob("test_*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            names = ([node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
                     if isinstance(node, ast.ImportFrom) else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(part.startswith("test_") for name in names if name.startswith("tests")
                   for part in name.split(".")):
                offenders.append(f"{path.relative_to(REPO)}:{node.lineno}")
    assert offenders == []


def test_the_tests_mirror_the_package() -> None:
    """Every test module is in the directory of the part it tests (or at the top, or in system/), and
    every such directory is a part of the package."""
    parts = {p.name for p in PACKAGE.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    assert TEST_DIRS - {"system"} <= parts
    for path in TESTS.rglob("test_*.py"):
        where = path.relative_to(TESTS).parts[:-1]
        assert where == () or where[0] in TEST_DIRS | {"interop"}, path
