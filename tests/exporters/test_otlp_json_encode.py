"""tracesim's OTLP/JSON line encoder writes the bytes of OpenTelemetry's JSON encoder, for any span.

Every comparison is with `official_line` (``encode_spans(spans).to_dict()`` of the official
``opentelemetry-exporter-otlp-json-common`` package, then ``json.dumps``) on the same spans:
random spans and values (hypothesis), spans of a real ``TracerProvider``, tracesim's own scored
spans with their result events, and the lines a `JsonlExporter` appends to a real file.
"""

from __future__ import annotations

import logging
import math
import subprocess
from collections import OrderedDict
from collections.abc import Callable, Iterator
from enum import IntEnum
from pathlib import Path
from typing import Any

import pytest
from _real_spans import edge_spans, limited_provider
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

import tracesim
from tracesim.evaluators import Bleu, Levenshtein, Rouge
from tracesim.exporters import JsonlExporter
from tracesim.exporters._jsonl import encode_line
from tracesim.exporters._otlp_json_encode import (
    Unsupported,
    encode_json_line,
    encode_or_fallback,
    official_line,
)
from tracesim.testing import capture_spans

RunPython = Callable[..., "subprocess.CompletedProcess[str]"]
INTS = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.integers(),  # the JSON encoder writes any int as text, 64 bits or not
    st.sampled_from([0, 1, -1, 2**63 - 1, -(2**63), 2**64, -(2**70)]),
)
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
TEXT = st.text(max_size=200)
ODD_TEXT = st.text(st.characters(codec=None, categories=None), max_size=20)  # lone surrogates, controls
KEYS = st.one_of(st.text(max_size=20), st.just(""))  # an empty key is left out of its KeyValue
SCALARS: Any = st.one_of(TEXT, ODD_TEXT, st.booleans(), INTS, FLOATS, st.binary(max_size=40), st.none())
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.lists(inner, max_size=4).map(tuple),
        st.dictionaries(KEYS, inner, max_size=4),
    ),
    max_leaves=8,
)
ATTRIBUTES = st.dictionaries(KEYS, VALUES, max_size=6)
API_VALUES = st.one_of(
    TEXT,
    st.booleans(),
    INTS,
    FLOATS,
    st.lists(TEXT, max_size=3).map(tuple),
    st.lists(FLOATS, max_size=3).map(tuple),
)
IDS_128, IDS_64 = st.integers(0, 2**128 - 1), st.integers(0, 2**64 - 1)
TIMES = st.one_of(st.none(), st.just(0), st.integers(0, 2**64 - 1))
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
    return st.builds(SpanContext, IDS_128, IDS_64, is_remote, flags, st.one_of(st.none(), STATES))


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
EVENTS = st.builds(
    Event, TEXT, st.one_of(st.none(), ATTRIBUTES), st.one_of(st.none(), st.integers(0, 2**64 - 1))
)
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
                name=draw(st.one_of(TEXT, ODD_TEXT)),
                context=draw(contexts(remote=False)),
                parent=draw(st.one_of(st.none(), contexts())),
                resource=draw(st.sampled_from(resources)),
                attributes=draw(ATTRIBUTES),
                events=draw(st.lists(EVENTS, max_size=2)),
                links=draw(st.lists(LINKS, max_size=2)),
                kind=draw(st.sampled_from(list(SpanKind))),
                instrumentation_scope=draw(st.sampled_from(scopes)),
                status=draw(STATUSES),  # type: ignore[arg-type]  # None: no status, as the encoder takes it
                start_time=draw(TIMES),
                end_time=draw(TIMES),
            )
        )
    return spans


def assert_same_line(spans: Any) -> None:
    ours = encode_json_line(spans)
    assert ours == official_line(spans)
    assert encode_line(spans) == ours  # what the trace file writes


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches())
@example([])
def test_random_spans_encode_to_the_official_line(spans: list[ReadableSpan]) -> None:
    assert_same_line(spans)


@settings(max_examples=400, deadline=None)
@given(VALUES)
@example(float("nan"))
@example(-0.0)
@example(math.inf)
@example(-math.inf)
@example(1e300)
@example(5e-324)
@example("")
@example([])
@example(())
@example({})
@example(b"")
@example(None)
@example({"": 1, "nested": {"deeper": [1, "two", None, [3.5]]}})
@example('é中🙂\x00"\\\n' * 50)
@example("\ud800")
@example(2**63 - 1)
@example(-(2**63))
@example(10**100)
def test_every_value_type_encodes_as_the_official_encoder(value: Any) -> None:
    span = ReadableSpan(name="v", context=SpanContext(1, 2, False), attributes={"key": value})
    event = Event("e", {"in.event": value}, timestamp=5)
    link = Link(SpanContext(3, 4, True), {"in.link": value})
    assert_same_line(
        [span, ReadableSpan(name="w", context=SpanContext(1, 3, False), events=[event], links=[link])]
    )


@pytest.fixture
def provider() -> Iterator[tuple[TracerProvider, InMemorySpanExporter]]:
    yield from limited_provider()


def test_spans_of_a_real_provider_encode_to_the_official_line(
    provider: tuple[TracerProvider, InMemorySpanExporter],
) -> None:
    spans = edge_spans(*provider)
    assert (spans[1].dropped_attributes, spans[1].dropped_events, spans[1].dropped_links) == (2, 1, 1)
    line = encode_json_line(spans)
    assert line == official_line(spans)
    for field in (
        b'"droppedAttributesCount":2',
        b'"droppedEventsCount":1',
        b'"droppedLinksCount":1',
        b'"traceState":"vendor=v1,other=x"',
        b'"flags":768',
        b'"schemaUrl":"https://scope/1"',
    ):
        assert field in line


def test_tracesim_scored_spans_encode_to_the_official_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NLTK_DATA", "/work/shared/nltk_data")

    @tracesim.trace(
        kind="llm", evaluators=[Levenshtein(), Rouge(), Bleu()], expected="the cat sat on the mat"
    )
    def answer(question: str) -> str:
        return "the cat sat on a mat"

    with capture_spans() as captured:
        for i in range(3):
            answer(f"where did the cat sit? {i}")
    spans = captured.otel_spans
    assert len(spans) == 3
    assert all(len(span.events) == 3 for span in spans)  # one result event per evaluator
    assert_same_line(spans)
    assert_same_line(spans[:1])


def test_the_trace_file_holds_the_official_lines(
    tmp_path: Path, provider: tuple[TracerProvider, InMemorySpanExporter]
) -> None:
    made, memory = provider
    for i in range(4):
        with made.get_tracer("lib").start_as_current_span(f"call-{i}", attributes={"i": i, "x": 0.5 * i}):
            pass
    spans = memory.get_finished_spans()
    exporter = JsonlExporter(tmp_path / "traces.jsonl")
    try:
        assert exporter.export(spans[:1]) is SpanExportResult.SUCCESS
        assert exporter.export(spans[1:]) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert (tmp_path / "traces.jsonl").read_bytes() == official_line(spans[:1]) + official_line(spans[1:])


class Level(IntEnum):
    HIGH = 3


class Text(str):
    pass


@pytest.mark.parametrize(
    ("value", "why"),
    [
        pytest.param(Level.HIGH, "of type Level", id="int-subclass"),
        pytest.param(Text("t"), "of type Text", id="str-subclass"),
        pytest.param(bytearray(b"ab"), "of type bytearray", id="bytearray"),
        pytest.param(OrderedDict(a=1), "of type OrderedDict", id="mapping-subclass"),
        pytest.param([object()], "of type object", id="unknown-type-in-a-list"),
        pytest.param({1: "int key"}, "key of type int", id="non-str-key"),
    ],
)
def test_a_value_it_does_not_write_goes_to_the_official_encoder(
    value: Any, why: str, caplog: pytest.LogCaptureFixture
) -> None:
    good = ReadableSpan(name="kept", context=SpanContext(1, 2, False), attributes={"ok": "yes"})
    odd = ReadableSpan(name="odd", context=SpanContext(1, 3, False), attributes={"odd": value, "ok": 1})
    with pytest.raises(Unsupported, match=why):
        encode_json_line([good, odd])
    with caplog.at_level(logging.CRITICAL, "opentelemetry"):  # its "Failed to encode key" trace-back
        assert encode_or_fallback([good, odd]) == official_line([good, odd])
        assert encode_line([good, odd]) == official_line([good, odd])


def test_a_batch_neither_encoder_writes_raises_as_before() -> None:
    broken = ReadableSpan(name="broken", context=SpanContext(2**129, 3, False))  # a trace id of 129 bits
    with pytest.raises(OverflowError):
        official_line([broken])
    with pytest.raises(OverflowError):
        encode_or_fallback([broken])


def test_the_fallback_is_said_once_per_process(run_python: RunPython, tmp_path: Path) -> None:
    done = run_python(
        """
import logging
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanContext
from tracesim.exporters._otlp_json_encode import encode_or_fallback
logging.basicConfig(format="%(name)s|%(message)s", level=logging.INFO)
logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
for value in (bytearray(b"secret"), object(), bytearray(b"secret")):
    span = ReadableSpan(name="odd", context=SpanContext(1, 2, False), attributes={"odd": value})
    encode_or_fallback([span])
""",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if line.startswith("tracesim|")]
    assert said == [
        "tracesim|tracesim: a span holds a value tracesim's OTLP/JSON encoder does not write (a value of "
        "type bytearray); its batch is encoded by OpenTelemetry's encoder (said once)"
    ]
    assert "secret" not in done.stderr


@pytest.mark.parametrize(
    ("fields", "why"),
    [
        pytest.param({"context": None}, "without a span context", id="no-context"),
        pytest.param({"name": 5}, "name of type int", id="int-name"),
        pytest.param({"start_time": 1.5}, "time of type float", id="float-time"),
    ],
)
def test_an_odd_span_goes_to_the_official_encoder(fields: dict[str, Any], why: str) -> None:
    made: dict[str, Any] = {"name": "odd", "context": SpanContext(1, 3, False), **fields}
    odd = ReadableSpan(**made)
    with pytest.raises(Unsupported, match=why):
        encode_json_line([odd])
    assert encode_line([odd]) == official_line([odd])
