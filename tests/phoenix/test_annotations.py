"""PhoenixAnnotationSink against a real Phoenix: annotations posted before and after the span."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tracesim import _semconv as sc
from tracesim.exporters import otlp_exporter
from tracesim.exporters._phoenix import PhoenixAnnotationSink


@pytest.fixture
def provider(phoenix: Any, project: str) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({sc.PROJECT_NAME: project}))
    provider.add_span_processor(SimpleSpanProcessor(otlp_exporter(endpoint=phoenix.http_endpoint)))
    return provider


def _hex(span: Any) -> str:
    return format(span.get_span_context().span_id, "016x")


def test_annotations_wait_for_their_span_and_read_back(
    phoenix: Any, project: str, provider: TracerProvider
) -> None:
    tracer = provider.get_tracer("t")
    done = tracer.start_span("already-there", attributes={sc.SPAN_KIND: "AGENT"})
    done.end()  # exported and ingested before its annotation
    phoenix.spans(project, min_count=1)
    late = tracer.start_span("scored-before-export", attributes={sc.SPAN_KIND: "AGENT"})

    sink = PhoenixAnnotationSink(phoenix.http_endpoint, schedule_delay_s=0.0, max_batch_size=10)
    sink.submit(
        _hex(late),
        "levenshtein",
        score=0.91,
        label="pass",
        explanation="close enough",
        metadata={"threshold": 0.8, "details": {"distance": 2}},
        identifier="tracesim",
    )
    sink.submit(
        _hex(done), "judge", score=None, label="helpful", explanation="cites a source", annotator_kind="LLM"
    )
    # The late span is not in Phoenix yet: its annotation waits; the other one goes through.
    assert not sink.force_flush(timeout_s=1.0)
    assert sink.stats.sent == 1
    assert sink.stats.pending == 1

    late.end()  # now it is exported; the retry finds it
    assert sink.force_flush(timeout_s=30.0)
    assert sink.shutdown(timeout_s=5.0)
    stats = sink.stats
    assert (stats.submitted, stats.sent, stats.dropped, stats.failed, stats.pending) == (2, 2, 0, 0, 0)
    provider.shutdown()

    found = {a["name"]: a for a in phoenix.span_annotations(project, [_hex(late), _hex(done)], min_count=2)}
    assert found["levenshtein"]["span_id"] == _hex(late)
    assert found["levenshtein"]["annotator_kind"] == "CODE"
    assert found["levenshtein"]["result"] == {"score": 0.91, "label": "pass", "explanation": "close enough"}
    assert found["levenshtein"]["metadata"] == {"threshold": 0.8, "details": {"distance": 2}}
    assert found["levenshtein"]["identifier"] == "tracesim"
    assert found["judge"]["span_id"] == _hex(done)
    assert found["judge"]["annotator_kind"] == "LLM"
    assert found["judge"]["result"] == {"score": None, "label": "helpful", "explanation": "cites a source"}


def test_sending_again_updates_instead_of_duplicating(
    phoenix: Any, project: str, provider: TracerProvider
) -> None:
    span = provider.get_tracer("t").start_span("once")
    span.end()
    phoenix.spans(project, min_count=1)
    sink = PhoenixAnnotationSink(phoenix.http_endpoint, schedule_delay_s=0.0)
    sink.submit(_hex(span), "rouge", score=0.5, label=None, explanation=None)
    assert sink.force_flush(10.0)
    sink.submit(_hex(span), "rouge", score=0.7, label=None, explanation=None)
    assert sink.shutdown(10.0)
    (annotation,) = phoenix.span_annotations(project, [_hex(span)])
    assert annotation["result"]["score"] == 0.7


def test_an_annotation_whose_span_never_arrives_is_given_up_and_counted(phoenix: Any) -> None:
    sink = PhoenixAnnotationSink(phoenix.http_endpoint, schedule_delay_s=0.0, max_wait_for_span_s=1.0)
    sink.submit("00000000deadbeef", "exact", score=1.0, label=None, explanation=None)
    assert sink.force_flush(10.0)  # settled: given up after the wait
    assert (sink.stats.sent, sink.stats.failed) == (0, 1)
    sink.shutdown(1.0)


def test_submit_never_raises_and_counts_what_it_drops() -> None:
    sink = PhoenixAnnotationSink("http://127.0.0.1:9", max_queue_size=2, schedule_delay_s=60.0)
    sink.submit("not-a-span-id", "x", score=1.0, label=None, explanation=None)
    sink.submit("00000000000000aa", "x", score=1.0, label=None, explanation=None, annotator_kind="ROBOT")
    sink.submit("00000000000000aa", "x", score=float("nan"), label=None, explanation=None)
    sink.submit("00000000000000aa", "x", score=1.0, label=None, explanation=None, metadata={"f": object()})
    for _ in range(4):  # two fit in the queue
        sink.submit("00000000000000aa", "x", score=1.0, label=None, explanation=None)
    stats = sink.stats
    assert (stats.submitted, stats.dropped, stats.pending) == (8, 6, 2)
    assert not sink.shutdown(timeout_s=0.2)  # nothing listens on port 9
    assert sink.stats.failed == 2
    sink.submit("00000000000000aa", "x", score=1.0, label=None, explanation=None)  # after shutdown
    assert sink.stats.dropped == 7
