"""The evaluation results of replayed trace files, as Phoenix span annotations.

Phoenix shows scores where its users look (the annotation columns, filters and evals views)
only when they arrive as span annotations; a replayed span's ``gen_ai.evaluation.result``
events stay attributes there. For each line the endpoint accepted, every result event with
status ``ok`` becomes an annotation of the span it evaluates: the span that holds the event,
or for a carrier span (``EVALUATOR`` with one link) the linked span. Annotations upsert on
(name, span, identifier ``tracesim``), so a replay run twice annotates once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Mapping
from typing import Any

from opentelemetry.trace import SpanContext, TraceFlags

from tracesim import _semconv as sc
from tracesim.exporters._records import SpanRecord, spans_from_request

__all__ = ["ReplayAnnotations", "phoenix_base_url", "results_in"]

_logger = logging.getLogger("tracesim")


def phoenix_base_url(traces_url: str) -> str:
    """Phoenix's base URL from its OTLP traces URL: ``http://host:6006/v1/traces`` → ``http://host:6006``.

    Example:
        >>> phoenix_base_url("https://app.phoenix.arize.com/s/my-space/v1/traces")
        'https://app.phoenix.arize.com/s/my-space'
    """
    url = traces_url.rstrip("/")
    return url[: -len("/v1/traces")] if url.endswith("/v1/traces") else url


def results_in(request: Mapping[str, Any]) -> Iterator[tuple[SpanContext, Any, str, Any]]:
    """Each evaluation result of an OTLP/JSON request: the span it evaluates, the result, who made
    it, and the expected output recorded beside it (None when the span holds none)."""
    from pydantic import ValidationError

    for span in spans_from_request(request):
        target = _target_of(span)
        if target is None:
            continue
        annotator = span.attributes.get(sc.EVALUATION_ANNOTATOR_KIND)
        expected = span.attributes.get(sc.EXPECTED_VALUE)
        for event in span.events:
            if event.name != sc.EVALUATION_EVENT:
                continue
            try:
                result = _result(event.attributes)
            except (ValidationError, TypeError, ValueError):
                continue  # a hand-edited or foreign event: it stays on the span as it is
            yield target, result, annotator if isinstance(annotator, str) else "CODE", expected


def _target_of(span: SpanRecord) -> SpanContext | None:
    span_id = span.span_id
    if span.attributes.get(sc.SPAN_KIND) == "EVALUATOR" and len(span.links) == 1:
        span_id = span.links[0].span_id  # a carrier: the result is about the linked span
    try:
        trace_id, span_id_int = int(span.trace_id, 16), int(span_id, 16)
    except (TypeError, ValueError):
        return None
    return SpanContext(trace_id, span_id_int, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))


def _result(attributes: Mapping[str, Any]) -> Any:
    from tracesim.evaluators import EvalResult

    details = attributes.get(sc.EVALUATION_DETAILS)
    if isinstance(details, str):
        try:
            details = json.loads(details)
        except ValueError:
            details = {"text": details}
    return EvalResult(
        name=attributes[sc.EVALUATION_NAME],
        score=attributes.get(sc.EVALUATION_SCORE_VALUE),
        label=attributes.get(sc.EVALUATION_SCORE_LABEL),
        passed=attributes.get(sc.EVALUATION_PASSED),
        threshold=attributes.get(sc.EVALUATION_THRESHOLD),
        explanation=attributes.get(sc.EVALUATION_EXPLANATION),
        details=details if isinstance(details, dict) else {},
        status=attributes.get(sc.EVALUATION_STATUS, "ok"),
    )


class ReplayAnnotations:
    """Annotates, in Phoenix, the results of the lines a replay delivered.

    Args:
        base_url: Phoenix's base URL.
        headers: Request headers (the replay's: an API key reaches both APIs).
        detect: Ask first whether ``base_url`` is Phoenix (the replay's endpoint may be any
            collector); when it is not, nothing is sent and `stats` stays at zero.
    """

    def __init__(self, base_url: str, headers: Mapping[str, str], *, detect: bool) -> None:
        from tracesim._scoring._sinks import PhoenixSink
        from tracesim.exporters._redacting import Redaction

        # The files were redacted when written; the pass again costs little and covers files
        # written with patterns since widened.
        self._sink = PhoenixSink(base_url, headers, Redaction(), max_wait_for_span_s=60.0, detect=detect)

    def add(self, request: Mapping[str, Any]) -> None:
        """Queue the annotations of one delivered line."""
        for target, result, annotator, expected in results_in(request):
            self._sink.submit(target, result, annotator, expected=expected)

    def finish(self, timeout_s: float) -> tuple[int, int, bool | None]:
        """Wait for delivery; (sent, not delivered, whether the endpoint is Phoenix)."""
        self._sink.shutdown(timeout_s)
        stats = self._sink.stats
        return stats.sent, stats.failed + stats.dropped + stats.pending, self._sink.is_phoenix
