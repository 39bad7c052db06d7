"""The answers behind the aggregates: the worst cases of each evaluator, and errors by type.

A mean score says that something fails; these say which calls, with what input, output and
expected output, in which trace. An exception that propagates from a tool through its agent
is recorded on both spans; it is counted once, where it was raised (the innermost span of
the trace with that type and message).
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tracesim import _semconv as sc
from tracesim._foreign_spans import span_input, span_output
from tracesim._report._collect import Judged, _finite, _status, evaluator_name
from tracesim._report._redacted import Texts
from tracesim.tracefile import LinkRecord, SpanRecord

__all__ = ["CASES", "Case", "ErrorType", "Judged", "error_types", "worst_cases"]

CASES = 5
"""Worst cases kept per evaluator."""
_TEXT = 300  # characters of an input, output or expected output kept in a case


@dataclass(frozen=True)
class Case:
    """One evaluation result and the call it judged: the start of a drill-down.

    ``input``, ``output`` and ``expected`` are the span's recorded values, cut to 300
    characters; ``None`` when the span (or, for a carrier, its target) is not in the files.
    """

    evaluator: str
    score: float | None
    passed: bool | None
    label: str | None
    explanation: str | None
    trace_id: str
    span_id: str
    span: str | None
    input: str | None
    output: str | None
    expected: str | None


@dataclass(frozen=True)
class ErrorType:
    """Spans that failed with one exception type: how often, where, and one example.

    ``count`` counts exceptions where they were raised (one propagating through three spans
    counts once); ``spans`` names the spans they were raised in, most frequent first.
    """

    type: str
    count: int
    spans: tuple[str, ...]
    message: str
    trace_id: str


def worst_cases(
    judged: Iterable[Judged], per_evaluator: int = CASES, *, text: Texts | None = None
) -> tuple[Case, ...]:
    """The ``per_evaluator`` worst scored results of each evaluator: failures first, then scores.

    Whether a low or a high score is worse is read from the results themselves (a result that
    passed above its threshold: higher is better; below it: lower is better, as distances).
    Every text a case shows is taken through ``text`` (`Texts`) whole, then cut.

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> def judged(score, passed):
        ...     span = SpanRecord("t" * 32, f"{int(score * 10):016d}", None, "answer", "INTERNAL", 0, 1,
        ...                       {"input.value": "q", "output.value": f"a{score}"})
        ...     event = {"gen_ai.evaluation.name": "f1", "gen_ai.evaluation.score.value": score,
        ...              "tracesim.evaluation.passed": passed, "tracesim.evaluation.threshold": 0.5}
        ...     return Judged(event, span, span)
        >>> [c.output for c in worst_cases([judged(0.9, True), judged(0.1, False), judged(0.6, True)])]
        ['a0.1', 'a0.6', 'a0.9']
    """
    text = text if text is not None else Texts(redact=False)
    by_evaluator: dict[str, list[Judged]] = defaultdict(list)
    for item in judged:
        if (
            _status(item.attributes) == "ok"
            and _finite(item.attributes.get(sc.EVALUATION_SCORE_VALUE)) is not None
        ):
            by_evaluator[evaluator_name(item.attributes, text)].append(item)
    cases: list[Case] = []
    for name in sorted(by_evaluator):
        items = by_evaluator[name]
        sign = _direction(items)

        def badness(item: Judged, sign: float = sign) -> tuple[int, float]:
            passed = item.attributes.get(sc.EVALUATION_PASSED)
            rank = 0 if passed is False else (1 if passed is None else 2)
            score = _finite(item.attributes.get(sc.EVALUATION_SCORE_VALUE)) or 0.0
            return rank, sign * score

        for item in sorted(items, key=badness)[:per_evaluator]:
            cases.append(_case(name, item, text))
    return tuple(cases)


def error_types(spans: Iterable[SpanRecord], *, text: Texts | None = None) -> tuple[ErrorType, ...]:
    """Failed spans grouped by exception type, each exception counted where it was raised.

    Types, messages and span names are taken through ``text`` (`Texts`) before they are grouped.

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> from tracesim.tracefile._span_records import EventRecord
        >>> boom = EventRecord("exception", 5, {"exception.type": "TimeoutError",
        ...                                     "exception.message": "slow"})
        >>> t = "t" * 32
        >>> tool = SpanRecord(t, "2" * 16, "1" * 16, "search", "INTERNAL", 2, 5, {}, (boom,), (), "ERROR")
        >>> agent = SpanRecord(t, "1" * 16, None, "answer", "INTERNAL", 1, 6, {}, (boom,), (), "ERROR")
        >>> [(e.type, e.count, e.spans) for e in error_types([agent, tool])]
        [('TimeoutError', 1, ('search',))]
    """
    text = text if text is not None else Texts(redact=False)
    raised: dict[tuple[str, str, str], SpanRecord] = {}
    for span in spans:
        if span.status_code != "ERROR" or span.attributes.get(sc.SPAN_KIND) == "EVALUATOR":
            continue
        kind, message = _exception(span)
        kind, message = text(kind), text(message)
        key = (span.trace_id, kind, message)
        earlier = raised.get(key)
        # the innermost span of the chain started last: that is where it was raised
        if earlier is None or span.start_time_unix_nano > earlier.start_time_unix_nano:
            raised[key] = span
    grouped: dict[str, list[tuple[str, SpanRecord]]] = defaultdict(list)
    for (_, kind, message), span in raised.items():
        grouped[kind].append((message, span))
    result = [
        ErrorType(
            type=kind,
            count=len(items),
            spans=tuple(name for name, _ in Counter(text(span.name) for _, span in items).most_common()),
            message=_cut(items[0][0]) or "",
            trace_id=items[0][1].trace_id,
        )
        for kind, items in grouped.items()
    ]
    return tuple(sorted(result, key=lambda e: (-e.count, e.type)))


def _exception(span: SpanRecord) -> tuple[str, str]:
    for event in span.events:
        if event.name == "exception":
            kind = event.attributes.get("exception.type")
            message = event.attributes.get("exception.message")
            return (str(kind) if kind else "(no type)"), (str(message) if message is not None else "")
    return "(status only)", span.status_message


def _case(name: str, item: Judged, text: Texts) -> Case:
    attributes, target = item.attributes, item.target
    label, explanation = attributes.get(sc.EVALUATION_SCORE_LABEL), attributes.get(sc.EVALUATION_EXPLANATION)
    passed = attributes.get(sc.EVALUATION_PASSED)
    values = target.attributes if target is not None else {}
    link = item.carrier.links[0] if target is None and item.carrier.links else None
    where: SpanRecord | LinkRecord = target or link or item.carrier
    return Case(
        evaluator=name,
        score=_finite(attributes.get(sc.EVALUATION_SCORE_VALUE)),
        passed=passed if isinstance(passed, bool) else None,
        label=text(label) if isinstance(label, str) else None,
        explanation=_cut(explanation, text) if isinstance(explanation, str) else None,
        trace_id=where.trace_id,
        span_id=where.span_id,
        span=text(target.name) if target is not None else None,
        input=_cut(span_input(values), text) if target is not None else None,
        output=_cut(span_output(values), text) if target is not None else None,
        expected=_cut(values.get(sc.EXPECTED_VALUE), text) if target is not None else None,
    )


def _direction(items: list[Judged]) -> float:
    """1.0 when higher scores pass (the default), -1.0 when lower ones do (distances)."""
    for item in items:
        attributes = item.attributes
        score = _finite(attributes.get(sc.EVALUATION_SCORE_VALUE))
        threshold = _finite(attributes.get(sc.EVALUATION_THRESHOLD))
        passed = attributes.get(sc.EVALUATION_PASSED)
        if score is None or threshold is None or not isinstance(passed, bool) or score == threshold:
            continue
        return 1.0 if (score > threshold) == passed else -1.0
    return 1.0


def _cut(value: Any, text: Texts | None = None) -> str | None:
    """``value`` as text, redacted whole (``text``), then cut to `_TEXT` characters."""
    if value is None:
        return None
    shown = value if isinstance(value, str) else str(value)
    if text is not None:
        shown = text.once(shown)
    return shown if len(shown) <= _TEXT else shown[: _TEXT - 1] + "…"
