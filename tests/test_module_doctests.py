"""The examples in the docstrings of the modules that stand below every output and input run."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "tracesim._outputs",
        "tracesim._inputs",
        "tracesim._inputs._error",
        "tracesim._inputs._yaml",
        "tracesim._export_queue",
        "tracesim._errors",
        "tracesim._internal_errors",
        "tracesim.runs",
    ],
)
def test_the_docstring_examples_run(module: str) -> None:
    outcome = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0, f"{module} has no example"
    assert outcome.failed == 0
