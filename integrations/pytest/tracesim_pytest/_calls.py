"""Tool calls in a test's failure message and reports: expected against actual, missing and extra.

An evaluator that scores runs (``scores_runs = True``) compares the tool calls an agent made
with those it should have made. When it fails, a test needs the two lists and how they differ,
not only a score. `run_calls` puts them in a few labelled lines (``expected``, ``actual``, then
the ``missing``, ``extra`` and ``mismatched`` calls, the argument keys or the budget exceeded, as
the evaluator's details name them), each cut to `MAX_CHARS`, for the row of the result
(`tracesim_pytest._report.Row.calls`): the failure message, the terminal summary and the JSON
file show them, redacted with the rest of the row.

Example:
    >>> from tracesim.evaluators import EvalResult
    >>> result = EvalResult(name="tool_names", score=0.0, passed=False,
    ...                     details={"missing": {"convert": 1}, "extra": {}})
    >>> lines = run_calls([{"name": "lookup"}, {"name": "convert"}], [{"name": "lookup"}], result)
    >>> for label, text in lines.items():
    ...     print(f"{label}: {text}")
    expected: lookup({}), convert({})
    actual: lookup({})
    missing: convert ×1
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tracesim import plugin_support
from tracesim.runs import Expected, Run, tool_calls

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult

__all__ = ["MAX_CHARS", "differences", "listed_calls", "run_calls", "scores_runs"]

MAX_CHARS = 500
"""Characters kept of each line (a list of calls, a difference)."""
_MAX_CALLS = 20  # calls listed per line; the rest are counted
_DIFFERENCES = (
    "missing",
    "extra",
    "mismatched",
    "partial",
    "missing_keys",
    "extra_keys",
    "exceeded",
    "first_difference",
    "run_truncated",
)


def scores_runs(evaluator: Any) -> bool:
    """Whether ``evaluator`` scores a run (its tool calls) rather than an output value."""
    return getattr(evaluator, "scores_runs", False) is True


def _cut(text: str) -> str:
    return text if len(text) <= MAX_CHARS else text[: MAX_CHARS - 1] + "…"


def _json(value: Any) -> str:
    return json.dumps(plugin_support.to_jsonable(value), ensure_ascii=False, separators=(",", ":"))


def _call(call: Any) -> str:
    if isinstance(call, Mapping):
        return f"{call.get('name')}({_json(call.get('arguments', {}))})"
    return f"{call.name}({_json(call.arguments)})"


def listed_calls(value: Any) -> str | None:
    """Tool calls on one line, ``name(arguments)`` each, from a `tracesim.runs.Run`, a
    `tracesim.Expected`, a list of calls or JSON text of one; None when ``value`` holds none (or
    is not a list of tool calls: the evaluator's own result says what is wrong with it).

    Example:
        >>> listed_calls('[{"name": "search", "arguments": "warsaw"}]'), listed_calls([])
        ('search("warsaw")', 'none')
    """
    if isinstance(value, Run):
        calls: Any = value.tool_calls
    elif isinstance(value, Expected):
        calls = value.tool_calls
    else:
        try:
            calls = None if value is None else tool_calls(value)
        except Exception:  # not tool calls: the evaluator's error names the problem
            calls = None
    if calls is None:
        return None
    text = ", ".join(_call(call) for call in calls[:_MAX_CALLS])
    if len(calls) > _MAX_CALLS:
        text += f", … ({len(calls) - _MAX_CALLS} more)"
    return _cut(text or "none")


def differences(details: Any) -> dict[str, str]:
    """How a run differs from the expected one, as an evaluator's details name it, one entry per
    kind of difference (``missing``, ``extra``, ``mismatched``...), empty ones left out.

    Example:
        >>> differences({"missing": [], "extra": [{"name": "lookup", "arguments": {"city": "Berlin"}}]})
        {'extra': 'lookup({"city":"Berlin"})'}
        >>> differences({"exceeded": {"max_tool_calls": {"limit": 1, "actual": 3, "over": 2}}})
        {'exceeded': 'max_tool_calls: {"limit":1,"actual":3,"over":2}'}
    """
    if not isinstance(details, Mapping):
        return {}
    found = {}
    for key in _DIFFERENCES:
        value = details.get(key)
        if value in (None, [], {}, ""):
            continue
        found[key.replace("_", " ")] = _cut(_difference(value))
    return found


def _difference(value: Any) -> str:
    if isinstance(value, list):
        more = " …" if len(value) > _MAX_CALLS else ""
        return ", ".join(_item(item) for item in value[:_MAX_CALLS]) + more
    if isinstance(value, Mapping):
        if all(isinstance(n, int) and not isinstance(n, bool) for n in value.values()):
            return ", ".join(f"{name} ×{count}" for name, count in value.items())
        return "; ".join(f"{name}: {_item(item)}" for name, item in value.items())
    return _item(value)


def _item(item: Any) -> str:
    if isinstance(item, Mapping):
        if isinstance(item.get("name"), str):
            return _call(item)
        call, closest = item.get("call"), item.get("closest")
        if isinstance(call, Mapping) and isinstance(call.get("name"), str):
            return _call(call) + (f" (closest: {_call(closest)})" if isinstance(closest, Mapping) else "")
    return item if isinstance(item, str) else _json(item)


def run_calls(expected: Any, actual: Any, result: EvalResult) -> dict[str, str]:
    """The lines a failed run evaluator's row shows: the expected and actual calls (when they
    are tool calls), then the differences its details name."""
    lines: dict[str, str] = {}
    for label, value in (("expected", expected), ("actual", actual)):
        text = listed_calls(value)
        if text is not None:
            lines[label] = text
    lines.update(differences(result.details))
    return lines
