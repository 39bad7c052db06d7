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
        ok: bool = False,
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
        elif ok:
            span.set_status(Status(StatusCode.OK))
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


def trace_id(span: Span) -> str:
    """A written span's trace id as OTLP/JSON writes it."""
    return format(span.get_span_context().trace_id, "032x")


def write_llm_known(w: TraceWriter) -> list[str]:
    """The reference file of the LLM usage tests (exact numbers in test_usage.py); returns trace ids.

    Four traces, each an ``answer`` AGENT span with LLM calls under it, in three conventions:

    0. ``chat gpt-4o-mini`` (GenAI; answered by gpt-4o-mini-2024-07-18): 1,000 in (400 cached),
       200 out, scored levenshtein 0.9 pass; ``embeddings text-embedding-3-small``: 500 in.
    1. ``chat gpt-4o-mini``: 2,000 in, 100 out; ``chat gpt-4.1``: 3,000 in, 500 out, scored
       ``human`` 1.0 helpful later, on a carrier span.
    2. ``ChatCompletion`` (OpenInference): ``my-local-model``, 700 in, 50 out: no shipped price.
    3. ``openai.chat`` (OpenLLMetry): gpt-4o, 100 in, 10 out, with its own ``llm.cost.total`` 0.25.
    """
    roots = [w.span("answer", kind="AGENT", start_s=i * 10, duration_s=1.0) for i in range(4)]
    mini = {
        "gen_ai.operation.name": "chat",
        "gen_ai.request.model": "gpt-4o-mini",
        "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
        "gen_ai.provider.name": "openai",
    }
    calls: list[tuple[int, str, dict[str, Any], list[dict[str, Any]]]] = [
        (0, "chat gpt-4o-mini", {**mini, **_gen_ai(1000, 200), "gen_ai.usage.cache_read.input_tokens": 400},
         [result("levenshtein", 0.9, passed=True, threshold=0.8)]),
        (0, "embeddings text-embedding-3-small",
         {"gen_ai.request.model": "text-embedding-3-small", "gen_ai.usage.input_tokens": 500}, []),
        (1, "chat gpt-4o-mini", {**mini, **_gen_ai(2000, 100)}, []),
        (1, "chat gpt-4.1", {"gen_ai.request.model": "gpt-4.1", **_gen_ai(3000, 500)}, []),
        (2, "ChatCompletion", {"llm.model_name": "my-local-model", "llm.token_count.prompt": 700,
                               "llm.token_count.completion": 50, "llm.token_count.total": 750}, []),
        (3, "openai.chat", {"gen_ai.request.model": "gpt-4o", "gen_ai.usage.prompt_tokens": 100,
                            "gen_ai.usage.completion_tokens": 10, "llm.cost.total": 0.25}, []),
    ]  # fmt: skip
    for i, name, attributes, results in calls:
        span = w.span(
            name, kind="LLM", start_s=i * 10 + 0.1, parent=roots[i], attributes=attributes, results=results
        )
        if name == "chat gpt-4.1":
            w.carrier(span, [result("human", 1.0, label="helpful")], start_s=15.0)
    return [trace_id(root) for root in roots]


def _gen_ai(tokens_in: int, tokens_out: int) -> dict[str, int]:
    return {"gen_ai.usage.input_tokens": tokens_in, "gen_ai.usage.output_tokens": tokens_out}


def write_timeline(w: TraceWriter) -> list[Span]:
    """The reference file of the timeline and scoring-marker tests (test_timeline.py); returns the answers.

    Thirty ``answer`` AGENT spans, one a minute from T0 (14:13:20Z) to 14:42:20Z, each with a
    ``retrieve`` child of 20 ms. The first 15 answers take 100 ms, score levenshtein 0.9 (pass)
    and rouge 0.7 (no threshold); the last 15 take 1 s, score 0.5 (fail) and 0.3. Answers 20 and
    21 fail (status ERROR); the other answers whose index divides by 3 have status OK.
    Answer 3's scoring was dropped (queue full: no result); answers 5 and 6 ended with
    levenshtein deferred, and only 5's result arrives, on a carrier span; answer 7 left rouge
    out by sampling.
    """
    answers = []
    for i in range(30):
        late = i >= 15
        attributes: dict[str, Any] = {}
        results = [
            result("levenshtein", 0.5 if late else 0.9, passed=not late, threshold=0.8),
            result("rouge", 0.3 if late else 0.7),
        ]
        if i == 3:
            attributes[sc.EVALUATION_DROPPED] = True
            results = []
        if i in (5, 6):
            attributes[sc.EVALUATION_DEFERRED] = ["levenshtein"]
            results = results[1:]
        if i == 7:
            results = results[:1]
        answer = w.span(
            "answer", kind="AGENT", start_s=i * 60, duration_s=1.0 if late else 0.1, error=i in (20, 21),
            ok=i % 3 == 0, attributes=attributes, results=results, not_sampled=["rouge"] if i == 7 else [],
        )  # fmt: skip
        w.span("retrieve", kind="RETRIEVER", start_s=i * 60, duration_s=0.02, parent=answer)
        if i == 5:
            w.carrier(answer, [result("levenshtein", 0.9, passed=True, threshold=0.8)], start_s=i * 60 + 40)
        answers.append(answer)
    return answers
