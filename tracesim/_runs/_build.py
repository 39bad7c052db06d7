"""Build a `Run` from the finished spans under a scored span, whatever convention made them.

A step's kind is read from tracesim's own attributes and OpenInference
(``openinference.span.kind``), then the GenAI operation (``gen_ai.operation.name``), then
OpenLLMetry (``traceloop.span.kind``, ``llm.request.type``); a span reporting token usage is
an LLM call; anything else is a ``span`` step. Inputs and outputs are read as rules read them
(`tracesim._foreign_spans`); tokens and cost as ``tracesim report`` reads them
(`tracesim._pricing`: the span's own ``llm.cost.total``, else the price table).

Tool calls: a tool step's call has the tool's name, arguments, result and call id
(``gen_ai.tool.call.*``, OpenInference ``input.value``/``output.value``, OpenLLMetry
``traceloop.entity.*``); an LLM step's ``requested`` calls are those its answer asked for, with
their ids. tracesim's own tool spans record the function's input, not the call's arguments,
and no id: such a step takes the id and arguments of the earliest call of the same name
requested before it that no other step executed, so `Run.tool_calls` counts them once.

Everything is bounded: at most ``max_steps`` steps, each value cut to ``max_value_chars`` as
captured values are; odd attributes never raise (JSON that does not parse stays text).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Mapping
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import StatusCode

from tracesim import _semconv as sc
from tracesim._capture import cut
from tracesim._foreign_spans import requested_tool_calls, span_input, span_kinds, span_output
from tracesim._pricing import GEN_AI_REQUEST_MODEL, LLM_MODEL_NAME, PriceTable, read_usage
from tracesim.runs import NOT_GIVEN, STEP_KINDS, Run, Step, ToolCall, parse_arguments

__all__ = ["DEFAULT_MAX_STEPS", "build_run"]

DEFAULT_MAX_STEPS = 200
"""Steps kept from one run; the rest are left out and the run is marked truncated."""

DEFAULT_MAX_VALUE_CHARS = 32 * 1024
"""Each input, output and argument text is cut to this many characters (``max_value_chars``)."""

_TRACELOOP_KINDS = {"workflow": "chain", "task": "chain", "agent": "agent", "tool": "tool"}
_OWN_SCOPE = "tracesim"  # the instrumentation scope of tracesim's own spans
_SKIPPED_KINDS = frozenset({"evaluator"})  # tracesim's evaluator spans score the run; not part of it
_TOOL_NAME_KEYS = ("gen_ai.tool.name", "tool.name")
_TOOL_ID_KEYS = ("gen_ai.tool.call.id", "tool_call.id", "tool.id")
_TOOL_RESULT_KEYS = ("gen_ai.tool.call.result", "output.value", "traceloop.entity.output")

_shipped_prices: PriceTable | None = None


def build_run(
    root: ReadableSpan,
    spans: Iterable[ReadableSpan],
    *,
    running: Iterable[ReadableSpan] = (),
    max_steps: int = DEFAULT_MAX_STEPS,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
    prices: PriceTable | None = None,
    now_ns: int | None = None,
    output: Any = NOT_GIVEN,
    left_out: int = 0,
) -> Run:
    """The run under ``root``: its descendants in ``spans`` as steps, in start order.

    Args:
        root: The scored span (its own attributes give the run's output and duration).
        spans: Finished spans of its trace, in any order; spans of other traces and spans
            outside ``root``'s subtree are ignored.
        running: Spans that started and have not ended (a span processor's view); those under
            ``root`` mark the run truncated, by name. A span in ``spans`` without an end time
            counts as running too.
        max_steps: Steps kept, first started first; more mark the run truncated ("step limit").
        max_value_chars: Each text value is cut to this length, as captured values are.
        prices: The price table for LLM steps without their own ``llm.cost.total``; the
            shipped prices by default.
        now_ns: The time to measure a root that has not ended up to; without it, such a run
            has no duration.
        output: The run's final output when the caller has it (a traced function's return
            value); by default it is read from ``root``'s attributes in its convention.
        left_out: Spans of the trace that were not kept (a recorder's bound): the run is
            marked truncated, saying how many.

    Example:
        >>> from tracesim.testing import capture_spans
        >>> import tracesim
        >>> @tracesim.trace(kind="tool")
        ... def lookup(city: str) -> str:
        ...     return "12 C"
        >>> @tracesim.trace(kind="agent")
        ... def agent(question: str) -> str:
        ...     return lookup("Warsaw")
        >>> with capture_spans() as captured:
        ...     _ = agent("weather?")
        >>> spans = captured.otel_spans
        >>> run = build_run(next(s for s in spans if s.name == "agent"), spans)
        >>> [(step.kind, step.name) for step in run.steps], run.output
        ([('tool', 'lookup')], '12 C')
    """
    table = prices if prices is not None else _shipped()
    limit = max(1, max_value_chars)
    root_context = root.context
    if root_context is None:
        return Run(output=_run_output(root, limit) if output is NOT_GIVEN else output)
    trace_id, root_id = root_context.trace_id, root_context.span_id
    finished: dict[int, ReadableSpan] = {}
    unended: dict[int, ReadableSpan] = {}
    for span in spans:
        _collect(span, trace_id, root_id, unended if span.end_time is None else finished)
    for span in running:
        _collect(span, trace_id, root_id, unended)
    children: dict[int, list[ReadableSpan]] = {}
    for span in (*finished.values(), *unended.values()):
        parent = span.parent
        if parent is not None:
            children.setdefault(parent.span_id, []).append(span)

    found: list[tuple[ReadableSpan, int]] = []
    still_running: list[str] = []
    _walk(root_id, 1, children, unended, found, still_running, set(), _twins_inside(root_id, children))
    found.sort(key=lambda item: item[0].start_time or 0)  # stable: ties keep tree order
    reasons: list[str] = []
    if still_running:
        names = ", ".join(repr(name) for name in still_running[:5])
        more = f" and {len(still_running) - 5} more" if len(still_running) > 5 else ""
        reasons.append(f"{len(still_running)} step(s) had not ended: {names}{more}")
    if left_out > 0:
        reasons.append(f"{left_out} span(s) of the trace were not kept (the recorder's span limit)")
    if len(found) > max(0, max_steps):
        reasons.append(f"step limit: kept the first {max(0, max_steps)} of {len(found)} steps")
        found = found[: max(0, max_steps)]

    steps = _paired([_step(span, depth, limit, table) for span, depth in found])
    end = root.end_time if root.end_time is not None else now_ns
    start = root.start_time
    duration = (end - start) / 1e9 if end is not None and start is not None and end >= start else None
    return Run(
        steps=tuple(steps),
        output=_final_output(root, steps, limit) if output is NOT_GIVEN else output,
        truncated=bool(reasons),
        truncated_reason="; ".join(reasons) or None,
        duration_s=duration,
    )


def _shipped() -> PriceTable:
    global _shipped_prices
    if _shipped_prices is None:
        _shipped_prices = PriceTable()
    return _shipped_prices


def _collect(span: ReadableSpan, trace_id: int, root_id: int, into: dict[int, ReadableSpan]) -> None:
    context = span.context
    if context is not None and context.trace_id == trace_id and context.span_id != root_id:
        into[context.span_id] = span


def _twins_inside(root_id: int, children: Mapping[int, list[ReadableSpan]]) -> frozenset[int]:
    """The LLM spans under the root whose twin (another instrumentation's span of the same call,
    ``tracesim.llm.twin_of``) is under it too: the run counts the call once, at the twin."""
    inside: dict[int, ReadableSpan] = {}
    stack = [root_id]
    while stack:
        for child in children.get(stack.pop(), ()):
            context = child.context
            if context is not None and context.span_id not in inside:
                inside[context.span_id] = child
                stack.append(context.span_id)
    dropped = set()
    for span_id, span in inside.items():
        twin = (span.attributes or {}).get(sc.LLM_TWIN_OF)
        if isinstance(twin, str):
            try:
                partner = int(twin, 16)
            except ValueError:
                continue
            if partner in inside:
                dropped.add(span_id)
    return frozenset(dropped)


def _walk(
    parent_id: int,
    depth: int,
    children: Mapping[int, list[ReadableSpan]],
    unended: Mapping[int, ReadableSpan],
    found: list[tuple[ReadableSpan, int]],
    still_running: list[str],
    seen: set[int],
    twins: frozenset[int] = frozenset(),
) -> None:
    """Depth-first over the subtree (iteratively: a deep agent must not hit the recursion limit).

    A tool span directly inside a tool step of the same tool is that call seen by a second
    instrumentation (a framework's ``execute_tool`` and an MCP client's span under it): one step.
    """
    stack: list[tuple[ReadableSpan, int, str | None]] = [
        (span, depth, None) for span in reversed(_by_start(children.get(parent_id, ())))
    ]
    while stack:
        span, level, enclosing_tool = stack.pop()
        span_id = span.context.span_id if span.context is not None else 0
        if span_id in seen:
            continue
        seen.add(span_id)
        attributes = span.attributes or {}
        kind = _kind(attributes)
        if kind in _SKIPPED_KINDS or span.name == sc.EXPORT_DROPPED:
            continue
        if span_id in unended:
            still_running.append(span.name)
        nested, inside = level, enclosing_tool
        tool_name = _first_text(attributes, _TOOL_NAME_KEYS) or span.name if kind == "tool" else None
        # the same call as its parent, or as its twin in the run, or as the tool step around it: once
        repeated = kind == "tool" and tool_name == enclosing_tool
        if attributes.get(sc.LLM_COUNTED_IN_PARENT) is not True and span_id not in twins and not repeated:
            found.append((span, level))
            nested, inside = level + 1, tool_name
        stack.extend((child, nested, inside) for child in reversed(_by_start(children.get(span_id, ()))))


def _by_start(spans: Iterable[ReadableSpan]) -> list[ReadableSpan]:
    return sorted(spans, key=lambda span: span.start_time or 0)


def _kind(attributes: Mapping[str, Any]) -> str:
    """The step kind of a span, in the conventions' order (see the module docstring)."""
    kind, _ = span_kinds(attributes)
    if kind is not None:
        return kind if kind in STEP_KINDS or kind in _SKIPPED_KINDS else "span"
    traceloop = attributes.get("traceloop.span.kind")
    if isinstance(traceloop, str) and traceloop.lower() in _TRACELOOP_KINDS:
        return _TRACELOOP_KINDS[traceloop.lower()]
    if isinstance(attributes.get("llm.request.type"), str) or read_usage(attributes, twins=True) is not None:
        return "llm"
    return "span"


def _step(span: ReadableSpan, depth: int, limit: int, table: PriceTable) -> Step:
    attributes = span.attributes or {}
    kind = _kind(attributes)
    start, end = span.start_time or 0, span.end_time
    usage = read_usage(attributes, twins=True)  # a twin here has its partner outside the run
    model = usage.model if usage is not None else None
    if model is None and kind == "llm":
        model = _text(attributes.get(GEN_AI_REQUEST_MODEL)) or _text(attributes.get(LLM_MODEL_NAME))
    error = _error(span)
    name = span.name
    tool_call = None
    requested: tuple[ToolCall, ...] = ()
    if kind == "tool":
        tool_name = _first_text(attributes, _TOOL_NAME_KEYS)
        if tool_name is None and isinstance(attributes.get("traceloop.span.kind"), str):
            tool_name = _text(attributes.get("traceloop.entity.name"))
        name = tool_name or span.name
        scope = span.instrumentation_scope
        own = scope is not None and scope.name == _OWN_SCOPE
        tool_call = _executed_call(name, attributes, error, limit, own)
    elif kind == "agent":
        name = _text(attributes.get(sc.GEN_AI_AGENT_NAME)) or span.name
    if kind == "llm" or usage is not None:
        requested = tuple(
            ToolCall(call_name, _arguments(arguments, limit), id=call_id)
            for call_name, arguments, call_id in requested_tool_calls(attributes)
        )
    return Step(
        kind=kind,
        name=name,
        input=_bounded(span_input(attributes), limit),
        output=_bounded(span_output(attributes), limit),
        error=error,
        start_ns=start,
        duration_s=(end - start) / 1e9 if end is not None and end >= start else None,
        model=model,
        input_tokens=usage.input_tokens if usage is not None else None,
        output_tokens=usage.output_tokens if usage is not None else None,
        cost_usd=usage.priced(table) if usage is not None else None,
        tool_call=tool_call,
        requested=requested,
        depth=depth,
        span_id=f"{span.context.span_id:016x}" if span.context is not None else None,
    )


_FROM_INPUT = "tracesim.input"  # marks a call whose arguments are a function's input (see _paired)
_UNRECORDED: Any = type("_Unrecorded", (), {"__repr__": lambda self: "<arguments not recorded>"})()
"""A tool span's arguments when its convention recorded none (LangChain's without content): the
request's, once paired (see _paired), else ``{}``."""


def _executed_call(
    name: str, attributes: Mapping[str, Any], error: str | None, limit: int, own: bool = False
) -> ToolCall:
    """The call a tool span executed: its arguments, result and id, as its convention records them.

    ``own``: a tool span of tracesim's ``@trace(kind="tool")``: its arguments are the function's
    (defaults included), so it pairs with a model's request by name (see `_paired`)."""
    call_id = _first_text(attributes, _TOOL_ID_KEYS)
    arguments: Any = attributes.get("gen_ai.tool.call.arguments")
    from_input = own and arguments is not None
    if arguments is None and "traceloop.entity.input" in attributes:
        arguments = _traceloop_arguments(attributes.get("traceloop.entity.input"))
    if arguments is None and sc.INPUT_VALUE in attributes:
        arguments = attributes.get(sc.INPUT_VALUE)
        # tracesim's own tool span: the function's input (one argument is recorded as its value)
        from_input = sc.GEN_AI_TOOL_NAME in attributes and "tool.name" not in attributes
    if arguments is None:
        parameters = attributes.get("tool.parameters")  # the tool's schema, unless it reads as a call's
        parsed = parse_arguments(parameters) if isinstance(parameters, str) else None
        if isinstance(parsed, dict) and not {"type", "properties"} & set(parsed):
            arguments = parsed
    output = _first_text(attributes, _TOOL_RESULT_KEYS)
    if from_input and call_id is None:
        call_id = _FROM_INPUT  # replaced by the paired request's id, or None (see _paired)
    if arguments is None:
        return ToolCall(name, _UNRECORDED, output=_bounded(output, limit), error=error, id=call_id)
    return ToolCall(
        name, _arguments(arguments, limit), output=_bounded(output, limit), error=error, id=call_id
    )


def _traceloop_arguments(raw: Any) -> Any:
    """OpenLLMetry's ``traceloop.entity.input``: ``{"args": [...], "kwargs": {...}}`` as arguments."""
    if not isinstance(raw, str):
        return raw
    try:
        data = json.loads(raw)
    except ValueError:
        return raw
    if isinstance(data, dict) and set(data) <= {"args", "kwargs"} and not data.get("args"):
        kwargs = data.get("kwargs")
        return kwargs if isinstance(kwargs, dict) else {}
    return raw


def _paired(steps: list[Step]) -> list[Step]:
    """Link tool steps to the request they executed, so `Run.tool_calls` counts each call once.

    A step with a call id and no recorded arguments takes the arguments of the request with that
    id. A step without an id takes the id of the earliest earlier request that no step executed,
    of the same name and arguments; tracesim's own tool steps (the function's input as arguments)
    and steps without recorded arguments match by name alone and take the request's arguments.
    """
    executed_ids = {
        step.tool_call.id for step in steps if step.tool_call is not None and step.tool_call.id != _FROM_INPUT
    }
    by_id = {call.id: call for step in steps for call in step.requested if call.id}
    pending: list[ToolCall] = []
    result: list[Step] = []
    for step in steps:
        pending.extend(call for call in step.requested if not (call.id and call.id in executed_ids))
        call = step.tool_call
        if call is None:
            result.append(step)
            continue
        unrecorded = call.arguments is _UNRECORDED
        if call.id not in (None, _FROM_INPUT):
            if unrecorded:
                request = by_id.get(call.id)
                call = dataclasses.replace(call, arguments={} if request is None else request.arguments)
                step = dataclasses.replace(step, tool_call=call)
            result.append(step)
            continue
        loose = unrecorded or call.id == _FROM_INPUT
        key = _key(call.arguments)
        match = next(
            (
                request
                for request in pending
                if request.name == call.name and (loose or _key(request.arguments) == key)
            ),
            None,
        )
        if match is None:
            call = dataclasses.replace(call, id=None, arguments={} if unrecorded else call.arguments)
        else:  # the model's arguments: a function's input has one argument bare, defaults added
            pending.remove(match)
            call = dataclasses.replace(call, id=match.id, arguments=match.arguments)
        result.append(dataclasses.replace(step, tool_call=call))
    return result


def _key(arguments: Any) -> str:
    try:
        return json.dumps(arguments, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(arguments)


def _arguments(raw: Any, limit: int) -> Any:
    """Arguments as `parse_arguments` reads them, text cut first (cut JSON stays text); a mapping
    whose JSON is longer than ``limit`` becomes that JSON, cut."""
    if isinstance(raw, str):
        return parse_arguments(_bounded(raw, limit))
    if isinstance(raw, Mapping):
        text = _key(raw)
        return parse_arguments(raw) if len(text) <= limit else _bounded(text, limit)
    if raw is None:
        return {}
    if isinstance(raw, (bool, int, float)):
        return raw
    return _bounded(str(list(raw)) if isinstance(raw, tuple) else str(raw), limit)


def _run_output(root: ReadableSpan, limit: int) -> Any:
    """The run's final output: the root's output in its convention; JSON values parsed."""
    attributes = root.attributes or {}
    text = span_output(attributes)
    if text is None:
        return None
    if attributes.get(sc.OUTPUT_MIME_TYPE) == sc.MIME_JSON and len(text) <= limit:
        try:
            return json.loads(text)
        except ValueError:
            pass
    return _bounded(text, limit)


def _final_output(root: ReadableSpan, steps: list[Step], limit: int) -> Any:
    """The root's output; for an agent span that records none (OpenInference's OpenAI Agents
    spans), the answer of its last LLM call that answered with text rather than tool calls."""
    found = _run_output(root, limit)
    if found is not None:
        return found
    for step in reversed(steps):
        if step.kind == "llm" and step.output is not None and not step.requested:
            return step.output
    return None


def _error(span: ReadableSpan) -> str | None:
    """The span's error: its status description, else its exception's type, else ``error.type``."""
    status = span.status
    attributes = span.attributes or {}
    if status is None or status.status_code is not StatusCode.ERROR:
        error_type = attributes.get(sc.ERROR_TYPE)
        return error_type if isinstance(error_type, str) and error_type else None
    if status.description:
        return status.description
    for event in span.events or ():
        if event.name == "exception" and event.attributes:
            kind, message = event.attributes.get("exception.type"), event.attributes.get("exception.message")
            if isinstance(kind, str):
                return f"{kind}: {message}" if isinstance(message, str) and message else kind
    error_type = attributes.get(sc.ERROR_TYPE)
    return error_type if isinstance(error_type, str) and error_type else "error"


def _bounded(text: str | None, limit: int) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return cut(text, limit, len(text))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _first_text(attributes: Mapping[str, Any], keys: Iterable[str]) -> str | None:
    for key in keys:
        value = attributes.get(key)
        if isinstance(value, str) and value:
            return value
    return None
