"""The package's layering holds: no import circle between tracesim's modules, and the scoring
package stands below tracing (issue 8 asked for the circle ``_jobs -> _span -> _runtime ->
_scoring -> _jobs`` to go; this keeps it from coming back).

Only imports that run when a module is imported count: those at module level, outside
``if TYPE_CHECKING:``. An import inside a function runs later, when every module is loaded.
"""

from __future__ import annotations

import ast
from pathlib import Path

import tracesim

PACKAGE = Path(tracesim.__file__).parent


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _imported_at_load(name: str, path: Path) -> set[str]:
    """The tracesim modules ``name`` imports when it is loaded."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If):
                if "TYPE_CHECKING" not in ast.unparse(node.test):
                    visit(node.body)
                    visit(node.orelse)
            elif isinstance(node, ast.Try):
                visit(node.body)
                for handler in node.handlers:
                    visit(handler.body)
                visit(node.orelse)
                visit(node.finalbody)
            elif isinstance(node, ast.Import):
                found.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    module = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    module = node.module or ""
                for alias in node.names:  # `from package import module` imports the module
                    found.add(f"{module}.{alias.name}" if f"{module}.{alias.name}" in MODULES else module)

    visit(ast.parse(path.read_text(encoding="utf-8")).body)
    return {module for module in found if module in MODULES and module != name}


GRAPH = {name: _imported_at_load(name, path) for name, path in MODULES.items()}


def _circles() -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in GRAPH[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(GRAPH):
        if module not in index:
            visit(module)
    return circles


def test_the_graph_is_read_from_the_package() -> None:
    assert len(GRAPH) > 100
    assert "tracesim._scoring._jobs" in GRAPH["tracesim._tracing._span"]  # tracing hands jobs on


def test_no_module_imports_itself_back_through_others() -> None:
    assert _circles() == []


def test_a_planted_circle_is_found() -> None:
    GRAPH["tracesim._scoring._jobs"].add("tracesim._tracing._span")
    try:
        assert any({"tracesim._scoring._jobs", "tracesim._tracing._span"} <= set(c) for c in _circles())
    finally:
        GRAPH["tracesim._scoring._jobs"].discard("tracesim._tracing._span")


def test_scoring_stands_below_tracing_and_the_runtime() -> None:
    upward = {
        module: sorted(
            other for other in imported if other.startswith(("tracesim._tracing", "tracesim._runtime"))
        )
        for module, imported in GRAPH.items()
        if module.startswith("tracesim._scoring")
    }
    assert {module: found for module, found in upward.items() if found} == {}
