"""A trace file whose span holds evaluation results, for the replay and annotation tests."""

from __future__ import annotations

from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tracesim import _semconv as sc
from tracesim.exporters import JsonlExporter


def write_scored_file(path: Path, scores: dict[str, float]) -> Path:
    """A trace file of one ``answer`` span holding an evaluation result event per score."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonlExporter(path)))
    with provider.get_tracer("t").start_as_current_span("answer") as span:
        for name, value in scores.items():
            span.add_event(sc.EVALUATION_EVENT, {sc.EVALUATION_NAME: name, sc.EVALUATION_SCORE_VALUE: value})
    provider.shutdown()
    return path
