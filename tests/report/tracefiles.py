"""Trace files for the report tests, written by a real OpenTelemetry SDK into `JsonlExporter`.

The files carry what DESIGN §4 says the scoring pipeline writes (result events on the span,
carrier spans linked to their target, the ``not_sampled`` list), built here by hand so these
tests do not depend on ``tracesim.trace``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Link, NonRecordingSpan, Span, Status, StatusCode, set_span_in_context

from tracesim import _semconv as sc
from tracesim.exporters import JsonlExporter

T0_NS = 1_790_000_000 * 10**9  # a fixed start, so file contents are deterministic apart from ids


def result(
    name: str,
    score: float | None = None,
    *,
    passed: bool | None = None,
    threshold: float | None = None,
    label: str | None = None,
    status: str | None = "ok",
    error_type: str | None = None,
) -> dict[str, Any]:
    """The attributes of one ``gen_ai.evaluation.result`` event (``None`` values left out)."""
    attrs: dict[str, Any] = {
        sc.EVALUATION_NAME: name,
        sc.EVALUATION_SCORE_VALUE: score,
        sc.EVALUATION_PASSED: passed,
        sc.EVALUATION_THRESHOLD: threshold,
        sc.EVALUATION_SCORE_LABEL: label if label is not None else _decision_label(passed),
        sc.EVALUATION_STATUS: status,
        sc.ERROR_TYPE: error_type,
        sc.EVALUATION_DURATION: 0.001,
    }
    return {k: v for k, v in attrs.items() if v is not None}


def _decision_label(passed: bool | None) -> str | None:
    return None if passed is None else "pass" if passed else "fail"


class TraceWriter:
    """Writes spans with exact times through ``TracerProvider`` + ``SimpleSpanProcessor``."""

    def __init__(self, path: Path, *, service: str = "support-bot", **exporter_options: Any) -> None:
        self.path = path
        self.provider = TracerProvider(resource=Resource.create({"service.name": service}))
        self.provider.add_span_processor(SimpleSpanProcessor(JsonlExporter(path, **exporter_options)))
        self.tracer = self.provider.get_tracer("tests.report")
        self._closed = False

    def span(
        self,
        name: str,
        *,
        kind: str | None = "CHAIN",
        start_s: float = 0.0,
        duration_s: float = 0.1,
        parent: Span | None = None,
        error: bool = False,
        attributes: Mapping[str, Any] | None = None,
        results: Sequence[Mapping[str, Any]] = (),
        not_sampled: Sequence[str] = (),
        links: Sequence[Span] = (),
    ) -> Span:
        """Write one finished span and return it (to parent or link other spans to)."""
        attrs: dict[str, Any] = {sc.SPAN_KIND: kind} if kind is not None else {}
        attrs.update(attributes or {})
        if not_sampled:
            attrs[sc.EVALUATION_NOT_SAMPLED] = list(not_sampled)
        start = T0_NS + round(start_s * 1e9)
        end = start + round(duration_s * 1e9)
        context = set_span_in_context(NonRecordingSpan(parent.get_span_context())) if parent else None
        span = self.tracer.start_span(
            name,
            context=context,
            start_time=start,
            attributes=attrs,
            links=[Link(s.get_span_context()) for s in links],
        )
        for attributes_ in results:
            span.add_event(sc.EVALUATION_EVENT, dict(attributes_), timestamp=end)
        if error:
            span.set_status(Status(StatusCode.ERROR, "boom"))
        span.end(end_time=end)
        return span

    def carrier(self, target: Span, results: Sequence[Mapping[str, Any]], *, start_s: float = 5.0) -> Span:
        """A late-result carrier: an ``EVALUATOR`` span in the target's trace, linked to it."""
        return self.span(
            "tracesim.score", kind="EVALUATOR", start_s=start_s, duration_s=0.001, parent=target,
            results=results, links=[target],
        )  # fmt: skip

    def close(self) -> None:
        """Shut the provider down (idempotent); the file is complete afterwards."""
        if not self._closed:
            self._closed = True
            self.provider.shutdown()


def write_known(w: TraceWriter) -> None:
    """The reference file the exact-number tests check (see test_stats.py for the expected values).

    Four traces. ``answer`` (AGENT) lasts 0.1-0.4 s and fails in trace 3; ``retrieve``
    (RETRIEVER) 0.01-0.04 s; ``search`` (TOOL) only in trace 0, failing. ``user.id`` is alice in
    traces 0 and 2, bob in 1 and 3, and only on ``answer``.

    - levenshtein (threshold 0.8): 0.9 pass, 0.5 fail, skipped, then 0.95 pass late on a carrier;
    - rouge: 0.6, an error, then not sampled twice;
    - human (carriers only): ``helpful`` 1.0 in trace 1, ``unhelpful`` 0.0 in trace 2.
    """
    lev = [
        [result("levenshtein", 0.9, passed=True, threshold=0.8)],
        [result("levenshtein", 0.5, passed=False, threshold=0.8)],
        [result("levenshtein", status="skipped", threshold=0.8)],
        [],
    ]
    rouge = [
        [result("rouge", 0.6)],
        [result("rouge", status="error", error_type="TimeoutError")],
        [],
        [],
    ]
    for i in range(4):
        answer = w.span(
            "answer",
            kind="AGENT",
            start_s=i * 10,
            duration_s=0.1 * (i + 1),
            error=i == 3,
            attributes={sc.GEN_AI_AGENT_NAME: "support", "user.id": "alice" if i % 2 == 0 else "bob"},
            results=lev[i] + rouge[i],
            not_sampled=["rouge"] if i >= 2 else [],
        )
        w.span("retrieve", kind="RETRIEVER", start_s=i * 10, duration_s=0.01 * (i + 1), parent=answer)
        if i == 0:
            w.span("search", kind="TOOL", start_s=0.05, duration_s=0.02, parent=answer, error=True)
        if i == 1:
            w.carrier(answer, [result("human", 1.0, label="helpful")])
        if i == 2:
            w.carrier(answer, [result("human", 0.0, label="unhelpful")])
        if i == 3:
            w.carrier(answer, [result("levenshtein", 0.95, passed=True, threshold=0.8)])
