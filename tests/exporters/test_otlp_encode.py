"""tracesim's OTLP encoder writes the message OpenTelemetry's encoder builds, for any span.

Every comparison parses tracesim's bytes with the real OTLP protobuf classes and compares the
message with ``encode_spans`` (the official exporter's encoder) on the same spans: random spans
(hypothesis), spans from a real ``TracerProvider``, and the bodies a loopback collector receives
from the OTLP/HTTP exporter `otlp_exporter` builds.
"""

from __future__ import annotations

import logging
import math
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from _real_spans import edge_spans, limited_provider
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.exporter.otlp.proto.common._internal.trace_encoder import encode_spans
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState
from otlp_sink import OtlpSink

from tracesim.exporters import otlp_exporter
from tracesim.exporters._otlp_encode import Unsupported, encode_or_fallback, encode_request

RunPython = Callable[..., "subprocess.CompletedProcess[str]"]
INT64 = st.integers(min_value=-(2**63), max_value=2**63 - 1)
INT_EDGES = [0, 1, -1, 127, 128, -128, 2**31 - 1, -(2**31), 2**32, 2**63 - 1, -(2**63)]
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
TEXT = st.text(max_size=300)  # hypothesis's text has no lone surrogates: valid UTF-8
KEYS = st.text(min_size=1, max_size=20)
SCALARS: Any = st.one_of(
    TEXT, st.booleans(), INT64, st.sampled_from(INT_EDGES), FLOATS, st.binary(max_size=40)
)
# What the OpenTelemetry API allows (scalars and homogeneous sequences), and what the encoder
# also takes from spans made by hand: None, mappings, mixed and nested sequences.
API_VALUES = st.one_of(
    SCALARS,
    st.lists(TEXT, max_size=5),
    st.lists(st.booleans(), max_size=5),
    st.lists(INT64, max_size=5),
    st.lists(FLOATS, max_size=5),
    st.lists(st.binary(max_size=10), max_size=5).map(tuple),
)
VALUES = st.recursive(
    st.one_of(API_VALUES, st.none()),
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(KEYS, inner, max_size=4)),
    max_leaves=8,
)
ATTRIBUTES = st.dictionaries(KEYS, VALUES, max_size=6)
IDS_128, IDS_64 = st.integers(1, 2**128 - 1), st.integers(1, 2**64 - 1)
TIMES = st.one_of(st.none(), st.integers(0, 2**64 - 1))
STATES = st.lists(  # keys and values the W3C format takes (TraceState drops others)
    st.tuples(
        st.from_regex(r"[a-z][a-z0-9_*/]{0,8}", fullmatch=True),
        st.from_regex(r"[!-+.-<>-~]{1,8}", fullmatch=True),
    ),
    max_size=3,
    unique_by=lambda kv: kv[0],
).map(TraceState)


def contexts(remote: bool | None = None) -> st.SearchStrategy[SpanContext]:
    flags = st.sampled_from([TraceFlags(TraceFlags.DEFAULT), TraceFlags(TraceFlags.SAMPLED)])
    is_remote = st.booleans() if remote is None else st.just(remote)
    return st.builds(SpanContext, IDS_128, IDS_64, is_remote, flags, STATES)


RESOURCES = st.builds(
    Resource, st.dictionaries(KEYS, API_VALUES, max_size=4), st.one_of(st.none(), st.just(""), TEXT)
)
SCOPES = st.one_of(
    st.none(),
    st.builds(
        InstrumentationScope,
        TEXT,
        st.one_of(st.none(), TEXT),
        st.one_of(st.none(), TEXT),
        st.one_of(st.none(), st.dictionaries(KEYS, API_VALUES, max_size=3)),
    ),
)
EVENTS = st.builds(Event, TEXT, ATTRIBUTES, st.integers(0, 2**64 - 1))
LINKS = st.builds(Link, contexts(), st.one_of(st.none(), ATTRIBUTES))
STATUSES = st.one_of(  # a description goes with an error only (Status warns otherwise)
    st.none(),
    st.builds(Status, st.sampled_from([StatusCode.UNSET, StatusCode.OK])),
    st.builds(Status, st.just(StatusCode.ERROR), st.one_of(st.none(), TEXT)),
)


@st.composite
def batches(draw: st.DrawFn) -> list[ReadableSpan]:
    """Spans of a few resources and scopes, some equal but distinct objects (grouped as equal)."""
    resources = draw(st.lists(RESOURCES, min_size=1, max_size=3))
    resources += [Resource(dict(r.attributes), r.schema_url) for r in resources[:1]]  # equal, not the same
    scopes = draw(st.lists(SCOPES, min_size=1, max_size=3))
    spans = []
    for _ in range(draw(st.integers(1, 5))):
        spans.append(
            ReadableSpan(
                name=draw(TEXT),
                context=draw(contexts(remote=False)),
                parent=draw(st.one_of(st.none(), contexts())),
                resource=draw(st.sampled_from(resources)),
                attributes=draw(ATTRIBUTES),
                events=draw(st.lists(EVENTS, max_size=2)),
                links=draw(st.lists(LINKS, max_size=2)),
                kind=draw(st.sampled_from(list(SpanKind))),
                instrumentation_scope=draw(st.sampled_from(scopes)),
                status=draw(STATUSES),
                start_time=draw(TIMES),
                end_time=draw(TIMES),
            )
        )
    return spans


def assert_same_message(spans: Sequence[ReadableSpan], body: bytes) -> None:
    """``body`` parses to the message of OpenTelemetry's encoder (NaN compared by its bytes)."""
    ours = ExportTraceServiceRequest.FromString(body)
    official = encode_spans(spans)
    assert ours.SerializeToString(deterministic=True) == official.SerializeToString(deterministic=True)
    if "nan" not in str(official):
        assert ours == official
    assert body == official.SerializeToString()  # field order too: the same bytes on the wire


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
@example([])
def test_random_spans_encode_to_the_official_message(spans: list[ReadableSpan]) -> None:
    assert_same_message(spans, encode_request(spans))


@settings(max_examples=300, deadline=None)
@given(VALUES)
@example(float("nan"))
@example(-0.0)
@example(math.inf)
@example("")
@example([])
@example(b"")
@example(None)
@example({"nested": {"deeper": [1, "two", None, [3.5]]}})
@example("é中🙂" * 50)
@example(2**63 - 1)
@example(-(2**63))
@example(bytearray(b"ab"))  # a mutable sequence to both encoders: an array of ints
def test_every_value_type_encodes_as_the_official_encoder(value: Any) -> None:
    span = ReadableSpan(name="v", context=SpanContext(1, 2, False), attributes={"key": value})
    assert_same_message([span], encode_request([span]))


def test_repeated_values_are_encoded_as_themselves_from_the_kept_pairs() -> None:
    # Short strings and booleans are kept encoded, by field, key and value: True and 1 are equal
    # with the same hash, "1" is not 1, an event's attribute is not a span's, one value under two
    # keys is two attributes.
    values: list[Any] = [True, 1, 1.0, "1", False, 0, 0.0, "", "True", -0.0, 2, True]
    for _ in range(2):  # the second round from what the first kept
        for value in values:
            span = ReadableSpan(
                name="v",
                context=SpanContext(1, 2, False),
                attributes={"key": value, "label": "pass", "other": value, "verdict": "pass"},
                events=[Event("e", {"key": value, "label": "pass", "verdict": "pass"}, 5)],
            )
            assert_same_message([span], encode_request([span]))


def test_the_kept_pairs_are_bounded() -> None:
    from tracesim.exporters import _otlp_encode

    span = ReadableSpan(name="v", context=SpanContext(1, 2, False), attributes={})
    for i in range(_otlp_encode._PAIRS_KEPT + 10):
        span = ReadableSpan(name="v", context=SpanContext(1, 2, False), attributes={"id": f"user-{i}"})
        encode_request([span])
        assert len(_otlp_encode._pairs) <= _otlp_encode._PAIRS_KEPT
    assert_same_message([span], encode_request([span]))
    long = "x" * (_otlp_encode._PAIR_CHARS + 1)  # not kept: inputs and outputs seldom repeat
    encode_request([ReadableSpan(name="v", context=SpanContext(1, 2, False), attributes={"input": long})])
    assert not any(entry[2] == long for entry in _otlp_encode._pairs)


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    yield from limited_provider()


def test_spans_of_a_real_provider_encode_to_the_official_message(
    provider: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    spans = edge_spans(*provider)
    root_span = spans[1]
    assert (root_span.dropped_attributes, root_span.dropped_events, root_span.dropped_links) == (2, 1, 1)
    assert_same_message(spans, encode_request(spans))
    flags = ExportTraceServiceRequest.FromString(encode_request(spans)).resource_spans[0].scope_spans
    assert [s.flags for ss in flags for s in ss.spans] == [0x100, 0x300]  # child: parent local; root: remote


@pytest.mark.parametrize(
    ("value", "why"),
    [
        pytest.param(2**63, "beyond 64 bits", id="int-too-large"),
        pytest.param([-(2**64)], "beyond 64 bits", id="int-too-small-in-a-list"),
        pytest.param(object(), "of type object", id="unknown-type"),
        pytest.param("\ud800", "surrogates not allowed", id="lone-surrogate"),
    ],
)
def test_a_value_it_does_not_write_goes_to_the_official_encoder(
    value: object, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    good = ReadableSpan(name="kept", context=SpanContext(1, 2, False), attributes={"ok": "yes"})
    odd = ReadableSpan(name="odd", context=SpanContext(1, 3, False), attributes={"odd": value, "ok": 1})
    with pytest.raises((Unsupported, UnicodeEncodeError), match=why):
        encode_request([good, odd])
    with caplog.at_level(logging.CRITICAL, "opentelemetry"):  # its "Failed to encode key" trace-back
        body = encode_or_fallback([good, odd])
        assert body == encode_spans([good, odd]).SerializePartialToString()
    parsed = ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans
    assert [s.name for s in parsed] == ["kept", "odd"]
    assert [kv.key for kv in parsed[1].attributes] == ["ok"]  # only the odd value is dropped, as always


def test_the_fallback_is_said_once_per_process(run_python: RunPython, tmp_path: Path) -> None:
    done = run_python(
        """
import logging
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext
from tracesim.exporters._otlp_encode import encode_or_fallback
logging.basicConfig(format="%(name)s|%(message)s", level=logging.INFO)
logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
for value in (2**64, object(), 2**64):
    span = ReadableSpan(name="odd", context=SpanContext(1, 2, False), attributes={"odd": value})
    encode_or_fallback([span])
""",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("tracesim|")]
    assert said == [
        "tracesim|tracesim: a span holds a value tracesim's OTLP encoder does not write (an int beyond 64 "
        "bits); its batch is encoded by OpenTelemetry's encoder, which drops such an attribute (said once)"
    ]


def test_the_exporter_sends_what_the_official_encoder_would(
    sink: OtlpSink, provider: tuple[TracerProvider, InMemorySpanExporter], caplog: pytest.LogCaptureFixture
) -> None:
    made, memory = provider
    tracer = made.get_tracer("lib")
    for i in range(3):
        with tracer.start_as_current_span(f"call-{i}", attributes={"input.value": "q" * (100 * i), "n": i}):
            pass
    spans = memory.get_finished_spans()
    odd = ReadableSpan(name="odd", context=SpanContext(1, 3, False), attributes={"big": 2**70, "n": 1})
    exporter = otlp_exporter(endpoint=sink.url)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
        with caplog.at_level(logging.CRITICAL, "opentelemetry"):
            assert exporter.export([odd]) is SpanExportResult.SUCCESS  # through the official encoder
    finally:
        exporter.shutdown()
    assert sink.bodies == [
        encode_spans(spans).SerializePartialToString(),
        encode_spans([odd]).SerializePartialToString(),
    ]
    assert sink.delivered_names == ["call-0", "call-1", "call-2", "odd"]


def test_a_batch_neither_encoder_writes_fails_as_the_official_exporter_fails_it(
    sink: OtlpSink, caplog: pytest.LogCaptureFixture
) -> None:
    broken = ReadableSpan(name="broken", context=SpanContext(2**129, 3, False))  # a trace id of 129 bits
    assert encode_or_fallback([broken]) is None
    exporter = otlp_exporter(endpoint=sink.url)
    try:
        assert exporter.export([broken]) is SpanExportResult.FAILURE
    finally:
        exporter.shutdown()
    assert sink.bodies == []
    assert any("Failed to encode span batch" in r.getMessage() for r in caplog.records)
