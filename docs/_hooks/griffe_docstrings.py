"""Griffe extension: two habits of tracesim's docstrings, rendered as their authors meant them.

- A Google-style ``Example:`` section is read as ``Examples:``. Griffe knows only the plural as
  an examples section and renders the singular as an admonition of Markdown text, where ``>>>``
  lines lose their code layout and doctest output such as ``[True, False]`` reads as a
  reference link. Both titles are Google style; renamed, the doctests render as code blocks.
- A Sphinx role (``:class:`EvalResult```, ``:meth:`~Evaluator.measure```) becomes inline code
  (``EvalResult``, ``measure``): Markdown has no roles, and would print the role's name.

The docstrings themselves are unchanged; only what griffe reads for the site is.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

_SINGULAR = re.compile(r"^(\s*)Example:[ \t]*$", re.MULTILINE)
_ROLE = re.compile(r":(?:class|meth|func|attr|mod|exc|data|obj):`(?P<tilde>~?)(?P<target>[^`]+)`")


def _role_as_code(match: re.Match[str]) -> str:
    target = match["target"]
    return f"`{target.rsplit('.', 1)[-1] if match['tilde'] else target}`"


class TracesimDocstrings(griffe.Extension):
    """Rewrite each docstring griffe reads: ``Example:`` as ``Examples:``, Sphinx roles as code."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            value = _SINGULAR.sub(r"\1Examples:", obj.docstring.value)
            obj.docstring.value = _ROLE.sub(_role_as_code, value)
