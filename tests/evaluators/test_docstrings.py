"""The examples in the evaluator docstrings are true."""

from __future__ import annotations

import doctest
import importlib
import pkgutil

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


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name: str) -> None:
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0
