"""Agent runs: what happened under a scored span, and what was expected of it.

A traced agent is scored not only by its final answer but by its *run*: which tools it called
with which arguments, in what order, how many model calls, tokens, cost and seconds it took.
This module holds the plain, immutable data that run evaluators read; it knows nothing of
OpenTelemetry (the runs are built from spans elsewhere) and nothing of any one evaluator.

- `ToolCall`: one call of a tool, ``{"name": ..., "arguments": {...}}``, with its output and
  error when they are known. Arguments given as JSON text are parsed; text that is not a JSON
  object is kept as text (``arguments_text``) and compared as text.
- `Step`: one step of a run (a tool, an LLM call, a retriever, a nested agent or chain), in
  start order, with its duration, model, tokens and cost when known.
- `Run`: the steps under a scored span, its final output, and whether it was cut short.
- `Expected`: an expected output and/or expected tool calls; wherever an expected value goes
  (``@trace(expected=...)``, ``expect()``, ``set_expected``, rules, cases), a plain value keeps
  meaning the expected output.
- `tool_calls`: a list of tool calls, as users write them, checked: anything else is a
  `ConfigError` naming the field.

Example:
    >>> from tracesim.runs import Expected, Run, Step, ToolCall, tool_calls
    >>> calls = tool_calls([{"name": "lookup", "arguments": '{"city": "Warsaw"}'}])
    >>> calls[0]
    ToolCall(name='lookup', arguments={'city': 'Warsaw'})
    >>> run = Run(steps=(Step(kind="tool", name="lookup", tool_call=calls[0]),), output="12 C")
    >>> [call.name for call in run.tool_calls], run.output
    (['lookup'], '12 C')
    >>> Expected(output="12 C", tool_calls=[{"name": "lookup", "arguments": {"city": "Warsaw"}}]).tool_calls
    (ToolCall(name='lookup', arguments={'city': 'Warsaw'}),)
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from tracesim._capture import dumps
from tracesim._errors import ConfigError
from tracesim._redact import MARGIN, safe_cut

__all__ = [
    "DIFFERENCE_KEYS",
    "NOT_GIVEN",
    "STEP_KINDS",
    "Expected",
    "Run",
    "Step",
    "ToolCall",
    "call_text",
    "calls_text",
    "differences",
    "parse_arguments",
    "plain",
    "tool_calls",
]

STEP_KINDS = ("tool", "llm", "retriever", "agent", "chain", "embedding", "span")
"""The kinds a step can have; ``span`` is any other span under the run."""


class _NotGiven:
    """Marker: no expected output was given (``None`` can be an expected output)."""

    _instance: _NotGiven | None = None

    def __new__(cls) -> _NotGiven:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NOT_GIVEN"

    def __bool__(self) -> bool:
        return False

    def __reduce__(self) -> str:
        return "NOT_GIVEN"


NOT_GIVEN: Any = _NotGiven()
"""``Expected.output`` when only tool calls are expected."""


def plain(value: Any) -> Any:
    """JSON-like data as plain dicts and lists (mappings copied, tuples turned into lists), for
    comparisons and JSON.

    Example:
        >>> plain({"a": (1, {"b": (2,)})})
        {'a': [1, {'b': [2]}]}
    """
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return [plain(item) for item in value]
    return value


@dataclass(frozen=True)
class ToolCall:
    """One call of a tool: its name and arguments, and its output and error when known.

    ``arguments`` is a dict when the call's arguments are a JSON object (given as a mapping or
    as JSON text). Text that is not a JSON object stays text, ``arguments_text`` is True, and
    evaluators compare it as text and say so in their details. ``id`` links a call a model
    requested to the tool span that executed it.

    Example:
        >>> ToolCall.of({"name": "convert", "arguments": '{"amount": 12}', "output": 53.6}).arguments
        {'amount': 12}
        >>> call = ToolCall.of({"name": "search", "arguments": "warsaw weather"})
        >>> call.arguments, call.arguments_text
        ('warsaw weather', True)
    """

    name: str
    arguments: Any = field(default_factory=dict)
    output: Any = field(default=None, compare=False, repr=False)
    error: str | None = field(default=None, compare=False, repr=False)
    id: str | None = field(default=None, compare=False, repr=False)

    @property
    def arguments_text(self) -> bool:
        """Whether the arguments were not a JSON object and are kept as text."""
        return isinstance(self.arguments, str)

    @classmethod
    def of(cls, value: Any, where: str = "tool_calls[0]") -> ToolCall:
        """A tool call from what a user wrote (a mapping with ``name`` and ``arguments``, or a
        `ToolCall`); anything else is a `ConfigError` naming ``where``."""
        if isinstance(value, ToolCall):
            return value
        if not isinstance(value, Mapping):
            raise ConfigError(where, value, 'a tool call: {"name": ..., "arguments": {...}}')
        name = value.get("name")
        if not isinstance(name, str) or not name:
            raise ConfigError(f"{where}.name", name, "the tool's name, a non-empty string")
        unknown = set(value) - {"name", "arguments", "args", "output", "error", "id"}
        if unknown:
            accepted = "the keys name, arguments (or args), output, error, id"
            raise ConfigError(f"{where}.{sorted(map(str, unknown))[0]}", value, accepted)
        arguments = value.get("arguments", value.get("args", {}))
        error = value.get("error")
        call_id = value.get("id")
        return cls(
            name=name,
            arguments=parse_arguments(arguments),
            output=value.get("output"),
            error=None if error is None else str(error),
            id=None if call_id is None else str(call_id),
        )

    def as_dict(self) -> dict[str, Any]:
        """The call as JSON-like data (name, arguments; output and error when known)."""
        data: dict[str, Any] = {"name": self.name, "arguments": plain(self.arguments)}
        if self.output is not None:
            data["output"] = plain(self.output)
        if self.error is not None:
            data["error"] = self.error
        return data


def parse_arguments(arguments: Any) -> Any:
    """A call's arguments: a mapping as a dict, JSON text of an object parsed, None as ``{}``;
    other text is kept as it is (compared as text), other values are kept as they are.

    Example:
        >>> parse_arguments('{"a": 1}'), parse_arguments(None), parse_arguments("not json")
        ({'a': 1}, {}, 'not json')
    """
    if arguments is None:
        return {}
    if isinstance(arguments, Mapping):
        return {str(key): value for key, value in arguments.items()}
    if isinstance(arguments, (str, bytes)):
        text = arguments.decode("utf-8", "replace") if isinstance(arguments, bytes) else arguments
        if not text.strip():
            return {}
        try:
            parsed = json.loads(text)
        except ValueError:
            return text
        return parsed if isinstance(parsed, dict) else text
    return arguments


def tool_calls(value: Any, where: str = "tool_calls") -> tuple[ToolCall, ...]:
    """Tool calls as users write them (a list of ``{"name", "arguments"}``, or JSON text of one),
    checked; anything else is a `ConfigError` naming ``where`` and the item.

    Example:
        >>> [call.name for call in tool_calls('[{"name": "a"}, {"name": "b", "arguments": {}}]')]
        ['a', 'b']
        >>> tool_calls({"name": "a"})
        Traceback (most recent call last):
        ...
        tracesim._errors.ConfigError: invalid value for setting 'tool_calls': ...
    """
    if isinstance(value, (str, bytes)):
        try:
            value = json.loads(value)
        except ValueError:
            raise ConfigError(where, value, "a JSON list of tool calls") from None
    if isinstance(value, ToolCall):
        return (value,)
    if not isinstance(value, Iterable) or isinstance(value, (Mapping, str, bytes)):
        raise ConfigError(where, value, 'a list of tool calls: [{"name": ..., "arguments": {...}}, ...]')
    return tuple(ToolCall.of(item, f"{where}[{index}]") for index, item in enumerate(value))


@dataclass(frozen=True)
class Step:
    """One step of a run, in start order: a tool call, an LLM call, a nested agent...

    ``kind`` is one of `STEP_KINDS`; ``tool_call`` is set for tool steps (and for the calls an
    LLM step requested, see `Run.tool_calls`); ``requested`` holds the tool calls an LLM step
    asked for. Durations are seconds; tokens and cost are None when unknown.
    """

    kind: str
    name: str
    input: Any = None
    output: Any = None
    error: str | None = None
    start_ns: int = 0
    duration_s: float | None = None
    model: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None
    tool_call: ToolCall | None = None
    requested: tuple[ToolCall, ...] = ()
    depth: int = 1
    span_id: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The step as JSON-like data, with only the fields that are known."""
        data: dict[str, Any] = {"kind": self.kind, "name": self.name}
        for key in ("input", "output", "error", "duration_s", "model", "input_tokens", "output_tokens"):
            value = getattr(self, key)
            if value is not None:
                data[key] = plain(value)
        if self.cost_usd is not None:
            data["cost_usd"] = self.cost_usd
        if self.tool_call is not None:
            data["tool_call"] = self.tool_call.as_dict()
        if self.requested:
            data["requested"] = [call.as_dict() for call in self.requested]
        return data


@dataclass(frozen=True)
class Run:
    """What happened under a scored span: its steps in start order and its final output.

    ``truncated`` says the run was cut short (a step limit, or children that had not ended
    when it was scored); ``truncated_reason`` says why. The totals are over the steps.

    Example:
        >>> lookup = ToolCall("lookup", {"city": "Warsaw"})
        >>> run = Run(
        ...     steps=(
        ...         Step(kind="llm", name="chat", input_tokens=40, output_tokens=8, requested=(lookup,)),
        ...         Step(kind="tool", name="lookup", tool_call=lookup, duration_s=0.2),
        ...         Step(kind="llm", name="chat", input_tokens=60, output_tokens=12),
        ...     ),
        ...     output="12 C",
        ... )
        >>> len(run.tool_calls), run.llm_calls, run.tokens
        (1, 2, 120)
    """

    steps: tuple[Step, ...] = ()
    output: Any = None
    truncated: bool = False
    truncated_reason: str | None = None
    duration_s: float | None = None

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of the run, in start order: each executed tool step, and each call an
        LLM step requested that no tool step executed (matched by id, else by name and arguments,
        so a requested call and its execution count once)."""
        executed = [step.tool_call for step in self.steps if step.kind == "tool" and step.tool_call]
        ids = {call.id for call in executed if call.id}
        requested_ids = {call.id for step in self.steps for call in step.requested if call.id}
        # executions no request claims by id: each may still be a request's, by name and arguments
        pending = [(call.name, _key(call.arguments)) for call in executed if call.id not in requested_ids]
        calls: list[ToolCall] = []
        for step in self.steps:
            if step.kind == "tool" and step.tool_call is not None:
                calls.append(step.tool_call)
                continue
            for call in step.requested:
                if call.id and call.id in ids:
                    continue
                key = (call.name, _key(call.arguments))
                if key in pending:
                    pending.remove(key)
                    continue
                calls.append(call)
        return tuple(calls)

    @property
    def llm_calls(self) -> int:
        """How many LLM calls the run made."""
        return sum(1 for step in self.steps if step.kind == "llm")

    @property
    def tokens(self) -> int:
        """Input and output tokens over the LLM calls whose usage is known."""
        return sum((step.input_tokens or 0) + (step.output_tokens or 0) for step in self.steps)

    @property
    def cost_usd(self) -> float | None:
        """The cost over the steps whose cost is known; None when none is."""
        costs = [step.cost_usd for step in self.steps if step.cost_usd is not None]
        return math.fsum(costs) if costs else None


def _key(arguments: Any) -> str:
    try:
        return json.dumps(plain(arguments), sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(arguments)


@dataclass(frozen=True, init=False)
class Expected:
    """What a run is expected to do: its final output, its tool calls, or both.

    Goes wherever an expected value goes today; a plain value there still means the expected
    output. ``tool_calls`` is checked when the object is made: a bad item is a `ConfigError`
    naming it.

    Example:
        >>> Expected(tool_calls=[{"name": "lookup", "arguments": {"city": "Warsaw"}}]).output
        NOT_GIVEN
    """

    output: Any
    tool_calls: tuple[ToolCall, ...] | None

    def __init__(
        self,
        output: Any = NOT_GIVEN,
        tool_calls: Iterable[ToolCall | Mapping[str, Any]] | str | None = None,
    ) -> None:
        object.__setattr__(self, "output", output)
        checked = None if tool_calls is None else _tool_calls(tool_calls, "expected.tool_calls")
        object.__setattr__(self, "tool_calls", checked)

    @classmethod
    def of(cls, value: Any, where: str = "expected") -> Expected:
        """An `Expected` from a mapping with ``output`` and/or ``tool_calls`` (as in
        ``tracesim.yaml``), or from an `Expected`.

        Example:
            >>> Expected.of({"tool_calls": [{"name": "a"}]}).tool_calls
            (ToolCall(name='a', arguments={}),)
        """
        if isinstance(value, Expected):
            return value
        if not isinstance(value, Mapping) or not set(value) & {"output", "tool_calls"}:
            raise ConfigError(where, value, "a mapping with output and/or tool_calls")
        unknown = set(value) - {"output", "tool_calls"}
        if unknown:
            raise ConfigError(f"{where}.{sorted(map(str, unknown))[0]}", value, "the keys output, tool_calls")
        calls = value.get("tool_calls")
        return cls(
            output=value.get("output", NOT_GIVEN),
            tool_calls=None if calls is None else _tool_calls(calls, f"{where}.tool_calls"),
        )


_tool_calls = tool_calls  # for `Expected`, whose parameter of the same name hides the function


# ---------------------------------------------------------------- tool calls as text

DIFFERENCE_KEYS = (
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
"""The details of run evaluators that say how a run differs from the expected one, in the order
`differences` lists them."""


def _cut(text: str, limit: int | None) -> str:
    """``text`` cut to ``limit`` characters, never through what could be a secret (redaction,
    which comes later, must still recognise it whole)."""
    if limit is None or len(text) <= limit:
        return text
    return text[: safe_cut(text[: limit + 2 * MARGIN], max(limit - 1, 0))] + "…"


def call_text(call: ToolCall | Mapping[str, Any], limit: int | None = None) -> str:
    """A tool call on one line, ``name(arguments as JSON)``, cut to ``limit`` characters.

    Example:
        >>> call_text({"name": "lookup", "arguments": {"city": "Warsaw"}})
        'lookup({"city":"Warsaw"})'
        >>> call_text(ToolCall("search", {"q": "weather", "key": "sk-proj-Abc123Def456Ghi789"}), limit=40)
        'search({"q":"weather","key":"…'

    Cut, a value that could be a secret is left out whole, never in part, so the redaction that
    follows still recognises what is kept.
    """
    if isinstance(call, ToolCall):
        name, arguments = call.name, call.arguments
    else:
        name, arguments = str(call.get("name")), call.get("arguments", {})
    return _cut(f"{name}({dumps(arguments)})", limit)


def calls_text(calls: Iterable[Any], *, most: int = 20, limit: int | None = None) -> str:
    """Tool calls on one line, `call_text` each, the first ``most`` of them (the rest counted);
    ``none`` for no calls.

    Example:
        >>> calls_text([{"name": "a"}, {"name": "b", "arguments": {"x": 1}}, {"name": "c"}], most=2)
        'a({}), b({"x":1}), … (1 more)'
        >>> calls_text([])
        'none'
    """
    listed = list(calls)
    text = ", ".join(_item(call) for call in listed[:most])
    if len(listed) > most:
        text += f", … ({len(listed) - most} more)"
    return _cut(text or "none", limit)


def differences(details: Any, *, limit: int | None = 300, most: int = 20) -> list[tuple[str, str]]:
    """How a run differs from the expected one, as a run evaluator's details say: ``(label, text)``
    pairs, one per kind of difference in `DIFFERENCE_KEYS` order (empty ones left out), each cut
    to ``limit`` characters, lists to their first ``most`` items.

    Example:
        >>> differences({"missing": [{"name": "lookup", "arguments": {"city": "Warsaw"}}],
        ...              "extra": {"convert": 2}, "matched": [[0, 0, 1.0]], "partial": []})
        [('missing', 'lookup({"city":"Warsaw"})'), ('extra', 'convert ×2')]
        >>> differences({"mismatched": {"city": {"expected": "Warsaw", "actual": "Paris"}}})
        [('mismatched', 'city: {"expected":"Warsaw","actual":"Paris"}')]
    """
    if not isinstance(details, Mapping):
        return []
    found = []
    for key in DIFFERENCE_KEYS:
        value = details.get(key)
        if value in (None, [], {}, ""):
            continue
        found.append((key.replace("_", " "), _cut(_difference(value, most), limit)))
    return found


def _difference(value: Any, most: int) -> str:
    if isinstance(value, list):
        return ", ".join(_item(item) for item in value[:most]) + (" …" if len(value) > most else "")
    if isinstance(value, Mapping):
        if all(isinstance(n, int) and not isinstance(n, bool) for n in value.values()):
            return ", ".join(f"{name} ×{count}" for name, count in value.items())
        return "; ".join(f"{name}: {_item(item)}" for name, item in value.items())
    return _item(value)


def _item(item: Any) -> str:
    if isinstance(item, ToolCall):
        return call_text(item)
    if isinstance(item, Mapping):
        if isinstance(item.get("name"), str):
            return call_text(item)
        call, closest = item.get("call"), item.get("closest")
        if isinstance(call, Mapping) and isinstance(call.get("name"), str):
            near = f" (closest: {call_text(closest)})" if isinstance(closest, Mapping) else ""
            return call_text(call) + near
    return item if isinstance(item, str) else dumps(item)
