"""The Agents SDK's tracing processor that turns its runs into spans of tracesim's traces.

The SDK reports each run to its *trace processors* (``agents.tracing.TracingProcessor``): a
trace per run, and spans for the agent, its model calls, its tools and handoffs, each with the
id of its parent. `Processor` extends the OpenTelemetry project's ``GenAITracingProcessor``
(``opentelemetry-instrumentation-genai-openai-agents``), which makes the ``invoke_workflow``,
``invoke_agent`` and ``execute_tool`` spans through ``opentelemetry-util-genai``, with what
that processor leaves out:

- the agent's input and output (``gen_ai.input.messages`` / ``gen_ai.output.messages``): the
  SDK's agent span has neither, so they are read from the model calls made inside it (the first
  user message one of them was sent, the last text one answered); the workflow's, from its
  agents (the first one's input, the last answer);
- a tool's arguments and result (``gen_ai.tool.call.arguments`` / ``.result``);
- a handoff, as a ``handoff <agent>`` span under the agent handing off.

Content is written only when tracesim records content right now (`captures`), bounded like
every captured value (`captured_text`); never through util-genai's own content path, which
follows an environment variable rather than tracesim's ``capture``. Model calls are *not* made
spans here: tracesim's ``openai`` integration traces the client call itself (one span per call,
with its tokens), and a second span from the SDK's record of it would count it twice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from agents.tracing import Span, Trace
from agents.tracing.span_data import (
    AgentSpanData,
    FunctionSpanData,
    GenerationSpanData,
    HandoffSpanData,
    ResponseSpanData,
)
from opentelemetry import trace as otel_trace
from opentelemetry.instrumentation.genai.openai_agents.processor import (
    GenAITracingProcessor,
)
from opentelemetry.util.genai.invocation import ToolInvocation
from opentelemetry.util.genai.types import Error

from tracesim.instrumentation import captured_text, captures

__all__ = ["Processor", "input_text", "output_text"]

_INPUT = "gen_ai.input.messages"
_OUTPUT = "gen_ai.output.messages"
_ARGUMENTS = "gen_ai.tool.call.arguments"
_RESULT = "gen_ai.tool.call.result"
_HANDOFF_FROM = "tracesim.handoff.from"
_HANDOFF_TO = "tracesim.handoff.to"


@dataclass
class _Seen:
    """What an agent's model calls showed of its conversation: its input and its last answer."""

    input: str | None = None
    output: str | None = None


class Processor(GenAITracingProcessor):
    """Agents SDK spans as GenAI spans, with the content the OpenTelemetry processor leaves out.

    ``handler`` is util-genai's ``TelemetryHandler`` (its tracer provider is tracesim's),
    ``capture`` returns the integration's own ``capture`` override (None: follow tracesim's),
    read each time content could be written; ``tracer`` makes the handoff spans.

    The SDK calls a processor synchronously, on the task or thread that starts or ends a span;
    runs in several threads share it, so its state is only single dictionary operations.
    """

    def __init__(
        self,
        handler: Any,
        provider: str,
        capture: Callable[[], bool | None],
        tracer: otel_trace.Tracer,
    ) -> None:
        super().__init__(handler, provider)
        self._capture = capture
        self._tracer = tracer
        self._agent_of: dict[str, str] = {}  # SDK span id -> id of the agent span it runs in
        self._seen: dict[str, _Seen] = {}  # agent span id -> what its model calls showed
        self._runs: dict[str, _Seen] = {}  # trace id -> its first agent's input, last agent's answer
        self._handoffs: dict[str, otel_trace.Span] = {}

    def on_span_start(self, span: Span[Any]) -> None:
        """Start the GenAI span for an agent, a tool or a handoff; note which agent a span is in."""
        super().on_span_start(span)
        data = span.span_data
        if isinstance(data, AgentSpanData):
            self._agent_of[span.span_id] = span.span_id
        elif span.parent_id is not None and span.parent_id in self._agent_of:
            self._agent_of[span.span_id] = self._agent_of[span.parent_id]
        if isinstance(data, HandoffSpanData):  # named when it ends: the SDK knows the target by then
            self._handoffs[span.span_id] = self._tracer.start_span("handoff")

    def on_span_end(self, span: Span[Any]) -> None:
        """End the span the SDK span started, with its content when tracesim records content.

        Replaces the OpenTelemetry processor's own ending, which hands a tool's content to
        util-genai (written there when an environment variable says so, whatever tracesim's
        ``capture`` is).
        """
        data = span.span_data
        agent = self._agent_of.pop(span.span_id, None)
        content = captures(self._capture())
        if content and agent is not None and isinstance(data, (GenerationSpanData, ResponseSpanData)):
            self._note(agent, data)
        handoff = self._handoffs.pop(span.span_id, None)
        if handoff is not None:
            _end(handoff, span, content)
        invocation = self._invocations.pop(span, None)
        seen = self._seen.pop(span.span_id, None)
        if invocation is None:
            return
        target = invocation.span
        if content and target is not None and target.is_recording():
            if isinstance(data, FunctionSpanData) and isinstance(invocation, ToolInvocation):
                if data.input:
                    target.set_attribute(_ARGUMENTS, captured_text(data.input))
                if data.output is not None:
                    target.set_attribute(_RESULT, captured_text(_dumped(data.output)))
            elif seen is not None:
                _write(target, seen)
                run = self._runs.setdefault(span.trace_id, _Seen())
                run.input = seen.input if run.input is None else run.input
                run.output = seen.output or run.output
        error = span.error
        if error is not None:
            invocation.fail(Error(type="_OTHER", message=_error_text(error, content)))
            return
        invocation.stop()

    def on_trace_end(self, trace: Trace) -> None:
        """End the workflow span, with the run's input and answer (its agents') when recorded."""
        run = self._runs.pop(trace.trace_id, None)
        invocation = self._invocations.get(trace)
        target = getattr(invocation, "span", None)
        if run is not None and target is not None and target.is_recording() and captures(self._capture()):
            _write(target, run)
        super().on_trace_end(trace)

    def _note(self, agent: str, data: GenerationSpanData | ResponseSpanData) -> None:
        seen = self._seen.setdefault(agent, _Seen())
        if seen.input is None:
            seen.input = input_text(data.input)
        answer = output_text(data)
        if answer is not None:
            seen.output = answer

    def shutdown(self) -> None:
        """End what is still open (the OpenTelemetry processor stops its invocations)."""
        super().shutdown()
        for handoff in list(self._handoffs.values()):
            handoff.end()
        self._handoffs.clear()
        self._agent_of.clear()
        self._seen.clear()
        self._runs.clear()


def _write(target: otel_trace.Span, seen: _Seen) -> None:
    if seen.input is not None:
        target.set_attribute(_INPUT, captured_text([_message("user", seen.input)]))
    if seen.output is not None:
        target.set_attribute(_OUTPUT, captured_text([_message("assistant", seen.output)]))


def _end(handoff: otel_trace.Span, span: Span[Any], content: bool) -> None:
    data = span.span_data
    if isinstance(data, HandoffSpanData):
        if data.to_agent:
            handoff.update_name(f"handoff {data.to_agent}")
        handoff.set_attributes(_present({_HANDOFF_FROM: data.from_agent, _HANDOFF_TO: data.to_agent}))
    error = span.error
    if error is not None:
        handoff.set_status(otel_trace.Status(otel_trace.StatusCode.ERROR, _error_text(error, content)))
    handoff.end()


def _error_text(error: Mapping[str, Any], content: bool) -> str:
    """The SDK's error: its message, and its details (which may quote content) only with content."""
    message = str(error.get("message") or "error")
    details = error.get("data")
    return f"{message}: {captured_text(details)}" if content and details else message


def _present(attributes: Mapping[str, str | None]) -> dict[str, str]:
    return {key: value for key, value in attributes.items() if value}


def _message(role: str, text: str) -> dict[str, Any]:
    """One message in the GenAI conventions' form, as tracesim reads it back."""
    message: dict[str, Any] = {"role": role, "parts": [{"type": "text", "content": text}]}
    if role == "assistant":
        message["finish_reason"] = "stop"
    return message


def _dumped(value: Any) -> Any:
    """A tool's result as plain data when it is a pydantic model (written as its JSON)."""
    dump = getattr(value, "model_dump", None)
    return dump(mode="json") if callable(dump) else value


def _get(value: Any, key: str) -> Any:
    """A field of a dict or of an object (the openai client's pydantic types), read in place:
    dumping a whole response to plain data costs more than the rest of the processor."""
    return value.get(key) if isinstance(value, Mapping) else getattr(value, key, None)


def _items(value: Any) -> Iterable[Any]:
    """The items of a list (or tuple); nothing for anything else."""
    return value if isinstance(value, (list, tuple)) else ()


def _text(content: Any) -> str:
    """The text of a message's content: a string, or its text parts (``text`` / ``input_text`` /
    ``output_text``) joined."""
    if isinstance(content, str):
        return content
    texts = (_get(part, "text") for part in _items(content))
    return "".join(text for text in texts if isinstance(text, str))


def input_text(given: Any) -> str | None:
    """The first user message's text in what a model call was sent: chat messages, Responses
    input items, or the Responses API's plain-text input.

    Example:
        >>> input_text([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi?"}])
        'Hi?'
        >>> parts = [{"type": "input_text", "text": "Hi?"}]
        >>> input_text([{"type": "message", "role": "user", "content": parts}])
        'Hi?'
        >>> input_text("Hi?"), input_text(None)
        ('Hi?', None)
    """
    if isinstance(given, str):
        return given or None
    for item in _items(given):
        if _get(item, "role") == "user":
            text = _text(_get(item, "content"))
            if text:
                return text
    return None


def output_text(data: GenerationSpanData | ResponseSpanData) -> str | None:
    """The text a model call answered (None when it only called tools, or the SDK kept no data).

    A chat completion's record holds assistant messages (or, streamed, the response it was
    turned into); a Responses call's, the response with its output items.

    Example:
        >>> from agents.tracing.span_data import GenerationSpanData
        >>> output_text(GenerationSpanData(output=[{"role": "assistant", "content": "Sunny."}]))
        'Sunny.'
        >>> output_text(GenerationSpanData(output=[{"role": "assistant", "content": None}])) is None
        True
    """
    answers = [data.response] if isinstance(data, ResponseSpanData) else _items(data.output)
    texts: list[str] = []
    for answer in answers:
        if _get(answer, "role") == "assistant":
            texts.append(_text(_get(answer, "content")))
        for item in _items(_get(answer, "output")):  # a Responses API response
            if _get(item, "type") == "message":
                texts.append(_text(_get(item, "content")))
    text = "".join(texts)
    return text or None
