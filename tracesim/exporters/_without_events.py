"""Spans without their ``gen_ai.evaluation.result`` events, for ``evaluation_span_events=false``.

A backend that reads evaluation results from log records would show each result twice if the
span carried it as an event too. The switch applies on the way to such backends (OTLP, an
exporter object): the local trace file and the console keep the events, because ``tracesim
show``, ``report`` and ``replay`` read results from them.
"""

from __future__ import annotations

from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracesim import _semconv as sc
from tracesim.exporters._redacting import copy_span

__all__ = ["WithoutEvaluationEvents"]


class WithoutEvaluationEvents(SpanExporter):
    """Hand ``exporter`` every span with its evaluation-result events left out.

    The flat ``tracesim.eval.<name>.*`` attributes stay; spans without such events pass as
    they are (no copy).

    Example:
        >>> from opentelemetry.sdk.trace import TracerProvider
        >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        >>> memory = InMemorySpanExporter()
        >>> provider = TracerProvider()
        >>> provider.add_span_processor(SimpleSpanProcessor(WithoutEvaluationEvents(memory)))
        >>> with provider.get_tracer("t").start_as_current_span("answer") as span:
        ...     span.add_event("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "rouge"})
        ...     span.add_event("retry")
        >>> [event.name for event in memory.get_finished_spans()[0].events]
        ['retry']
    """

    def __init__(self, exporter: SpanExporter) -> None:
        self.exporter = exporter

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        return self.exporter.export([_without(span) for span in spans])

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.exporter.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.exporter.shutdown()


def _without(span: ReadableSpan) -> ReadableSpan:
    events = span.events
    if not any(event.name == sc.EVALUATION_EVENT for event in events):
        return span
    return copy_span(span, events=[event for event in events if event.name != sc.EVALUATION_EVENT])
