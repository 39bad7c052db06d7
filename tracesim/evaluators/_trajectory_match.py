"""``trajectory_match``: does a run's tool-call trajectory match the expected one?

Gives the numbers of agentevals' ``create_trajectory_match_evaluator`` (agentevals 0.0.9):
1.0 on a match, 0.0 otherwise. The package compares OpenAI-style message lists; tracesim
compares tool calls, so a run is first read as the message list it stands for:

- a `Run`: each step that requested tool calls (an LLM step) is one assistant message holding
  those calls; a tool step whose call no step requested (paired as `Run.tool_calls` pairs
  them: by id, else by name and arguments) is one message of its own; steps without tool
  calls are left out on both sides (they carry no calls to compare).
- a plain list of tool calls: one message per call. An item that is itself a list of calls
  is one message holding them (so parallel calls can be expected as one message).

Only ``mode="strict"`` looks at messages; the other modes look at the calls alone.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, ClassVar

from tracesim._errors import ConfigError
from tracesim.evaluators._base import DEFAULT, Measurement, _Default
from tracesim.evaluators._call_cap import DEFAULT_MAX_CALLS, CappedCalls
from tracesim.evaluators._options import check_choice
from tracesim.runs import Expected, Run, ToolCall, parse_arguments, tool_calls

__all__ = ["TrajectoryMatch", "expected_calls", "output_calls"]

MODES = ("strict", "unordered", "subset", "superset")
ARG_MODES = ("exact", "ignore", "subset", "superset")

_Matcher = Callable[[Any, Any], bool]
_KEYS = frozenset({"name", "arguments", "args", "output", "error", "id"})


_Call = tuple[str, Any, Any]
"""A tool call as the run evaluators compare it: (name, arguments, output). Lighter than a
`ToolCall` (scoring reads many calls); anything unusual goes through `ToolCall.of`, which
checks it and names a bad item in a `ConfigError`."""


def _plain_call(item: dict[Any, Any]) -> _Call | None:
    """A call from a mapping that is plainly well formed (a name, known keys, arguments a dict
    with text keys or absent), or None: then `_call_of` reads it the long way."""
    name = item.get("name")
    if type(name) is str and name and _KEYS.issuperset(item):
        arguments = item.get("arguments")
        if arguments is None and "arguments" not in item:
            arguments = item.get("args")
        if type(arguments) is dict:
            for key in arguments:
                if type(key) is not str:
                    return None
            return (name, arguments, item.get("output"))
        return (name, parse_arguments(arguments), item.get("output"))
    return None


def _call_of(item: Any, where: str, index: int, inner: int = -1) -> _Call:
    """A call from what a user wrote; ``where[index]`` (``[inner]``) names a bad item."""
    if type(item) is dict:
        plain = _plain_call(item)
        if plain is not None:
            return plain
        name = item.get("name")
        if type(name) is str and name and item.keys() <= _KEYS:
            arguments = item["arguments"] if "arguments" in item else item.get("args")
            return (name, parse_arguments(arguments), item.get("output"))
    where = f"{where}[{index}]" if inner < 0 else f"{where}[{index}][{inner}]"
    call = ToolCall.of(item, where)
    return (call.name, call.arguments, call.output)


def _as_dict(call: _Call) -> dict[str, Any]:
    """A call as JSON-like data, for details."""
    data: dict[str, Any] = {"name": call[0], "arguments": call[1]}
    if call[2] is not None:
        data["output"] = call[2]
    return data


_Group = list[_Call]


# -- reading the inputs --------------------------------------------------------------------


def _parsed_list(value: Any, where: str) -> Any:
    if isinstance(value, (str, bytes)):
        try:
            return json.loads(value)
        except ValueError:
            raise ConfigError(where, value, "a JSON list of tool calls") from None
    return value


def _groups_of(value: Any, where: str) -> list[_Group]:
    """Messages from a Run or a list of calls (an inner list is one message)."""
    if isinstance(value, Run):
        return _run_groups(value)
    value = _parsed_list(value, where)
    if type(value) is not list and (
        not isinstance(value, Iterable) or isinstance(value, (Mapping, str, bytes, ToolCall))
    ):
        tool_calls(value, where)  # raises a ConfigError naming what is wrong
    groups: list[_Group] = []
    for index, item in enumerate(value):
        if isinstance(item, (list, tuple)):
            group = [_call_of(call, where, index, k) for k, call in enumerate(item)]
            if group:  # an empty message has no tool calls: the package skips it too
                groups.append(group)
        else:
            groups.append([_call_of(item, where, index)])
    return groups


def _from(calls: Iterable[ToolCall]) -> list[_Call]:
    return [(call.name, call.arguments, call.output) for call in calls]


def output_calls(output: Any, where: str = "output") -> list[_Call]:
    """The tool calls of an output: a `Run`'s (`Run.tool_calls`) or a list of calls."""
    if type(output) is list:  # the common case, without building messages
        calls: list[_Call] = []
        for index, item in enumerate(output):
            if type(item) is dict:  # _plain_call, inline: this loop runs for every call scored
                name = item.get("name")
                if type(name) is str and name and _KEYS.issuperset(item):
                    arguments = item.get("arguments")
                    if arguments is None and "arguments" not in item:
                        arguments = item.get("args")
                    if type(arguments) is dict:
                        for key in arguments:
                            if type(key) is not str:
                                break
                        else:
                            calls.append((name, arguments, item.get("output")))
                            continue
                    else:
                        calls.append((name, parse_arguments(arguments), item.get("output")))
                        continue
                calls.append(_call_of(item, where, index))
            elif isinstance(item, (list, tuple)):
                calls.extend(_call_of(call, where, index, inner) for inner, call in enumerate(item))
            else:
                calls.append(_call_of(item, where, index))
        return calls
    if isinstance(output, Run):
        return _from(output.tool_calls)
    return [call for group in _groups_of(output, where) for call in group]


def expected_calls(expected: Any, where: str = "expected") -> list[_Call] | None:
    """The expected tool calls: an `Expected`'s (None when it has none) or a list of calls."""
    if isinstance(expected, Expected):
        return None if expected.tool_calls is None else _from(expected.tool_calls)
    return output_calls(expected, where)


def _key(arguments: Any) -> str:
    try:
        return json.dumps(arguments, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(arguments)


def _run_groups(run: Run) -> list[_Group]:
    """A run's messages: each step's requested calls, and each executed call no request stands
    for, paired as `Run.tool_calls` pairs them (by id, else by name and arguments)."""
    steps = run.steps
    executed_ids = {
        step.tool_call.id for step in steps if step.kind == "tool" and step.tool_call and step.tool_call.id
    }
    requested_ids = {call.id for step in steps for call in step.requested if call.id}
    # requests no execution claims by id: each may still stand for an execution with its name and arguments
    unclaimed = Counter(
        (call.name, _key(call.arguments))
        for step in steps
        for call in step.requested
        if not (call.id and call.id in executed_ids)
    )
    groups: list[_Group] = []
    for step in steps:
        if step.requested:
            groups.append(_from(step.requested))
        elif step.kind == "tool" and step.tool_call is not None:
            call = step.tool_call
            if call.id and call.id in requested_ids:
                continue
            key = (call.name, _key(call.arguments))
            if unclaimed[key] > 0:
                unclaimed[key] -= 1
                continue
            groups.append(_from((call,)))
    return groups


# -- argument matchers (first argument, second argument), as the package orders them -------


def _exact(first: Any, second: Any) -> bool:
    return bool(first == second)


def _ignore(first: Any, second: Any) -> bool:
    return True


def _subset(first: Any, second: Any) -> bool:
    """Each key of ``first`` is in ``second`` with an equal value."""
    if not isinstance(first, dict) or not isinstance(second, dict):
        return bool(first == second)
    return all(key in second and second[key] == value for key, value in first.items())


def _superset(first: Any, second: Any) -> bool:
    return _subset(second, first)


_BY_MODE: dict[str, _Matcher] = {"exact": _exact, "ignore": _ignore, "subset": _subset, "superset": _superset}


def _at(arguments: Any, path: str) -> Any:
    current = arguments
    for part in path.split("."):
        if not isinstance(current, dict):
            return None
        current = current.get(part)
        if current is None:
            return None
    return current


def _on_keys(paths: tuple[str, ...]) -> _Matcher:
    def matcher(first: Any, second: Any) -> bool:
        if isinstance(first, str) or isinstance(second, str):
            return bool(first == second)
        return all(_at(first, path) == _at(second, path) for path in paths)

    return matcher


# -- the evaluator -------------------------------------------------------------------------


class TrajectoryMatch(CappedCalls):
    """1.0 when the run's tool calls match the expected ones under ``mode``, else 0.0.

    ``mode``: ``strict`` (the same messages in the same order, each with the same number of
    calls, calls inside one message in any order), ``unordered`` (the same calls, any order),
    ``subset`` (every actual call is among the expected ones), ``superset`` (every expected
    call is among the actual ones). Names are compared with ``==`` (no normalising);
    arguments with Python ``==`` on the parsed JSON (``1 == 1.0 == True``, ``"1" != 1``).
    ``args``: ``exact``, ``ignore``, ``subset`` (actual ⊆ expected) or ``superset``
    (actual ⊇ expected); as in agentevals, ``mode="subset"`` swaps the sides of the argument
    check too, so there ``args="subset"`` means actual ⊇ expected. ``tool_args`` overrides
    ``args`` per tool name: a mode name, or a list of dotted key paths compared alone
    (a missing key reads as None). Pairing is greedy (each call takes the first unused one of
    its name whose arguments match, no backtracking), exactly as the package does.

    Arguments that are text (not a JSON object) are compared as text, whatever the mode
    (``ignore`` still ignores them), and ``details["arguments_as_text"]`` names those calls.
    A failed ``strict`` match also names, whatever the order, the expected calls no actual call
    matched (``missing``, or ``mismatched`` with the closest call of that name) and the actual
    calls none expected (``extra``), besides where the messages first differ.
    See the module docstring for how a `Run` is read as messages for ``strict``.
    Each side is cut to its first ``max_calls`` calls (1,000 by default; None for no cap),
    marked in ``details["truncated_to"]``.

    Example:
        >>> expected = [{"name": "search", "arguments": {"q": "warsaw"}}]
        >>> actual = [{"name": "search", "arguments": {"q": "warsaw", "n": 3}}, {"name": "answer"}]
        >>> TrajectoryMatch(mode="superset", args="superset").evaluate(actual, expected).score
        1.0
        >>> result = TrajectoryMatch(mode="unordered").evaluate(actual, expected)
        >>> result.score, result.details["extra"], result.details["mismatched"][0]["closest"]
        (0.0, [{'name': 'answer', 'arguments': {}}], {'name': 'search', 'arguments': {'q': 'warsaw', 'n': 3}})
    """

    type_name = "trajectory_match"
    default_threshold = 1.0
    score_range = (0.0, 1.0)
    scores_runs: ClassVar[bool] = True

    def __init__(
        self,
        *,
        mode: str = "strict",
        args: str = "exact",
        tool_args: Mapping[str, str | Sequence[str]] | None = None,
        threshold: float | _Default | None = DEFAULT,
        max_calls: int | None = DEFAULT_MAX_CALLS,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.mode = check_choice(f"{key}.mode", mode, MODES)
        self.args = check_choice(f"{key}.args", args, ARG_MODES)
        self.tool_args = _checked_overrides(f"{key}.tool_args", tool_args)
        self._default_matcher = _BY_MODE[self.args]
        self._matchers: dict[str, _Matcher] = {
            name: _BY_MODE[rule] if isinstance(rule, str) else _on_keys(rule)
            for name, rule in self.tool_args.items()
        }
        super().__init__(threshold=threshold, max_calls=max_calls, **shared)

    def _matcher(self, name: str) -> _Matcher:
        return self._matchers.get(name, self._default_matcher)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        details: dict[str, Any] = {"mode": self.mode, "args": self.args}
        if self.tool_args:
            details["tool_args"] = {
                k: v if isinstance(v, str) else list(v) for k, v in self.tool_args.items()
            }
        if self.mode == "strict":
            got_groups = _groups_of(output, "output")
            want_groups: list[_Group]
            if isinstance(expected, Expected):
                want_groups = [[call] for call in _from(expected.tool_calls or ())]
            else:
                want_groups = _groups_of(expected, "expected")
            ok = self._strict(got_groups, want_groups, details)
            got = [call for group in got_groups for call in group]
            want = [call for group in want_groups for call in group]
            if not ok:  # say which calls differ, whatever the order (the score stays agentevals')
                missing, mismatched = self._cover(got, want)
                extra = self._cover(want, got)[0]
                for key, value in (("missing", missing), ("extra", extra), ("mismatched", mismatched)):
                    if value:
                        details[key] = value
        else:
            got = output_calls(output)
            want = expected_calls(expected) or []
            ok = True
            if self.mode in ("superset", "unordered"):
                missing, mismatched = self._cover(got, want)
                details["missing"] = missing
                details["mismatched"] = mismatched
                ok = not missing and not mismatched
            if self.mode in ("subset", "unordered"):
                extra, mismatched = self._cover(want, got)
                details["extra"] = extra
                if self.mode == "subset":
                    details["mismatched"] = mismatched
                ok = ok and not extra and not mismatched
        texts = [call[0] for call in got if isinstance(call[1], str)] + [
            call[0] for call in want if isinstance(call[1], str)
        ]
        if texts:
            details["arguments_as_text"] = sorted(set(texts))
        return Measurement(1.0 if ok else 0.0, details)

    def _cover(
        self, pool: list[_Call], wanted: list[_Call]
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Each call of ``wanted`` takes the first unused call of ``pool`` with its name whose
        arguments match (``matcher(pool call, wanted call)``). Returns the wanted calls with no
        call of their name left (as dicts) and those whose name was there but not the
        arguments (with the first such candidate)."""
        used = [False] * len(pool)
        unmatched: list[dict[str, Any]] = []
        mismatched: list[dict[str, Any]] = []
        for call in wanted:
            matcher = self._matcher(call[0])
            candidate: _Call | None = None
            for index, other in enumerate(pool):
                if used[index] or other[0] != call[0]:
                    continue
                if matcher(other[1], call[1]):
                    used[index] = True
                    break
                if candidate is None:
                    candidate = other
            else:
                if candidate is None:
                    unmatched.append(_as_dict(call))
                else:
                    mismatched.append({"call": _as_dict(call), "closest": _as_dict(candidate)})
        return unmatched, mismatched

    def _strict(self, got: list[_Group], want: list[_Group], details: dict[str, Any]) -> bool:
        details["messages"] = {"actual": len(got), "expected": len(want)}
        if len(got) != len(want):
            return False
        for position, (mine, theirs) in enumerate(zip(got, want, strict=True)):
            if len(mine) != len(theirs):
                details["first_difference"] = {
                    "message": position,
                    "actual_calls": len(mine),
                    "expected_calls": len(theirs),
                }
                return False
            seen = [False] * len(theirs)
            for call in mine:
                matcher = self._matcher(call[0])
                for index, other in enumerate(theirs):
                    if not seen[index] and other[0] == call[0] and matcher(call[1], other[1]):
                        seen[index] = True
                        break
                else:
                    details["first_difference"] = {
                        "message": position,
                        "unmatched": _as_dict(call),
                        "expected": [_as_dict(other) for other in theirs],
                    }
                    return False
        return True

    def __repr__(self) -> str:
        return (
            f"TrajectoryMatch(mode={self.mode!r}, args={self.args!r}, tool_args={self.tool_args!r}, "
            f"name={self.name!r}, threshold={self.threshold!r})"
        )


def _checked_overrides(setting: str, value: Any) -> dict[str, str | tuple[str, ...]]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(setting, value, "a mapping of tool name to an args mode or a list of key paths")
    checked: dict[str, str | tuple[str, ...]] = {}
    for name, rule in value.items():
        where = f"{setting}.{name}"
        if not isinstance(name, str) or not name:
            raise ConfigError(setting, value, "tool names (non-empty strings) as keys")
        if isinstance(rule, str):
            checked[name] = check_choice(where, rule, ARG_MODES)
        elif isinstance(rule, (list, tuple)) and rule and all(isinstance(p, str) and p for p in rule):
            checked[name] = tuple(rule)
        else:
            accepted = (
                "one of " + ", ".join(map(repr, ARG_MODES)) + ", or a non-empty list of dotted key paths"
            )
            raise ConfigError(where, rule, accepted)
    return checked
