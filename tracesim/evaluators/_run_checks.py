"""Run checks that give the same verdicts as pydantic-evals' span-tree evaluators.

``tool_names`` (pydantic-evals ``ToolCorrectness``), ``trajectory`` (``TrajectoryMatch``),
``tool_arguments`` (``ArgumentCorrectness``) and ``run_budget`` (``MaxToolCalls``, with limits on
LLM calls, tokens, cost and seconds added). pydantic-evals reads the tool calls of a span tree
in start order and leaves out the calls that failed unless ``include_failed`` is set; here the
calls come from a `tracesim.runs.Run` (or a plain list of tool calls) in the same order, and a
call failed when it (or the tool step that ran it) has an error.

The module also holds the helpers every run evaluator uses to read its two sides: the actual
calls (a `Run`, a list of calls or JSON text of one) and the expected calls (an `Expected` or a
list).

Example:
    >>> from tracesim.evaluators._run_checks import Trajectory
    >>> Trajectory(order="in_order").evaluate(
    ...     [{"name": "search"}, {"name": "fetch"}, {"name": "answer"}],
    ...     [{"name": "search"}, {"name": "answer"}],
    ... ).score
    0.8
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from tracesim._errors import ConfigError
from tracesim.evaluators._base import Measurement
from tracesim.evaluators._call_cap import DEFAULT_MAX_CALLS, NO_EXPECTED_CALLS, CappedCalls
from tracesim.evaluators._options import check_bool, check_choice, check_int, check_number
from tracesim.runs import Expected, Run, ToolCall, parse_arguments, tool_calls
from tracesim.runs import plain as plain_data

__all__ = ["RunBudget", "ToolArguments", "ToolNames", "Trajectory"]


# -- reading the two sides ----------------------------------------------------------------


Call = tuple[str, Any, bool]
"""A tool call as the run evaluators read it: (name, arguments as plain data: a dict, or text when
they are not a JSON object, failed). A plain tuple: scoring reads many calls, and a tuple is
several times cheaper to make than a named one."""

_CALL_KEYS = frozenset(("name", "arguments", "args", "output", "error", "id"))
_SCALARS = frozenset((str, int, float, bool, type(None)))


def _flat(arguments: dict[Any, Any]) -> bool:
    """Whether ``arguments`` is already plain data with nothing to convert (the common case)."""
    for key, value in arguments.items():  # noqa: SIM110 - a loop: faster than all() over a generator
        if type(key) is not str or type(value) not in _SCALARS:
            return False
    return True


def _plain(value: Any) -> Any:
    """`tracesim.runs.plain` with the JSON types checked by exact type first (its ``Mapping``
    check is an abstract-class lookup, slow on every nested value)."""
    kind = type(value)
    if kind is dict:
        return {key: _plain(item) for key, item in value.items()}
    if kind in _SCALARS or kind is list:  # plain() leaves lists as they are
        return value
    return plain_data(value)


def arguments_data(arguments: Any) -> Any:
    """A call's arguments as plain JSON-like data (read-only views and tuples thawed)."""
    if type(arguments) is dict and _flat(arguments):
        return arguments
    return _plain(arguments)


def _from_tool_call(call: ToolCall, failed: bool = False) -> Call:
    return (call.name, arguments_data(call.arguments), failed or call.error is not None)


def read_calls(value: Any, where: str) -> list[Call]:
    """The tool calls of a `Run`, or of a list of calls (or JSON text of one) as
    `tracesim.runs.tool_calls` reads it (a bad item is its `ConfigError`). Mappings that are
    plainly well formed are read directly, without building `ToolCall` objects."""
    if type(value) is list or type(value) is tuple:
        calls: list[Call] = []
        for item in value:
            if type(item) is dict:  # _dict_call, inline: this loop runs for every call scored
                name = item.get("name")
                if type(name) is not str or not name or not _CALL_KEYS.issuperset(item):
                    break
                arguments = item.get("arguments")
                if arguments is None and "arguments" not in item:
                    arguments = item.get("args")
                if type(arguments) is dict:
                    for key, value in arguments.items():  # _flat, inline
                        if type(key) is not str or type(value) not in _SCALARS:
                            arguments = _plain(parse_arguments(arguments))
                            break
                else:
                    arguments = {} if arguments is None else _plain(parse_arguments(arguments))
                calls.append((name, arguments, item.get("error") is not None))
            elif isinstance(item, ToolCall):
                calls.append(_from_tool_call(item))
            else:
                break
        else:
            return calls
    elif isinstance(value, Run):
        return _run_calls(value)
    return [_from_tool_call(call) for call in tool_calls(value, where)]


def _run_calls(run: Run) -> list[Call]:
    """A run's tool calls (`Run.tool_calls`), each failed when it or the tool step that ran it
    has an error."""
    calls: list[Call] = []
    for step in run.steps:
        if step.requested:  # requested calls: let the Run pair them with the steps that ran them
            failed = {
                id(step.tool_call) for step in run.steps if step.kind == "tool" and step.error is not None
            }
            return [_from_tool_call(call, id(call) in failed) for call in run.tool_calls]
        call = step.tool_call
        if call is not None and step.kind == "tool":
            arguments = call.arguments
            if type(arguments) is not dict or not _flat(arguments):
                arguments = _plain(arguments)
            calls.append((call.name, arguments, step.error is not None or call.error is not None))
    return calls


def actual_calls(output: Any, *, include_failed: bool = True) -> list[Call]:
    """The tool calls of ``output`` in start order (a `Run`, or a list of calls or JSON text of
    one); calls that failed are left out unless ``include_failed``.

    Example:
        >>> calls = [{"name": "a"}, {"name": "b", "error": "timeout"}]
        >>> [name for name, _arguments, _failed in actual_calls(calls, include_failed=False)]
        ['a']
    """
    calls = read_calls(output, "output")
    return calls if include_failed else [call for call in calls if not call[2]]


def count_calls(output: Any, *, include_failed: bool = True) -> int:
    """How many tool calls `actual_calls` would give, without building them: a run's 100,000
    calls as objects cost a garbage collection that freezes the host for 0.1 s.

    Example:
        >>> count_calls([{"name": "a"}, {"name": "b", "error": "timeout"}], include_failed=False)
        1
    """
    if not isinstance(output, Run):
        return len(actual_calls(output, include_failed=include_failed))
    steps = output.steps
    for step in steps:
        if step.requested:  # paired by the Run, as _run_calls reads them
            calls = output.tool_calls
            if include_failed:
                return len(calls)
            failed = {id(step.tool_call) for step in steps if step.kind == "tool" and step.error is not None}
            return sum(1 for call in calls if call.error is None and id(call) not in failed)
    count = 0
    for step in steps:
        call = step.tool_call
        if call is not None and step.kind == "tool":
            count += include_failed or (step.error is None and call.error is None)
    return count


_READ_EXPECTED: dict[int, tuple[tuple[ToolCall, ...], tuple[Call, ...]]] = {}
"""The calls of recently read `Expected` values, by the identity of their (immutable) tuple of
calls: a decorator's or a rule's `Expected` is scored against every run, by several evaluators.
Each entry holds its tuple, so an identity is never reused while its entry lives."""

_READ_EXPECTED_MAX = 256


def expected_calls(expected: Any) -> list[Call] | None:
    """The expected tool calls: an `Expected`'s (None when it names none), or a list of calls.

    Example:
        >>> calls = Expected(tool_calls=[{"name": "a", "arguments": {"x": 1}}])
        >>> expected_calls(calls), expected_calls(calls) == expected_calls(calls)
        ([('a', {'x': 1}, False)], True)
    """
    if isinstance(expected, Expected):
        given = expected.tool_calls
        if given is None:
            return None
        known = _READ_EXPECTED.get(id(given))
        if known is not None and known[0] is given:
            return list(known[1])
        read = tuple(_from_tool_call(call) for call in given)
        if len(_READ_EXPECTED) >= _READ_EXPECTED_MAX:
            _READ_EXPECTED.clear()
        _READ_EXPECTED[id(given)] = (given, read)
        return list(read)
    return read_calls(expected, "expected")


def call_data(call: Call) -> dict[str, Any]:
    """A call as JSON-like details: its name and arguments."""
    return {"name": call[0], "arguments": call[1]}


class RunEvaluator(CappedCalls):
    """Base of the run evaluators: ``scores_runs`` set, ``max_calls`` (see `CappedCalls`), and an
    `Expected` without tool calls skips."""

    scores_runs: ClassVar[bool] = True
    score_range = (0.0, 1.0)
    default_threshold = 1.0

    def _expected(self, expected: Any) -> list[Call]:
        if type(expected) is list:  # the common case, one call less
            return read_calls(expected, "expected")
        calls = expected_calls(expected)
        if calls is None:  # reached only when evaluate() is bypassed
            raise ValueError(NO_EXPECTED_CALLS)
        return calls


def name_counts(names: list[str]) -> dict[str, int]:
    """How many times each name occurs (a plain dict: a `Counter` costs microseconds to make)."""
    counts: dict[str, int] = {}
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    return counts


def count_excess(counts: dict[str, int], others: dict[str, int]) -> dict[str, int]:
    """By name, in name order, how many more times each name of ``counts`` occurs than in
    ``others`` (only names with more), as ``Counter`` subtraction gives them.

    Example:
        >>> count_excess({"b": 2, "a": 1}, {"b": 1})
        {'a': 1, 'b': 1}
    """
    return {name: n - others.get(name, 0) for name, n in sorted(counts.items()) if n > others.get(name, 0)}


# -- tool_names ---------------------------------------------------------------------------


class ToolNames(RunEvaluator):
    """1.0 when the run called exactly the expected tools, counted by name, in any order.

    The expected calls' names are a multiset: ``["search", "search"]`` needs two ``search``
    calls. A missing name fails; an extra call fails unless ``allow_extra``. Names are compared
    as they are (no case or whitespace folding). Calls that failed are left out unless
    ``include_failed``. The same verdicts as pydantic-evals' ``ToolCorrectness``; details list
    the missing and extra names with their counts. A list of more than ``max_calls`` calls
    (1,000 by default; None for no cap) is cut to its first ``max_calls`` on each side and
    ``details["truncated_to"]`` says so.

    Example:
        >>> result = ToolNames().evaluate([{"name": "search"}, {"name": "fetch"}], [{"name": "search"}])
        >>> result.score, result.details["extra"]
        (0.0, {'fetch': 1})
        >>> calls = [{"name": "search"}, {"name": "fetch"}]
        >>> ToolNames(allow_extra=True).evaluate(calls, [{"name": "search"}]).score
        1.0
    """

    type_name = "tool_names"

    def __init__(
        self,
        *,
        allow_extra: bool = False,
        include_failed: bool = False,
        max_calls: int | None = DEFAULT_MAX_CALLS,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.allow_extra = check_bool(f"{key}.allow_extra", allow_extra)
        self.include_failed = check_bool(f"{key}.include_failed", include_failed)
        super().__init__(max_calls=max_calls, **shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        include_failed = self.include_failed
        actual = name_counts(
            [call[0] for call in read_calls(output, "output") if include_failed or not call[2]]
        )
        wanted = name_counts([call[0] for call in self._expected(expected)])
        if actual == wanted:
            missing: dict[str, int] = {}
            extra: dict[str, int] = {}
        else:
            missing, extra = count_excess(wanted, actual), count_excess(actual, wanted)
        passed = not missing and (not extra or self.allow_extra)
        details: dict[str, Any] = {
            "missing": missing,
            "extra": extra,
            "allow_extra": self.allow_extra,
            "include_failed": include_failed,
        }
        if passed:
            return Measurement(1.0, details)
        problems = []
        if missing:
            problems.append(
                "missing " + ", ".join(f"{name!r} x{n}" for name, n in details["missing"].items())
            )
        if extra and not self.allow_extra:
            problems.append(
                "unexpected " + ", ".join(f"{name!r} x{n}" for name, n in details["extra"].items())
            )
        return Measurement(1.0 if passed else 0.0, details, "; ".join(problems) or None)


# -- trajectory ---------------------------------------------------------------------------

TRAJECTORY_ORDERS = ("exact", "in_order", "any_order")


def lcs_length(first: list[str], second: list[str]) -> int:
    """The length of the longest common subsequence of two name sequences.

    Example:
        >>> lcs_length(["a", "b", "c", "d"], ["a", "c", "x", "d"])
        3
    """
    if not first or not second:
        return 0
    previous = [0] * (len(second) + 1)
    for item in first:
        current = [0]
        for j, other in enumerate(second):
            current.append(previous[j] + 1 if item == other else max(previous[j + 1], current[j]))
        previous = current
    return previous[-1]


def _f1(precision: float, recall: float) -> float:
    return 0.0 if precision + recall == 0 else 2 * precision * recall / (precision + recall)


class Trajectory(RunEvaluator):
    """How well the run's sequence of tool names follows the expected one (names only).

    ``order``: ``exact`` (the default) scores 1.0 when the two name lists are equal, else 0.0;
    ``in_order`` scores the F1 of the longest common subsequence (precision over the actual
    calls, recall over the expected ones); ``any_order`` the F1 of the multiset overlap. Two
    empty trajectories score 1.0 in every mode, one empty one 0.0. Calls that failed are left
    out unless ``include_failed``. The same numbers as pydantic-evals' ``TrajectoryMatch``
    (whose default order is ``in_order``; here it is ``exact``). Each side is cut to its first
    ``max_calls`` calls (1,000 by default, so the longest common subsequence stays under a
    million steps; None for no cap), marked in ``details["truncated_to"]``.

    Example:
        >>> calls = [{"name": "fetch"}, {"name": "search"}]
        >>> Trajectory(order="any_order").evaluate(calls, [{"name": "search"}, {"name": "fetch"}]).score
        1.0
        >>> Trajectory().evaluate(calls, [{"name": "search"}, {"name": "fetch"}]).score
        0.0
    """

    type_name = "trajectory"

    def __init__(
        self,
        *,
        order: str = "exact",
        include_failed: bool = False,
        max_calls: int | None = DEFAULT_MAX_CALLS,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.order = check_choice(f"{key}.order", order, TRAJECTORY_ORDERS)
        self.include_failed = check_bool(f"{key}.include_failed", include_failed)
        super().__init__(max_calls=max_calls, **shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        include_failed = self.include_failed
        actual = [call[0] for call in read_calls(output, "output") if include_failed or not call[2]]
        wanted = [call[0] for call in self._expected(expected)]
        details: dict[str, Any] = {"order": self.order, "expected": wanted, "actual": actual}
        same = actual == wanted
        if same:
            details["missing"], details["extra"] = {}, {}
        else:
            got_counts, want_counts = name_counts(actual), name_counts(wanted)
            details["missing"] = count_excess(want_counts, got_counts)
            details["extra"] = count_excess(got_counts, want_counts)
        if self.order == "exact":
            return Measurement(1.0 if same else 0.0, details)
        if not actual and not wanted:
            return Measurement(1.0, details, "both trajectories are empty")
        if self.order == "any_order":
            if same:
                common = len(actual)
            else:
                got_counts = name_counts(actual)
                common = sum(min(n, got_counts.get(name, 0)) for name, n in name_counts(wanted).items())
            details["overlap"] = common
        else:
            common = len(actual) if same else lcs_length(actual, wanted)
            details["lcs"] = common
        precision = common / len(actual) if actual else 0.0
        recall = common / len(wanted) if wanted else 0.0
        details["precision"], details["recall"] = precision, recall
        return Measurement(_f1(precision, recall), details)


# -- tool_arguments -----------------------------------------------------------------------

ARGUMENT_MATCHES = ("subset", "exact")


class ToolArguments(RunEvaluator):
    """1.0 when one call of ``tool`` got the expected ``arguments``.

    The call checked is the ``occurrence``-th call of ``tool`` (0-based; ``"first"`` and
    ``"last"`` work too) among the run's calls, failed ones left out unless ``include_failed``.
    ``match="subset"`` (the default) needs each expected top-level key present with an equal
    value (Python ``==``, so ``1 == 1.0``; nested values are compared whole); ``"exact"`` also
    fails on keys that were not expected. Arguments that are not a JSON object (kept as text)
    fail, and the details say so. The expectation is in the options, so no expected value is
    needed. The same verdicts as pydantic-evals' ``ArgumentCorrectness``. Only the first
    ``max_calls`` calls are read (1,000 by default; None for no cap), marked in
    ``details["truncated_to"]`` when the run had more.

    Example:
        >>> check = ToolArguments(tool="lookup", arguments={"city": "Warsaw"})
        >>> check.evaluate([{"name": "lookup", "arguments": {"city": "Warsaw", "unit": "C"}}], None).score
        1.0
        >>> result = ToolArguments(tool="lookup", arguments={"city": "Warsaw"}, match="exact").evaluate(
        ...     [{"name": "lookup", "arguments": {"city": "Warsaw", "unit": "C"}}], None
        ... )
        >>> result.score, result.details["extra_keys"]
        (0.0, ['unit'])
    """

    type_name = "tool_arguments"
    requires_expected = False

    def __init__(
        self,
        *,
        tool: str,
        arguments: Mapping[str, Any] | str,
        match: str = "subset",
        occurrence: int | str = 0,
        include_failed: bool = False,
        max_calls: int | None = DEFAULT_MAX_CALLS,
        **shared: Any,
    ) -> None:
        # Exact types pass at once (a case-by-case check may build one evaluator per case);
        # anything else goes through the checks that say what is wrong.
        key = self.type_name
        if not isinstance(tool, str) or not tool:
            raise ConfigError(f"{key}.tool", tool, "the tool's name, a non-empty string")
        self.tool = tool
        parsed: Any
        if type(arguments) is dict and all(type(name) is str for name in arguments):
            parsed = dict(arguments)  # what parse_arguments gives: a copy with text keys
        else:
            parsed = parse_arguments(arguments) if isinstance(arguments, (str, Mapping)) else arguments
        if not isinstance(parsed, dict):
            raise ConfigError(f"{key}.arguments", arguments, "a mapping of argument names to values")
        self.arguments: dict[str, Any] = parsed
        self.match = (
            match if match in ARGUMENT_MATCHES else check_choice(f"{key}.match", match, ARGUMENT_MATCHES)
        )
        self.occurrence: int | str
        if type(occurrence) is int and occurrence >= 0:
            self.occurrence = occurrence
        elif isinstance(occurrence, str):
            if occurrence not in ("first", "last"):
                raise ConfigError(f"{key}.occurrence", occurrence, "a 0-based index, 'first' or 'last'")
            self.occurrence = occurrence
        else:
            self.occurrence = int(check_int(f"{key}.occurrence", occurrence, low=0) or 0)
        self.include_failed = (
            include_failed
            if type(include_failed) is bool
            else check_bool(f"{key}.include_failed", include_failed)
        )
        super().__init__(max_calls=max_calls, **shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        calls = [
            call for call in actual_calls(output, include_failed=self.include_failed) if call[0] == self.tool
        ]
        details: dict[str, Any] = {
            "tool": self.tool,
            "occurrence": self.occurrence,
            "match": self.match,
            "calls_of_tool": len(calls),
        }
        if not calls:
            return Measurement(0.0, details, f"no calls of {self.tool!r}")
        occurrence = self.occurrence
        index = 0 if occurrence == "first" else len(calls) - 1 if occurrence == "last" else int(occurrence)
        if index >= len(calls):
            return Measurement(
                0.0, details, f"{self.tool!r} was called {len(calls)} time(s); no occurrence {index}"
            )
        call = calls[index]
        got = call[1]
        details["actual"] = got
        if not isinstance(got, dict):
            details["arguments_text"] = True
            return Measurement(0.0, details, f"the arguments of {self.tool!r} are text, not a JSON object")
        missing = [key for key in self.arguments if key not in got]
        mismatched = {
            key: {"expected": value, "actual": got[key]}
            for key, value in self.arguments.items()
            if key in got and got[key] != value
        }
        extra = [key for key in got if key not in self.arguments] if self.match == "exact" else []
        details.update(missing_keys=missing, mismatched=mismatched, extra_keys=extra)
        passed = not missing and not mismatched and not extra
        return Measurement(1.0 if passed else 0.0, details)


# -- run_budget ---------------------------------------------------------------------------

_COUNT_LIMITS = ("max_tool_calls", "max_llm_calls", "max_tokens")
_AMOUNT_LIMITS = ("max_cost_usd", "max_duration_s")


class RunBudget(RunEvaluator):
    """1.0 when the run stayed within every limit given, else 0.0.

    Limits (give at least one; each is inclusive, as in pydantic-evals' ``MaxToolCalls``):
    ``max_tool_calls`` (failed calls count unless ``include_failed=False``, as there),
    ``max_llm_calls``, ``max_tokens`` (input and output), ``max_cost_usd`` and
    ``max_duration_s``. The details give each limit's value and the run's, and for each broken
    one by how much it was exceeded. A limit the run cannot tell (cost or duration unknown, or
    anything but tool calls when the output is a plain list of calls) is not checked, and the
    details say it is unknown. No expected value is needed. A plain list of more than
    ``max_calls`` calls (1,000 by default; None for no cap) is counted up to the cap and marked
    in ``details["truncated_to"]``, so ``max_tool_calls`` must be below ``max_calls``; a `Run` is
    read whole, as its counts are linear to take.

    Example:
        >>> from tracesim.runs import Run, Step
        >>> run = Run(steps=(Step(kind="llm", name="chat", input_tokens=900, output_tokens=300),))
        >>> result = RunBudget(max_tokens=1000, max_llm_calls=2).evaluate(run, None)
        >>> result.score, result.details["exceeded"]
        (0.0, {'max_tokens': {'limit': 1000, 'actual': 1200, 'over': 200}})
    """

    type_name = "run_budget"
    requires_expected = False
    cuts_runs = False

    def __init__(
        self,
        *,
        max_tool_calls: int | None = None,
        max_llm_calls: int | None = None,
        max_tokens: int | None = None,
        max_cost_usd: float | None = None,
        max_duration_s: float | None = None,
        include_failed: bool = True,
        max_calls: int | None = DEFAULT_MAX_CALLS,
        **shared: Any,
    ) -> None:
        key = self.type_name
        given = {
            "max_tool_calls": max_tool_calls,
            "max_llm_calls": max_llm_calls,
            "max_tokens": max_tokens,
            "max_cost_usd": max_cost_usd,
            "max_duration_s": max_duration_s,
        }
        self.limits: dict[str, float] = {}
        for option in _COUNT_LIMITS:
            value = check_int(f"{key}.{option}", given[option], low=0, allow_none=True)
            if value is not None:
                self.limits[option] = value
        for option in _AMOUNT_LIMITS:
            amount = check_number(f"{key}.{option}", given[option], low=0.0, allow_none=True)
            if amount is not None:
                self.limits[option] = amount
        if not self.limits:
            accepted = "at least one of " + ", ".join(_COUNT_LIMITS + _AMOUNT_LIMITS)
            raise ConfigError(f"{key}.max_tool_calls", None, accepted)
        self.include_failed = check_bool(f"{key}.include_failed", include_failed)
        super().__init__(max_calls=max_calls, **shared)
        if self.max_calls is not None and self.limits.get("max_tool_calls", -1) >= self.max_calls:
            accepted = f"an integer above max_tool_calls ({max_tool_calls}), or null"
            raise ConfigError(f"{key}.max_calls", self.max_calls, accepted)

    def _used(self, output: Any, option: str) -> float | None:
        """What the run used of the quantity ``option`` limits; None when it cannot tell."""
        if option == "max_tool_calls":
            return count_calls(output, include_failed=self.include_failed)
        if not isinstance(output, Run):
            return None
        if option == "max_llm_calls":
            return output.llm_calls
        if option == "max_tokens":
            return output.tokens
        if option == "max_cost_usd":
            return output.cost_usd
        return output.duration_s

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        checked: dict[str, Any] = {}
        exceeded: dict[str, Any] = {}
        unknown: list[str] = []
        for option, limit in self.limits.items():
            actual = self._used(output, option)
            if actual is None or (isinstance(actual, float) and math.isnan(actual)):
                unknown.append(option)
                continue
            checked[option] = {"limit": limit, "actual": actual}
            if actual > limit:
                exceeded[option] = {"limit": limit, "actual": actual, "over": actual - limit}
        details = {"limits": checked, "exceeded": exceeded, "unknown": unknown}
        explanation = "; ".join(
            f"{option}: {info['actual']:g} > {info['limit']:g} (over by {info['over']:g})"
            for option, info in exceeded.items()
        )
        return Measurement(0.0 if exceeded else 1.0, details, explanation or None)
