"""Tool-call scores that give the same numbers as ragas' ``ToolCallAccuracy`` and ``ToolCallF1``.

``tool_call_accuracy``: are the tool names the expected sequence, and what share of the expected
arguments did each call get right (values compared as ``str()``)? ``tool_call_f1``: the F1 of the
*sets* of (name, arguments) of the two sides, so repeated calls count once. Both read the run's
tool calls (every call, failed ones too, as ragas reads the calls a model made).

Example:
    >>> from tracesim.evaluators._ragas_tool_calls import ToolCallAccuracy, ToolCallF1
    >>> actual = [{"name": "weather", "arguments": {"city": "Paris", "days": 3}}]
    >>> expected = [{"name": "weather", "arguments": {"city": "Paris", "days": "3"}}]
    >>> ToolCallAccuracy().evaluate(actual, expected).score, ToolCallF1().evaluate(actual, expected).score
    (1.0, 0.0)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tracesim.evaluators._base import Measurement
from tracesim.evaluators._call_cap import DEFAULT_MAX_CALLS
from tracesim.evaluators._options import check_bool
from tracesim.evaluators._run_checks import (
    _CALL_KEYS,
    _SCALARS,
    Call,
    RunEvaluator,
    _flat,
    _plain,
    call_data,
    name_counts,
    read_calls,
)
from tracesim.runs import Run, parse_arguments

__all__ = ["ToolCallAccuracy", "ToolCallF1"]


def _sort_key(call: Call) -> tuple[str, ...]:
    """ragas' order for ``strict_order=False``: name, then each argument name and ``str`` of its value."""
    name, arguments = call[0], call[1]
    if not isinstance(arguments, dict):
        return (name, str(arguments))
    key = [name]
    for argument in sorted(arguments):
        key.append(argument)
        key.append(str(arguments[argument]))
    return tuple(key)


def _argument_score(got: Any, want: Any) -> tuple[float, list[str], list[str]]:
    """The share of expected arguments ``got`` has with an equal ``str()``; the keys missing and
    the keys whose values differ. Text arguments score 1 only against equal text."""
    if isinstance(got, str) or isinstance(want, str):
        same = isinstance(got, str) and isinstance(want, str) and got == want
        return (1.0 if same else 0.0), [], ([] if same else ["(arguments as text)"])
    if not want:
        return (1.0 if not got else 0.0), [], []
    missing: list[str] = []
    wrong: list[str] = []
    for key in want:  # one pass, keys in the expected order
        if key not in got:
            missing.append(key)
        elif str(got[key]) != str(want[key]):
            wrong.append(key)
    return (len(want) - len(missing) - len(wrong)) / len(want), missing, wrong


class ToolCallAccuracy(RunEvaluator):
    """How accurately the run made the expected tool calls, from 0.0 to 1.0.

    The run's tool names must be the expected sequence (``strict_order``, the default) or the
    same multiset (``strict_order=False``, where both sides are first sorted by name, argument
    names and ``str`` of the values); otherwise the score is 0.0. The calls are then paired in
    order and each pair scores the share of the expected arguments whose values are equal as
    ``str()`` (so ``1`` equals ``"1"`` but not ``1.0``, and nested mappings in another key order
    differ); ``{}`` against ``{}`` scores 1, expected ``{}`` against any argument 0. The score is
    the sum over the number of expected calls. Both sides empty score 1.0, one empty 0.0.
    Arguments that are text (not a JSON object) score 1 only against the same text. The same
    numbers as ragas' ``ToolCallAccuracy``; the details name the mismatched pairs, and the
    missing and extra calls when the names do not line up. Each side is cut to its first
    ``max_calls`` calls (1,000 by default; None for no cap), marked in ``details["truncated_to"]``.

    Example:
        >>> actual = [{"name": "b", "arguments": {"x": 1}}, {"name": "a", "arguments": {"x": 2}}]
        >>> expected = [{"name": "a", "arguments": {"x": 2}}, {"name": "b", "arguments": {"x": 1}}]
        >>> ToolCallAccuracy().evaluate(actual, expected).score
        0.0
        >>> ToolCallAccuracy(strict_order=False).evaluate(actual, expected).score
        1.0
    """

    type_name = "tool_call_accuracy"

    def __init__(
        self, *, strict_order: bool = True, max_calls: int | None = DEFAULT_MAX_CALLS, **shared: Any
    ) -> None:
        self.strict_order = check_bool(f"{self.type_name}.strict_order", strict_order)
        super().__init__(max_calls=max_calls, **shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        got: Sequence[Call] = read_calls(output, "output")
        want: Sequence[Call] = self._expected(expected)
        details: dict[str, Any] = {"strict_order": self.strict_order}
        if not got or not want:
            details["missing"] = [call_data(call) for call in want]
            details["extra"] = [call_data(call) for call in got]
            return Measurement(1.0 if not got and not want else 0.0, details)
        if not self.strict_order:  # one call is in order already: no sort key to build
            if len(got) > 1:
                got = sorted(got, key=_sort_key)
            if len(want) > 1:
                want = sorted(want, key=_sort_key)
        got_names: list[str] = []
        want_names: list[str] = []
        for call in got:  # loops rather than comprehensions: these lists are short
            got_names.append(call[0])
        for call in want:
            want_names.append(call[0])
        # Without strict_order both sides are sorted by name first, so their names are in order.
        aligned = got_names == want_names
        details["aligned"] = aligned
        if not aligned:
            details["expected_names"], details["actual_names"] = want_names, got_names
            details["missing"] = _unmatched_by_name(want, got)
            details["extra"] = _unmatched_by_name(got, want)
            return Measurement(0.0, details, "the tool names do not line up with the expected ones")
        total = 0.0
        mismatched = []
        for position, (actual, wanted) in enumerate(zip(got, want, strict=True)):
            got_arguments, want_arguments = actual[1], wanted[1]
            score, missing, wrong = _argument_score(got_arguments, want_arguments)
            total += score
            if score < 1.0:
                entry: dict[str, Any] = {
                    "position": position,
                    "name": wanted[0],
                    "score": score,
                    "expected": want_arguments,
                    "actual": got_arguments,
                    "missing_keys": missing,
                    "mismatched_keys": wrong,
                }
                if isinstance(got_arguments, str) or isinstance(want_arguments, str):
                    entry["compared_as_text"] = True
                mismatched.append(entry)
        details["mismatched"] = mismatched
        return Measurement(total / len(want), details)


def _unmatched_by_name(calls: Sequence[Call], others: Sequence[Call]) -> list[dict[str, Any]]:
    """The calls of ``calls`` whose name ``others`` lacks (counting repeats), in order."""
    pool = name_counts([call[0] for call in others])
    unmatched = []
    for call in calls:
        if pool.get(call[0]):
            pool[call[0]] -= 1
        else:
            unmatched.append(call_data(call))
    return unmatched


def _hashable(value: Any) -> Any:
    """``value`` as ragas hashes it: mappings as frozensets of pairs, lists as tuples."""
    kind = type(value)  # the JSON types first, by exact type (the abstract-class checks are slow)
    if kind is dict:
        return frozenset((key, _hashable(item)) for key, item in value.items())
    if kind is list or kind is tuple:
        return tuple(_hashable(item) for item in value)
    if kind in _SCALARS:
        return value
    if isinstance(value, Mapping):
        return frozenset((key, _hashable(item)) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(_hashable(item) for item in value)
    if isinstance(value, (set, frozenset)):
        return frozenset(_hashable(item) for item in value)
    return value


class ToolCallF1(RunEvaluator):
    """The F1 of the run's tool calls against the expected ones, as sets, rounded to 4 decimals.

    A call is its name and arguments; both sides become *sets*, so a call made twice counts once
    (and values Python holds equal, like ``1`` and ``1.0``, are the same). Precision is the share
    of the run's distinct calls that were expected, recall the share of the distinct expected
    calls that were made. Both sides empty score 0.0. Text arguments match only the same text.
    The same numbers as ragas' ``ToolCallF1``; the details list the missing and extra calls.
    Each side is cut to its first ``max_calls`` calls (1,000 by default; None for no cap),
    marked in ``details["truncated_to"]``.

    Example:
        >>> search = {"name": "search", "arguments": {"q": "a"}}
        >>> result = ToolCallF1().evaluate([search, search], [search, {"name": "open"}])
        >>> result.score, result.details["missing"]
        (0.6667, [{'name': 'open', 'arguments': {}}])
    """

    type_name = "tool_call_f1"
    default_threshold = 0.5

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        got = _distinct_of(output, "output")
        if type(expected) is list:
            want = _distinct_of(expected, "expected")
        else:
            want = _distinct(self._expected(expected))
        true_positives = len(got.keys() & want.keys())
        precision = true_positives / len(got) if got else 0.0
        recall = true_positives / len(want) if want else 0.0
        f1 = 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)
        details = {
            "precision": precision,
            "recall": recall,
            "matched": true_positives,
            "missing": _left_out(want, got) if true_positives < len(want) else [],
            "extra": _left_out(got, want) if true_positives < len(got) else [],
        }
        return Measurement(round(f1, 4), details)


def _left_out(calls: dict[Any, Call], others: dict[Any, Call]) -> list[dict[str, Any]]:
    """The calls of ``calls`` that ``others`` lacks, as details."""
    return [{"name": call[0], "arguments": call[1]} for key, call in calls.items() if key not in others]


def _distinct(calls: Sequence[Call]) -> dict[Any, Call]:
    """The distinct (name, arguments) of ``calls``, first seen first, each with its first call."""
    distinct: dict[Any, Call] = {}
    for call in calls:
        arguments = call[1]
        hashed = (
            frozenset(arguments.items())
            if type(arguments) is dict and _flat(arguments)
            else _hashable(arguments)
        )
        distinct.setdefault((call[0], hashed), call)
    return distinct


def _distinct_of(value: Any, where: str) -> dict[Any, Call]:
    """`_distinct` of the calls `read_calls` reads from ``value``, in one pass for the common
    inputs (a list of plainly well-formed mappings, a `Run` whose steps requested no calls);
    anything else is read by `read_calls`, which names a bad item."""
    distinct: dict[Any, Call] = {}
    if type(value) is list:
        for item in value:
            if type(item) is not dict:
                break
            name = item.get("name")
            if type(name) is not str or not name or not _CALL_KEYS.issuperset(item):
                break
            arguments = item.get("arguments")
            if arguments is None and "arguments" not in item:
                arguments = item.get("args")
            if type(arguments) is dict and _flat(arguments):
                key = (name, frozenset(arguments.items()))
            else:
                arguments = {} if arguments is None else _plain(parse_arguments(arguments))
                key = (name, _hashable(arguments))
            if key not in distinct:
                distinct[key] = (name, arguments, item.get("error") is not None)
        else:
            return distinct
    elif isinstance(value, Run):
        for step in value.steps:
            if step.requested:  # requests are paired with their executions by the Run
                break
            call = step.tool_call
            if call is None or step.kind != "tool":
                continue
            name, arguments = call.name, call.arguments
            if type(arguments) is dict and _flat(arguments):
                key = (name, frozenset(arguments.items()))
            else:
                arguments = _plain(arguments)
                key = (name, _hashable(arguments))
            if key not in distinct:
                distinct[key] = (name, arguments, step.error is not None or call.error is not None)
        else:
            return distinct
    return _distinct(read_calls(value, where))
