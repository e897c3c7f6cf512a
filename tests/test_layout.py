"""The package's layout: no import circle among webward's modules, no module taking another
package's underscore names, tests that use the helpers ``webward.testing`` ships, and no
docstring that Python 3.13 cannot compile.

Read from the source with ``ast`` (nothing is imported). Every import counts, at module level
or inside a function (a lazy import for an optional extra still ties two modules), except
those under ``if TYPE_CHECKING:``, which never run.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import webward

SRC = Path(webward.__file__).resolve().parent


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(SRC.rglob("*.py"))}


def package_of(module: str) -> str:
    """The package a module belongs to: itself for a package's ``__init__``."""
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except what stands under ``if TYPE_CHECKING:``."""
    found: list[ast.AST] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        found.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return found


def imports_of(module: str) -> list[tuple[str, str | None]]:
    """``(webward module imported, name taken from it or None)`` for each runtime import."""
    path = MODULES[module]
    package = package_of(module)
    found: list[tuple[str, str | None]] = []
    for node in _runtime_nodes(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names if a.name.startswith("webward.")]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source == "webward" or source.startswith("webward."):
                for alias in node.names:
                    submodule = f"{source}.{alias.name}"
                    if submodule in MODULES:  # `from . import _x`: the module itself
                        found.append((submodule, None))
                    else:
                        found.append((source, alias.name))
    return [(m, name) for m, name in found if m in MODULES]


def import_graph() -> dict[str, set[str]]:
    """Which webward modules each module imports (a package's face counts as a module)."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        targets = {target for target, _ in imports_of(module)}
        # Importing webward.x.y runs webward.x's face first, unless the importer is inside
        # webward.x (then the face is already being run).
        for target in list(targets):
            parent = target.rpartition(".")[0]
            while parent and not (module + ".").startswith(parent + "."):
                targets.add(parent)
                parent = parent.rpartition(".")[0]
        graph[module] = targets - {module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                group.append(top)
                if top == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return groups


def test_the_reader_sees_the_whole_package() -> None:
    """The walk finds the packages and the lazy imports it is meant to judge."""
    assert {"webward.audit", "webward.limits", "webward.search", "webward.console"} <= set(MODULES)
    # open_audit_sink imports PostgreSQL inside the function: that import is seen.
    assert ("webward.audit._postgres", "PostgresAuditSink") in imports_of("webward.audit")


def test_no_import_circle_among_webward_modules() -> None:
    """No two webward modules import each other, directly or round a loop."""
    assert circles(import_graph()) == []


def test_the_circle_finder_finds_a_circle() -> None:
    """The check can fail: a loop of three modules is reported as one group."""
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [["a", "b", "c"]]


def test_no_module_takes_underscore_names_from_another_package() -> None:
    """A private name (``_x``) is used only inside the package that defines it; what another
    package needs has a public name."""
    crossing = [
        f"{module} imports {name} from {source}"
        for module in MODULES
        for source, name in imports_of(module)
        if name is not None
        and name.startswith("_")
        and name != "__version__"
        and package_of(source) != package_of(module)
    ]
    assert crossing == []


def test_the_tests_use_the_shipped_fake_clock() -> None:
    """The project's tests move time with ``webward.testing.FakeClock``, the helper users get,
    rather than clocks of their own."""
    own = [
        f"{path.name}: class {node.name}"
        for path in sorted(Path(__file__).parent.glob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and node.name.endswith("Clock")
    ]
    assert own == []


def surrogate_docstrings(paths: list[Path]) -> list[str]:
    """Each docstring among ``paths`` that holds a lone surrogate (U+D800 to U+DFFF)."""
    found = []
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                doc = ast.get_docstring(node, clean=False) or ""
                if any("\ud800" <= c <= "\udfff" for c in doc):
                    found.append(f"{path.name}: {getattr(node, 'name', 'the module')}")
    return found


def test_no_docstring_holds_a_lone_surrogate() -> None:
    """From Python 3.13 on, the compiler strips a docstring's indentation by way of UTF-8, which
    a lone surrogate (``\\udcc3`` written as an escape) cannot pass (python/cpython#142411):
    the module fails to compile, so it does not import (pytest: an error collecting the file,
    and no test run). A docstring names such a character with its backslash escaped."""
    root = Path(__file__).resolve().parents[1]
    paths = [p for part in ("src", "tests", "bench") for p in (root / part).rglob("*.py")]
    assert len(paths) > 100
    assert surrogate_docstrings(paths) == []


def test_the_surrogate_finder_finds_one(tmp_path: Path) -> None:
    """The check can fail: a function's docstring with ``\\udcff`` in it is reported."""
    module = tmp_path / "m.py"
    module.write_text('def f() -> None:\n    """caf\\udcff"""\n', encoding="utf-8")
    assert surrogate_docstrings([module]) == ["m.py: f"]


@pytest.mark.anyio
async def test_the_fake_clock_sleeps_by_moving() -> None:
    """``FakeClock.sleep`` returns at once, the clock moved by the time asked for."""
    from webward.testing import FakeClock

    clock = FakeClock(10.0)
    await clock.sleep(2.5)
    clock.advance(0.5)
    assert clock() == 13.0
