"""The result event goes on the span with its attributes as the plain dict `render` made: the same
event OpenTelemetry's ``add_event`` makes, without the garbage collector tracking its
attributes; spans whose limits would cut them, and spans of other SDKs, get ``add_event``."""

from __future__ import annotations

import gc
import logging
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import SpanLimits, TracerProvider
from opentelemetry.trace import NonRecordingSpan, SpanContext

from tracesim._capture import CaptureOptions
from tracesim._scoring._results import add_result_event, write
from tracesim.evaluators import EvalResult

_RESULT = EvalResult(
    name="rouge",
    score=0.93,
    label="pass",
    passed=True,
    threshold=0.5,
    details={"rouge1": 0.9},
    explanation="close to the reference",
    duration_s=0.0003,
)


@pytest.fixture
def provider() -> Iterator[TracerProvider]:
    made = TracerProvider()
    yield made
    made.shutdown()


def test_the_event_is_the_one_add_event_makes_with_an_untracked_dict(provider: TracerProvider) -> None:
    tracer = provider.get_tracer("t")
    ours, public = tracer.start_span("ours"), tracer.start_span("public")
    write(ours, _RESULT, CaptureOptions(), 1234, annotator_kind="CODE")
    event = ours.events[0]
    public.add_event(event.name, dict(event.attributes or {}), timestamp=1234)
    theirs = public.events[0]
    assert (event.name, dict(event.attributes or {}), event.timestamp) == (
        theirs.name,
        dict(theirs.attributes or {}),
        theirs.timestamp,
    )
    assert event.attributes["gen_ai.evaluation.score.value"] == 0.93  # type: ignore[index]
    assert event.dropped_attributes == theirs.dropped_attributes == 0
    assert type(event.attributes) is dict
    assert not gc.is_tracked(event.attributes)  # strings, numbers and booleans only
    assert gc.is_tracked(theirs.attributes)
    assert ours.attributes["tracesim.eval.rouge.score"] == 0.93  # type: ignore[index]


def test_a_length_limit_gets_the_public_path_and_its_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    limited = TracerProvider(span_limits=SpanLimits(max_attribute_length=5))
    try:
        span = limited.get_tracer("t").start_span("answer")
        write(span, _RESULT, CaptureOptions(), None)
        attributes = span.events[0].attributes or {}
        assert attributes["gen_ai.evaluation.explanation"] == "close"  # cut by the SDK, as configured
        assert type(attributes) is not dict
    finally:
        limited.shutdown()


def test_an_event_attribute_count_below_ours_gets_the_public_path() -> None:
    limited = TracerProvider(span_limits=SpanLimits(max_event_attributes=2))
    try:
        span = limited.get_tracer("t").start_span("answer")
        add_result_event(span, {"a": 1, "b": 2, "c": 3}, None)
        event = span.events[0]
        assert len(event.attributes or {}) == 2
        assert event.dropped_attributes == 1
    finally:
        limited.shutdown()


class _OtherSdkSpan(NonRecordingSpan):
    """A span of another SDK: the API's ``add_event`` only, no ``_add_event``, no limits."""

    def __init__(self) -> None:
        super().__init__(SpanContext(1, 2, False))
        self.added: list[tuple[str, dict[str, object], int | None]] = []

    def add_event(self, name: str, attributes: Any = None, timestamp: int | None = None) -> None:
        self.added.append((name, dict(attributes or {}), timestamp))


def test_a_span_that_is_not_the_sdks_gets_add_event() -> None:
    span = _OtherSdkSpan()
    add_result_event(span, {"gen_ai.evaluation.name": "rouge"}, 7)
    assert span.added == [("gen_ai.evaluation.result", {"gen_ai.evaluation.name": "rouge"}, 7)]


def test_an_ended_span_takes_no_event_and_says_so(
    provider: TracerProvider, caplog: pytest.LogCaptureFixture
) -> None:
    span = provider.get_tracer("t").start_span("answer")
    span.end()
    with caplog.at_level(logging.WARNING):
        add_result_event(span, {"gen_ai.evaluation.name": "rouge"}, None)
    assert span.events == ()
    assert "ended span" in caplog.text
