"""The tracer provider integrations are given: tracesim's current one, and quiet when suppressed.

An instrumentation asks for its tracer once, when it is installed; tracesim's configuration
may change later (``configure()`` again, ``shutdown()``). So the tracer handed over resolves
the provider of the current configuration at each span. It also honours OpenTelemetry's
suppression key and tracesim's own model-call marker, which some instrumentations ignore: an
evaluator's request to a model is not the user's traffic.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel_trace
from opentelemetry.util.types import Attributes

from tracesim import _runtime
from tracesim._untraced import in_model_call

__all__ = ["CurrentProvider"]

_SUPPRESS = getattr(otel_context, "_SUPPRESS_INSTRUMENTATION_KEY", "suppress_instrumentation")


def _suppressed(context: otel_context.Context | None) -> bool:
    return bool(
        otel_context.get_value(_SUPPRESS, context) or otel_context.get_value(_SUPPRESS)
    ) or in_model_call(context)


class CurrentProvider(otel_trace.TracerProvider):
    """Hands out tracers that start spans with the current tracesim configuration's provider.

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
        return _CurrentTracer(
            (instrumenting_module_name, instrumenting_library_version, schema_url, attributes)
        )


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
