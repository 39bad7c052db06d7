"""Spans from a real provider with limits, for the encoders' tests: a remote parent with trace
state, a scope with a version, schema and attributes, attributes, events and links over their
limits, an error status, an exception event, a 5,000-character non-ASCII value."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState


def limited_provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    """A provider with small limits and the exporter that keeps its spans (a fixture's body)."""
    memory = InMemorySpanExporter()
    limits = SpanLimits(max_span_attributes=4, max_events=2, max_links=1, max_event_attributes=1)
    made = TracerProvider(
        resource=Resource.create({"service.name": "encode-test"}, "https://schema/1"), span_limits=limits
    )
    made.add_span_processor(SimpleSpanProcessor(memory))
    yield made, memory
    made.shutdown()


def edge_spans(made: TracerProvider, memory: InMemorySpanExporter) -> Sequence[ReadableSpan]:
    """A client child and its server root (in that order), the root over every limit."""
    remote = SpanContext(
        0xABC,
        0xDEF,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=TraceState([("vendor", "v1"), ("other", "x")]),
    )
    tracer = made.get_tracer("lib", "1.2", schema_url="https://scope/1", attributes={"scope.attr": [1, 2]})
    links = [Link(remote, {"why": "retry"}), Link(SpanContext(7, 8, is_remote=False))]  # one over the limit
    with tracer.start_as_current_span(
        "server", trace.set_span_in_context(trace.NonRecordingSpan(remote)), SpanKind.SERVER, links=links
    ) as root:
        for i in range(6):  # 2 over the limit: dropped_attributes_count 2
            root.set_attribute(f"a{i}", [f"x{i}", "y"] if i % 2 else i - 3)
        for i in range(3):  # 1 over the limit; the second attribute of each is dropped
            root.add_event(f"e{i}", {"n": i, "m": 2.5})
        root.set_status(Status(StatusCode.ERROR, "it broke"))
        with made.get_tracer("other").start_as_current_span("child", kind=SpanKind.CLIENT) as child:
            child.set_attribute("payload", "é" * 5000)  # lengths over two varint bytes
            child.record_exception(ValueError("boom"))
    return memory.get_finished_spans()
