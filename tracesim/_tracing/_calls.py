"""What every traced call shares: the binder, the per-function metadata, start and end.

Everything that can be decided once is decided at decoration time: the span name, the static
attributes, how arguments become the input, which evaluators score the output. A call then
does the least work possible: bind, capture, start, call, capture, end.
"""

from __future__ import annotations

import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from opentelemetry.util.types import AttributeValue

from tracesim import _runtime
from tracesim import _semconv as sc
from tracesim._capture import capture_value
from tracesim._internal_errors import internal_error
from tracesim._scoring import NOT_SET as _NOT_SET
from tracesim._scoring import Plan, build_evaluators
from tracesim._tracing._span import Span, adopt_plan, finish, score, start, static_attributes

__all__ = ["Binder", "Meta", "begin", "span_name", "succeed"]

_PARAMETER_KINDS_SIMPLE = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class Binder:
    """Turns call arguments into the span input, computed from the signature once.

    Arguments are bound to parameter names, defaults applied and ``self``/``cls`` dropped;
    one parameter is recorded as its value, several as a mapping of names to values.
    """

    __slots__ = ("count", "names", "signature", "simple", "single", "skip")

    def __init__(self, fn: Callable[..., Any]) -> None:
        try:
            self.signature: inspect.Signature | None = inspect.signature(fn)
        except (TypeError, ValueError):
            self.signature = None
        params = list(self.signature.parameters.values()) if self.signature else []
        first_is_self = bool(params) and params[0].name in ("self", "cls")
        self.skip = 1 if first_is_self and params[0].kind in _PARAMETER_KINDS_SIMPLE else 0
        self.names = [p.name for p in params[self.skip :]]
        self.count = len(params)
        self.simple = all(p.kind in _PARAMETER_KINDS_SIMPLE for p in params)
        self.single = len(self.names) == 1 and params[-1].kind in _PARAMETER_KINDS_SIMPLE

    def input(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        """The input to record: the one argument, or all of them by name; NOT_SET without parameters."""
        if self.signature is None:
            return {"args": list(args), "kwargs": kwargs} if kwargs else list(args)
        if not self.names:
            return _NOT_SET
        if self.simple and not kwargs and len(args) == self.count:  # the common case, without inspect
            skip = self.skip
            return args[skip] if self.single else dict(zip(self.names, args[skip:], strict=True))
        arguments = self.arguments(args, kwargs)
        if self.single and self.names[0] in arguments:
            return arguments[self.names[0]]
        return arguments

    def arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """Every argument by parameter name, defaults applied, ``self``/``cls`` dropped."""
        if self.signature is None:
            return {"args": list(args), "kwargs": kwargs}
        try:
            bound = self.signature.bind(*args, **kwargs)
        except TypeError:  # the call itself fails the same way; record what was passed
            return {"args": list(args[self.skip :]), "kwargs": kwargs}
        bound.apply_defaults()
        arguments = dict(bound.arguments)
        if self.skip:
            arguments.pop(next(iter(self.signature.parameters)), None)
        return arguments


class Meta:
    """What a decorated function needs per call, computed once."""

    __slots__ = (
        "attributes",
        "binder",
        "capture_input",
        "capture_output",
        "evaluators",
        "expected",
        "kind",
        "name",
        "plans",
    )

    def __init__(
        self,
        fn: Callable[..., Any],
        name: str | None,
        kind: str,
        capture_input: bool,
        capture_output: bool,
        attributes: Mapping[str, Any] | None,
        evaluators: Sequence[Any],
        expected: Any,
    ) -> None:
        self.name = name or span_name(fn)
        self.kind = kind.lower() if isinstance(kind, str) else kind
        self.attributes = static_attributes(self.name, kind, attributes)
        self.binder = Binder(fn)
        self.capture_input = capture_input
        self.capture_output = capture_output
        self.evaluators = build_evaluators(evaluators, self.name) if evaluators else ()
        self.expected = expected
        # (runtime, plan) for the runtime that computed it: rules come from configure()
        self.plans: tuple[Any, Plan | None] = (None, None)

    def plan(self, runtime: _runtime.Runtime) -> Plan | None:
        cached_runtime, plan = self.plans
        if cached_runtime is not runtime:
            plan = runtime.plan(self.name, self.kind, self.evaluators, self.expected, self.attributes)
            self.plans = (runtime, plan)
        return plan


def _tool_arguments(
    binder: Binder, value: Any, args: tuple[Any, ...], kwargs: dict[str, Any], runtime: _runtime.Runtime
) -> dict[str, AttributeValue]:
    """A tool call's arguments by name, as the GenAI conventions record them
    (``gen_ai.tool.call.arguments``, JSON), so a run compares them with expected tool calls."""
    if value is _NOT_SET:
        arguments: Any = {}
    elif binder.single and binder.signature is not None:
        arguments = {binder.names[0]: value}
    elif isinstance(value, dict) and binder.signature is not None:
        arguments = value
    else:
        arguments = binder.arguments(args, kwargs)
    return {sc.GEN_AI_TOOL_CALL_ARGUMENTS: capture_value(arguments, runtime.capture).text}


def span_name(fn: Callable[..., Any]) -> str:
    """``Class.method`` for methods, the function's name otherwise (no ``<locals>`` noise)."""
    qualname: str = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None) or repr(fn)
    return qualname.rsplit("<locals>.", 1)[-1]


def begin(runtime: _runtime.Runtime, meta: Meta, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Span:
    value = _NOT_SET
    attributes = meta.attributes
    if meta.capture_input and runtime.capture.enabled:
        value = meta.binder.input(args, kwargs)
        if meta.kind == "tool":
            attributes = {**attributes, **_tool_arguments(meta.binder, value, args, kwargs, runtime)}
    handle = start(runtime, meta.name, attributes, value)
    plan = meta.plan(runtime)
    if plan is not None:
        adopt_plan(handle, plan)
    return handle


def succeed(handle: Span, meta: Meta, output: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
    end_ns = time.time_ns()  # the call's end, whatever scoring takes afterwards
    try:
        if meta.capture_output and not handle._output_set:
            handle.set_output(output)
            handle._output_set = False
    except Exception:
        internal_error("trace: output")
    if handle._plan is None:
        finish(handle, None, end_ns)
        return
    if handle._output_set:
        output = handle._output  # what set_output() recorded is what gets scored
    score(handle, output, end_ns, args, kwargs, meta.binder)
