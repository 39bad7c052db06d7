"""OTLP/JSON back to SDK spans and to protobuf: exact round trips through the official encoders."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans as encode_json
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans as encode_protobuf
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanLimits, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, TraceFlags, TraceState

from tracesim.tracefile._sdk_spans import readable_spans, request_to_protobuf


@pytest.fixture
def spans() -> list[ReadableSpan]:
    memory = InMemorySpanExporter()
    provider = TracerProvider(
        resource=Resource.create({"service.name": "decode", "n": 3}),
        span_limits=SpanLimits(max_attributes=6, max_events=2),
    )
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("scope", "1.2", schema_url="https://schema", attributes={"scope.attr": 1})
    remote = SpanContext(
        0xABC, 0x55, is_remote=True, trace_flags=TraceFlags(1), trace_state=TraceState([("k", "v")])
    )
    parent = trace.set_span_in_context(NonRecordingSpan(remote))
    with tracer.start_as_current_span("root", context=parent, kind=trace.SpanKind.SERVER) as root:
        root.set_attributes({"s": "é", "i": 2**40, "f": 0.25, "b": True, "l": ["a", "b"], "li": [1, 2]})
        root.set_attribute("bytes", b"\x00\xff")
        root.set_attribute("nan", float("nan"))  # over the limit: counted as dropped
        root.add_event("gen_ai.evaluation.result", {"gen_ai.evaluation.score.value": 0.5})
        root.add_event("e2")
        root.add_event("e3")  # over the limit
        with tracer.start_as_current_span("child", links=[Link(remote, {"why": "retry"})]) as child:
            child.set_status(trace.StatusCode.ERROR, "boom")
            child.record_exception(ValueError("bad"))
    provider.shutdown()
    return list(memory.get_finished_spans())


def _dumps(request: Any) -> str:
    return json.dumps(request, sort_keys=True)


def test_json_to_readable_spans_round_trips_exactly(spans: list[ReadableSpan]) -> None:
    request = encode_json(spans).to_dict()
    rebuilt = readable_spans(json.loads(json.dumps(request)))  # as read from a file
    assert _dumps(encode_json(rebuilt).to_dict()) == _dumps(request)
    root = next(s for s in rebuilt if s.name == "root")
    assert root.parent is not None
    assert root.parent.is_remote
    assert root.dropped_attributes == 2
    assert root.dropped_events == 1
    assert root.kind is trace.SpanKind.SERVER


def test_json_to_protobuf_is_what_the_protobuf_exporter_sends(spans: list[ReadableSpan]) -> None:
    request = json.loads(json.dumps(encode_json(spans).to_dict()))
    assert request_to_protobuf(request) == encode_protobuf(spans).SerializeToString()


def test_not_otlp_json_raises() -> None:
    with pytest.raises(ValueError, match="name"):
        request_to_protobuf({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 3, "bogus": 1}]}]}]})
    with pytest.raises(ValueError, match="traceId"):
        readable_spans({"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "no ids"}]}]}]})
