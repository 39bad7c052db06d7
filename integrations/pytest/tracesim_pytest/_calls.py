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

from typing import TYPE_CHECKING, Any

from tracesim import runs
from tracesim.runs import Expected, Run, calls_text, tool_calls

if TYPE_CHECKING:
    from tracesim.evaluators import EvalResult

__all__ = ["MAX_CHARS", "differences", "listed_calls", "run_calls", "scores_runs"]

MAX_CHARS = 500
"""Characters kept of each line (a list of calls, a difference)."""
_MAX_CALLS = 20  # calls listed per line; the rest are counted


def scores_runs(evaluator: Any) -> bool:
    """Whether ``evaluator`` scores a run (its tool calls) rather than an output value."""
    return getattr(evaluator, "scores_runs", False) is True


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
    return calls_text(calls, most=_MAX_CALLS, limit=MAX_CHARS)


def differences(details: Any) -> dict[str, str]:
    """How a run differs from the expected one, as an evaluator's details name it, one entry per
    kind of difference (``missing``, ``extra``, ``mismatched``...), empty ones left out.

    Example:
        >>> differences({"missing": [], "extra": [{"name": "lookup", "arguments": {"city": "Berlin"}}]})
        {'extra': 'lookup({"city":"Berlin"})'}
        >>> differences({"exceeded": {"max_tool_calls": {"limit": 1, "actual": 3, "over": 2}}})
        {'exceeded': 'max_tool_calls: {"limit":1,"actual":3,"over":2}'}
    """
    return dict(runs.differences(details, limit=MAX_CHARS, most=_MAX_CALLS))


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
