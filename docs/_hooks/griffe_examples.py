"""Griffe extension: a Google-style ``Example:`` section is read as ``Examples:``.

tracesim's docstrings title their doctests ``Example:`` (the Google style guide allows both).
Griffe knows only the plural as an examples section and would render the singular as an
admonition of Markdown text, where ``>>>`` lines lose their code layout and doctest output
such as ``[True, False]`` reads as a reference link. Renaming the section before the docstring
is parsed renders the doctests as code blocks, as ``Examples:`` would.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)


class ExampleSections(griffe.Extension):
    """Rename each ``Example:`` section heading to ``Examples:`` in the docstrings griffe reads."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
