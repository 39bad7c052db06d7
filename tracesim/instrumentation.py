"""What an integration builds on: tracesim's public API for plugging instrumentations in.

An *integration* is a separate distribution (``tracesim-openai``, ``tracesim-anthropic``,
``tracesim-langchain``, or one of your own) that turns another library's calls into spans in
tracesim's traces. It imports only this module (and tracesim's other public names), and
registers one object under the entry-point group `ENTRY_POINT_GROUP`; tracesim finds it there
when ``configure(instrument=[...])`` or ``TRACESIM_INSTRUMENT`` names it (for tracesim's own
integrations also ``tracesim.instrument_<name>()``).

The module is named for what its users write: instrumentation, as in OpenTelemetry's
``opentelemetry.instrumentation`` packages. It is kept to what an integration needs:

- `Integration`: what the registered object provides (``instrument`` / ``uninstrument``).
- `GenAIIntegration`: that object for any instrumentation built on OpenTelemetry's
  ``opentelemetry-util-genai`` (the OpenAI, Anthropic and LangChain ones).
- `CurrentProvider`: the tracer provider to hand an instrumentation, which follows tracesim's
  current configuration and stays quiet when tracing is suppressed.
- `MissingIntegrationError`: raised when an integration, or what it instruments, is not
  installed; the message names the extra to install.
- `captures` and `captured_text`: for an integration that writes content itself (a tool's
  arguments, a framework's messages), whether tracesim records content right now and the text
  it records for a value (bounded like every captured value; redacted on export like the rest).

A distribution registers its integration in its ``pyproject.toml``::

    [project.entry-points."tracesim.integrations"]
    openai = "tracesim_openai:integration"

Example:
    >>> from tracesim.instrumentation import ENTRY_POINT_GROUP, GenAIIntegration, Integration
    >>> def load() -> type:
    ...     from opentelemetry.instrumentation.genai.openai import OpenAIInstrumentor
    ...     return OpenAIInstrumentor
    >>> integration = GenAIIntegration("openai", load)
    >>> isinstance(integration, Integration), ENTRY_POINT_GROUP
    (True, 'tracesim.integrations')
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.util.types import Attributes

from tracesim import _runtime
from tracesim._capture import CaptureOptions, capture_value
from tracesim._config import INTEGRATIONS_GROUP
from tracesim._errors import TracesimError
from tracesim._internal_errors import internal_error
from tracesim._metrics._current import CurrentMeterProvider
from tracesim._own_model_calls import in_model_call

__all__ = [
    "ENTRY_POINT_GROUP",
    "CurrentProvider",
    "GenAIIntegration",
    "Integration",
    "MissingIntegrationError",
    "captured_text",
    "captures",
]

ENTRY_POINT_GROUP = INTEGRATIONS_GROUP
"""The entry-point group integrations register in: the name is the one users write
(``instrument_openai()``, ``instrument=["openai"]``, the extra ``tracesim[openai]``), the
object an `Integration`."""

# What the completion hook receives -> the GenAI attribute it is written to.
_CONTENT_ATTRIBUTES = (
    ("inputs", "gen_ai.input.messages"),
    ("outputs", "gen_ai.output.messages"),
    ("system_instruction", "gen_ai.system_instructions"),
    ("tool_definitions", "gen_ai.tool.definitions"),
)

_DEFAULT_CAPTURE = CaptureOptions()

_SUPPRESS = getattr(otel_context, "_SUPPRESS_INSTRUMENTATION_KEY", "suppress_instrumentation")


class MissingIntegrationError(TracesimError, ImportError):
    """An integration, or what it instruments, is not installed; the message names the extra.

    Example:
        >>> str(MissingIntegrationError("openai"))
        "tracesim's openai integration needs its extra: pip install 'tracesim[openai]'"
    """

    def __init__(self, name: str, conflict: str | None = None) -> None:
        if conflict is None:
            message = f"tracesim's {name} integration needs its extra: pip install 'tracesim[{name}]'"
        else:  # installed, at a version its instrumentation does not support
            message = (
                f"tracesim's {name} integration cannot instrument what is installed ({conflict}): "
                f"install a supported version, e.g. pip install -U 'tracesim[{name}]'"
            )
        super().__init__(message)


@runtime_checkable
class Integration(Protocol):
    """What a distribution registers under `ENTRY_POINT_GROUP`: one switch for one library.

    Example:
        >>> class Nothing:
        ...     def instrument(self, capture: bool | None) -> bool:
        ...         return True
        ...     def uninstrument(self) -> None:
        ...         pass
        >>> isinstance(Nothing(), Integration)
        True
    """

    def instrument(self, capture: bool | None) -> bool:
        """Turn tracing of the library on; False when it was on already.

        ``capture`` overrides tracesim's ``capture`` setting for this library's content (None
        follows it). Raises `MissingIntegrationError` when what it needs is not installed.
        """
        ...

    def uninstrument(self) -> None:
        """Turn tracing of the library off (nothing to do when it was off)."""
        ...


def captures(capture: bool | None = None) -> bool:
    """Whether an integration records content (messages, tool arguments and results) right now.

    True when tracesim is configured, tracing is on and values are captured (``capture=True``,
    the default), unless the integration's own ``capture`` override is False. Read it when the
    content is written, not when the integration is installed: the configuration may change
    (``configure()`` again, ``shutdown()``).

    Example:
        >>> captures()  # tracesim not configured: nothing is recorded
        False
        >>> captures(capture=False)
        False
    """
    if capture is False:
        return False
    runtime = _runtime.current
    return runtime is not None and runtime.enabled and runtime.capture.enabled


def captured_text(value: Any) -> str:
    """``value`` as tracesim records a captured value: a string as itself, anything else as
    JSON (dataclasses as their fields), cut to the configured ``max_value_chars`` with a visible
    marker and never inside a token. Redaction happens on export, for every span alike.

    Example:
        >>> captured_text({"city": "Paris"})
        '{"city":"Paris"}'
        >>> captured_text("sunny")
        'sunny'
    """
    runtime = _runtime.current
    options = runtime.capture if runtime is not None else _DEFAULT_CAPTURE
    return capture_value(value, options).text


class CurrentProvider(otel_trace.TracerProvider):
    """Hands out tracers that start spans with the current tracesim configuration's provider.

    An instrumentation asks for its tracer once, when it is installed; tracesim's configuration
    may change later (``configure()`` again, ``shutdown()``). So each span resolves the provider
    of the configuration current at that moment. It also honours OpenTelemetry's suppression key
    and tracesim's own model-call marker, which some instrumentations ignore: an evaluator's
    request to a model is not the user's traffic.

    Example:
        >>> tracer = CurrentProvider().get_tracer("some.instrumentation")
        >>> tracer.start_span("call").is_recording()  # tracesim not configured: nothing recorded
        False
    """

    def get_tracer(
        self,
        instrumenting_module_name: str,
        instrumenting_library_version: str | None = None,
        schema_url: str | None = None,
        attributes: Attributes | None = None,
    ) -> otel_trace.Tracer:
        """A tracer named like the instrumentation, resolved against tracesim's provider per span."""
        return _CurrentTracer(
            (instrumenting_module_name, instrumenting_library_version, schema_url, attributes)
        )


def _suppressed(context: otel_context.Context | None) -> bool:
    return bool(
        otel_context.get_value(_SUPPRESS, context) or otel_context.get_value(_SUPPRESS)
    ) or in_model_call(context)


class _CurrentTracer(otel_trace.Tracer):
    def __init__(self, identity: tuple[Any, ...]) -> None:
        self._identity = identity
        self._cached: tuple[Any, otel_trace.Tracer] | None = None

    def _tracer(self) -> otel_trace.Tracer:
        runtime = _runtime.current
        provider: Any = runtime.provider if runtime is not None and runtime.enabled else None
        if provider is None:
            return otel_trace.NoOpTracer()
        cached = self._cached
        if cached is None or cached[0] is not provider:
            name, version, schema_url, attributes = self._identity
            cached = (provider, provider.get_tracer(name, version, schema_url, attributes))
            self._cached = cached
        return cached[1]

    def start_span(
        self,
        name: str,
        context: otel_context.Context | None = None,
        kind: otel_trace.SpanKind = otel_trace.SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[otel_trace.Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
    ) -> otel_trace.Span:
        if _suppressed(context):
            return otel_trace.NonRecordingSpan(otel_trace.get_current_span(context).get_span_context())
        return self._tracer().start_span(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception
        )

    @contextlib.contextmanager  # the API types it with a private context manager class
    def start_as_current_span(  # type: ignore[override]
        self,
        name: str,
        context: otel_context.Context | None = None,
        kind: otel_trace.SpanKind = otel_trace.SpanKind.INTERNAL,
        attributes: Attributes = None,
        links: Sequence[otel_trace.Link] | None = None,
        start_time: int | None = None,
        record_exception: bool = True,
        set_status_on_exception: bool = True,
        end_on_exit: bool = True,
    ) -> Iterator[otel_trace.Span]:
        span = self.start_span(
            name, context, kind, attributes, links, start_time, record_exception, set_status_on_exception
        )
        with otel_trace.use_span(
            span,
            end_on_exit=end_on_exit,
            record_exception=record_exception,
            set_status_on_exception=set_status_on_exception,
        ) as current:
            yield current


class GenAIIntegration:
    """An `Integration` for an instrumentation built on ``opentelemetry-util-genai``.

    The OpenTelemetry project's GenAI instrumentations (OpenAI, Anthropic, LangChain) share one
    library, which takes a tracer provider and a *completion hook*. This hands every one of them
    the same two: `CurrentProvider`, so spans follow tracesim's current configuration, and a
    hook that writes the messages (``gen_ai.input.messages``, ``gen_ai.output.messages``,
    ``gen_ai.system_instructions``, ``gen_ai.tool.definitions``) on the span when tracesim
    captures values, bounded like every captured value. Content is set from code, never through
    the instrumentation's environment variable, so ``capture`` means the same everywhere.

    ``name`` is the integration's name (its extra). ``load`` imports and returns the
    instrumentor class, on first use: an ImportError from it becomes `MissingIntegrationError`.
    ``options`` go to the instrumentor's ``instrument()`` as they are. The instrumentor is
    installed at most once.

    Example:
        >>> def load() -> type:
        ...     raise ImportError("not installed")
        >>> example = GenAIIntegration("example", load)
        >>> example.uninstrument()  # off already: nothing to do
        >>> try:
        ...     example.instrument(capture=None)
        ... except MissingIntegrationError as exc:
        ...     print(exc)
        tracesim's example integration needs its extra: pip install 'tracesim[example]'
    """

    def __init__(self, name: str, load: Callable[[], Any], options: Mapping[str, Any] | None = None) -> None:
        self.name = name
        self.capture: bool | None = None  # None: follow tracesim's capture setting
        self._load = load
        self._options = dict(options or {})
        self._lock = threading.Lock()
        self._instrumentor: Any = None

    @property
    def instrumented(self) -> bool:
        """Whether the instrumentation is on.

        Example:
            >>> GenAIIntegration("example", lambda: None).instrumented
            False
        """
        return self._instrumentor is not None

    def instrument(self, capture: bool | None) -> bool:
        """Turn the instrumentation on (False if it already was); ``capture`` applies either way.

        Raises:
            MissingIntegrationError: ``load`` raised ImportError, or the instrumented library is
                installed at a version the instrumentation does not support.
        """
        with self._lock:
            self.capture = capture
            if self._instrumentor is not None:
                return False
            try:
                instrumentor = self._load()()
            except ImportError:
                raise MissingIntegrationError(self.name) from None
            # present whenever an instrumentor loaded (every instrumentation depends on it)
            from opentelemetry.instrumentation.dependencies import DependencyConflictError

            hook = _Content(self)
            try:  # a version conflict would otherwise only be logged, and nothing instrumented
                with _content_switch_unset():
                    instrumentor.instrument(
                        tracer_provider=CurrentProvider(),
                        # the GenAI client metrics (token usage, duration) go to tracesim's metrics
                        meter_provider=CurrentMeterProvider(),
                        completion_hook=hook,
                        raise_exception_on_conflict=True,
                        **self._options,
                    )
            except DependencyConflictError as exc:
                raise MissingIntegrationError(self.name, str(exc.conflict)) from None
            self._instrumentor = instrumentor
            _record_tool_content()
            return True

    def uninstrument(self) -> None:
        """Turn the instrumentation off; calls made afterwards are not traced."""
        with self._lock:
            if self._instrumentor is not None:
                self._instrumentor.uninstrument()
                self._instrumentor = None


# util-genai's own content switch: its handler reads it once, when an instrumentor makes it.
_CONTENT_SWITCH = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_environment_lock = threading.Lock()


@contextlib.contextmanager
def _content_switch_unset() -> Iterator[None]:
    """util-genai's environment variable hidden while an instrumentor is installed.

    With it set (``SPAN_ONLY``...), util-genai writes the messages on spans (whole, whatever
    tracesim's ``capture`` says) and as log events itself; tracesim's hook writes them, bounded,
    when tracesim captures. Its handler reads the variable once, when the instrumentor makes it,
    so the variable is hidden for that moment and put back after.
    """
    with _environment_lock:
        saved = os.environ.pop(_CONTENT_SWITCH, None)
        try:
            yield
        finally:
            if saved is not None:
                os.environ[_CONTENT_SWITCH] = saved


class _Content:
    """The completion hook: writes the messages on the span when tracesim captures content."""

    def __init__(self, integration: GenAIIntegration) -> None:
        self._integration = integration

    def on_completion(self, *, span: Any = None, **content: Any) -> None:
        try:
            self._write(span, content)
        except Exception:  # the instrumentation would only log it on its own logger, every call
            internal_error(f"{self._integration.name} integration content")

    def _write(self, span: Any, content: Mapping[str, Any]) -> None:
        runtime = _runtime.current
        if span is None or runtime is None or not span.is_recording():
            return
        if not runtime.capture.enabled or self._integration.capture is False:
            return
        for key, attribute in _CONTENT_ATTRIBUTES:
            value = content.get(key)
            if value:
                text = capture_value(value, runtime.capture).text  # dataclasses as their fields
                span.set_attribute(attribute, text)


_TOOL_CONTENT = (("gen_ai.tool.call.arguments", "arguments"), ("gen_ai.tool.call.result", "tool_result"))
_tool_content_lock = threading.Lock()


def _record_tool_content() -> None:
    """Have util-genai's tool calls record their arguments and result when tracesim captures.

    util-genai collects them (it has tracesim's completion hook) but writes them on the span only
    when its environment variable says so, and never hands them to the hook: so LangChain's
    (and LangGraph's) ``execute_tool`` spans had neither. Its ``ToolInvocation._apply_finish``
    (private; ``opentelemetry-util-genai`` is pinned exactly by every integration) is wrapped
    once, process-wide: after it, the two values are written as captured values are, bounded,
    for invocations made by a tracesim integration whose ``capture`` is not off.
    """
    try:
        from opentelemetry.util.genai._tool_invocation import ToolInvocation
    except ImportError:  # another util-genai layout: tool spans keep what the instrumentation wrote
        return
    with _tool_content_lock:
        original = ToolInvocation._apply_finish
        if getattr(original, "_tracesim", False):
            return

        def _apply_finish(invocation: Any, error: Any = None) -> None:
            original(invocation, error)
            try:
                _write_tool_content(invocation)
            except Exception:
                internal_error("tool call content")

        _apply_finish._tracesim = True  # type: ignore[attr-defined]
        ToolInvocation._apply_finish = _apply_finish  # type: ignore[method-assign,assignment]


def _write_tool_content(invocation: Any) -> None:
    hook = getattr(invocation, "_completion_hook", None)
    hook = getattr(hook, "_wrapped", hook)  # util-genai wraps the hook it is given
    runtime = _runtime.current
    span = getattr(invocation, "span", None)
    if not isinstance(hook, _Content) or hook._integration.capture is False:
        return  # not made by one of tracesim's integrations, or its capture is off
    if runtime is None or not runtime.capture.enabled or span is None or not span.is_recording():
        return
    for attribute, field in _TOOL_CONTENT:
        value = getattr(invocation, field, None)
        if value is not None:
            span.set_attribute(attribute, capture_value(value, runtime.capture).text)
