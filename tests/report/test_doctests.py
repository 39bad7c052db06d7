"""The examples in the report modules' docstrings run as written."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "_aggregate", "_collect", "_drill", "_drill_text", "_format", "_gate", "_html", "_math", "_report_data",
    "_redacted", "_svg", "_tables", "_terminal_report", "_timeline", "_timeline_html", "_timeline_text",
    "_usage",
]  # fmt: skip


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name: str) -> None:
    module = importlib.import_module(f"tracesim._report.{name}")
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.failed == 0
    # An example marked +SKIP is not attempted: a module whose every example is skipped would
    # pass while checking nothing.
    assert outcome.attempted > 0, f"tracesim._report.{name} has no example that runs"
