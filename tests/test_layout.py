"""The package's layering holds: no import circle between tracesim's modules, of any kind, and
the scoring package stands below tracing (issue 8 asked for the circle ``_jobs -> _span ->
_runtime -> _scoring -> _jobs`` to go; issue 24 for every other one; this keeps them gone).

Every import counts: at module level, under ``if TYPE_CHECKING:`` (a type-only import still
ties the two modules' designs together, and a checker or a refactoring that moves it to load
time turns it into a real circle), and inside functions (it runs later, but the modules still
need each other). Deferring an import never breaks a circle; moving the shared piece down does.
"""

from __future__ import annotations

import ast
import importlib.machinery
from collections import deque
from itertools import pairwise
from pathlib import Path

import tracesim

PACKAGE = Path(tracesim.__file__).parent
_MODULE_SUFFIXES = (*importlib.machinery.all_suffixes(), ".pyi")


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = _modules()


def _is_other_module(package: str, name: str) -> bool:
    """Whether ``package.name`` is a module that is not Python source (a compiled extension)."""
    folder = MODULES[package].parent if package in MODULES else None
    return folder is not None and any(
        (folder / f"{name}{suffix}").exists() or any(folder.glob(f"{name}.*{suffix}"))
        for suffix in _MODULE_SUFFIXES
    )


def imports_of(name: str, path: Path, source: str | None = None) -> dict[str, int]:
    """The tracesim modules ``name`` imports anywhere in its source, each with its first line.

    ``from package import name`` imports the module ``package.name`` when there is one (a
    compiled extension included: it is not tracesim source, so it is left out), else the
    package itself.
    """
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: dict[str, int] = {}
    tree = ast.parse(path.read_text(encoding="utf-8") if source is None else source)
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                submodule = f"{module}.{alias.name}"
                if submodule in MODULES:
                    targets.append(submodule)
                elif not _is_other_module(module, alias.name):
                    targets.append(module)
        for target in targets:
            if target in MODULES and target != name:
                found.setdefault(target, node.lineno)
    return found


GRAPH = {name: imports_of(name, path) for name, path in MODULES.items()}


def _circles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in graph[module]:
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == module:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return circles


def _loop(graph: dict[str, dict[str, int]], group: list[str]) -> list[str]:
    """One way round the circle ``group``, from its first module back to it, as import lines."""
    start, members = group[0], set(group)
    came_from: dict[str, str] = {}
    queue = deque([start])
    while queue:
        module = queue.popleft()
        for other in sorted(graph[module]):
            if other not in members:
                continue
            if other == start:
                path = [module]
                while path[-1] != start:
                    path.append(came_from[path[-1]])
                path.reverse()
                steps = [*path, start]
                return [
                    f"{a} (line {graph[a][b]}: {MODULES[a].relative_to(PACKAGE.parent)}) imports {b}"
                    for a, b in pairwise(steps)
                ]
            if other not in came_from:
                came_from[other] = module
                queue.append(other)
    return []


def describe(graph: dict[str, dict[str, int]]) -> str:
    """Every circle of ``graph``, named, with one loop through it as import lines."""
    return "\n".join(
        f"circle of {len(group)} modules: {', '.join(group)}\n  " + "\n  ".join(_loop(graph, group))
        for group in _circles(graph)
    )


def test_the_graph_is_read_from_the_package() -> None:
    assert len(GRAPH) > 100
    assert "tracesim._scoring" in GRAPH["tracesim._tracing._span"]  # tracing hands jobs on


def test_no_module_imports_itself_back_through_others() -> None:
    assert _circles(GRAPH) == [], "import circles (move the shared piece down):\n" + describe(GRAPH)


def test_type_only_and_function_level_imports_count() -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from tracesim._tracing._span import Span\n"
        "def later():\n"
        "    from tracesim import _runtime\n"
        "    from tracesim._redact import _probe  # compiled: not a module of the graph\n"
    )
    found = imports_of("tracesim._scoring._jobs", MODULES["tracesim._scoring._jobs"], source)
    assert found == {"tracesim._tracing._span": 3, "tracesim._runtime": 5}


def test_a_planted_circle_is_found_and_named_with_its_lines() -> None:
    graph = {module: dict(imported) for module, imported in GRAPH.items()}
    graph["tracesim._scoring._jobs"]["tracesim._tracing._span"] = 7
    assert any({"tracesim._scoring._jobs", "tracesim._tracing._span"} <= set(c) for c in _circles(graph))
    message = describe(graph)
    assert (
        "tracesim._scoring._jobs (line 7: tracesim/_scoring/_jobs.py) imports tracesim._tracing._span"
        in message
    )


def test_scoring_stands_below_tracing_and_the_runtime() -> None:
    upward = {
        module: sorted(
            other for other in imported if other.startswith(("tracesim._tracing", "tracesim._runtime"))
        )
        for module, imported in GRAPH.items()
        if module.startswith("tracesim._scoring")
    }
    assert {module: found for module, found in upward.items() if found} == {}


def test_test_modules_outside_packages_have_unique_basenames() -> None:
    """pytest imports a test file in a folder without ``__init__.py`` by its basename: two such
    files of one name (tests/phoenix/test_x.py, tests/mlflow/test_x.py) fail collection."""
    repo = PACKAGE.parent
    seen: dict[str, Path] = {}
    clashes = []
    for root in ("tests", "integrations"):
        for path in sorted((repo / root).rglob("test_*.py")):
            if (path.parent / "__init__.py").exists():
                continue  # imported under its package's name
            if path.name in seen:
                clashes.append(f"{seen[path.name].relative_to(repo)} and {path.relative_to(repo)}")
            seen.setdefault(path.name, path)
    assert not clashes, f"rename one of each: {clashes}"
