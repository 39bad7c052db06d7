"""The examples in the evaluator docstrings are true, and there are examples to run.

A doctest run that finds no example passes silently, so each module must hold examples
(unless listed below with the reason), every public name must have one of its own, and the
total may not shrink below the count recorded here.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil
from types import ModuleType

import pytest

import tracesim.evaluators
import tracesim.evaluators.compat

MODULES = sorted(
    {
        f"{package.__name__}.{info.name}"
        for package in (tracesim.evaluators, tracesim.evaluators.compat)
        for info in pkgutil.iter_modules(package.__path__)
        if info.name != "compat"
    }
    | {"tracesim.evaluators", "tracesim.evaluators.compat"}
)
# Modules with nothing to show in an example, and why.
NO_EXAMPLES = {
    "tracesim.evaluators._builtin_types": "a table of the built-in classes; each class has its own examples",
}
# Public names (of tracesim.evaluators and the compat modules) without an example, and why.
NO_OWN_EXAMPLE = {}
# The examples counted when this was last raised; lower it only when examples are merged.
MIN_TOTAL_EXAMPLES = 111

OPTIONS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE
_finder = doctest.DocTestFinder()


def _examples(module: ModuleType) -> int:
    return sum(len(test.examples) for test in _finder.find(module))


def _public_objects() -> list[tuple[str, object]]:
    """(qualified name, object) of each class and function users import from the public modules."""
    found = []
    for module_name in ["tracesim.evaluators", *(m for m in MODULES if ".compat." in m)]:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                found.append((f"{module_name}.{name}", obj))
    return found


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name: str) -> None:
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=OPTIONS)
    assert result.failed == 0
    if module_name in NO_EXAMPLES:
        assert result.attempted == 0, f"{module_name} has examples now: drop it from NO_EXAMPLES"
    else:
        assert result.attempted > 0, f"{module_name}: no docstring example was run"


# Ids from the name alone: an object's repr carries its address, which differs between
# processes (pytest-xdist workers must collect the same ids).
_PUBLIC = _public_objects()


@pytest.mark.parametrize(("qualified_name", "obj"), _PUBLIC, ids=[name for name, _ in _PUBLIC])
def test_every_public_name_has_an_example(qualified_name: str, obj: object) -> None:
    module = inspect.getmodule(obj)
    tests = _finder.find(obj, qualified_name, module=module, globs={})
    count = sum(len(test.examples) for test in tests)
    if qualified_name in NO_OWN_EXAMPLE:
        assert count == 0, f"{qualified_name} has an example now: drop it from NO_OWN_EXAMPLE"
    else:
        assert count > 0, f"{qualified_name} (public) has no docstring example"


def test_total_number_of_examples() -> None:
    counts = {name: _examples(importlib.import_module(name)) for name in MODULES}
    total = sum(counts.values())
    listing = "\n".join(f"  {count:4d}  {name}" for name, count in counts.items())
    assert total >= MIN_TOTAL_EXAMPLES, f"{total} examples, fewer than {MIN_TOTAL_EXAMPLES}:\n{listing}"
