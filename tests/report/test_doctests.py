"""The examples in the report modules' docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = ["_collect", "_format", "_gate", "_html", "_math", "_model", "_stats", "_svg", "_text"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"tracesim._report.{name}")
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.failed == 0
