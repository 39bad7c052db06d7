"""Evaluation results counted by evaluator, span name and outcome, with bounded labels.

Counting on the scoring workers is a dictionary increment under a lock. What the caller's
thread counts (``dropped``, ``not_sampled``) is only appended to a queue, one C call, and
folded into the totals by the next reader or result; the OpenTelemetry counter reads the
totals only when metrics are collected (an observable counter's callback). The score
histogram is aggregated here too, under the same lock (`ScoreHistogram`: about a microsecond
a point, where OpenTelemetry's ``Histogram.record`` takes several), never in the caller.

Labels are bounded: at most `SPAN_NAMES_PER_EVALUATOR` span names per evaluator and
`EVALUATORS` evaluator names; later ones are counted under `OTHER`. Every label value is
redacted by the configuration's redaction, as the span attributes holding it are.
"""

from __future__ import annotations

import math
import threading
from collections import deque
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from tracesim import _semconv as sc
from tracesim._export_queue import reset_after_fork
from tracesim._metrics._scores import SCORE_BUCKETS, ScoreHistogram

if TYPE_CHECKING:
    from opentelemetry.metrics import CallbackOptions, Observation

    from tracesim.evaluators import EvalResult
    from tracesim.exporters import Redaction

__all__ = [
    "EVALUATORS",
    "OTHER",
    "OUTCOMES",
    "OUTCOME_KEY",
    "PAIRS",
    "SCORE_BUCKETS",
    "SPAN_KEY",
    "SPAN_NAMES_PER_EVALUATOR",
    "UNNAMED",
    "ResultCounts",
    "outcome",
]

SPAN_NAMES_PER_EVALUATOR = 100
"""Distinct span names counted per evaluator; the others are counted as `OTHER`."""
EVALUATORS = 100
"""Distinct evaluator names counted (``tracesim.score()`` names are free text); the others are `OTHER`."""
PAIRS = 1000
"""Distinct (evaluator, span name) pairs counted in all; beyond, the span name is `OTHER`."""
OTHER = "_other"
UNNAMED = "_unknown"
"""The span name counted when the span's name is not known (a result for a bare ``SpanContext``)."""
SPAN_KEY = "tracesim.span.name"
OUTCOME_KEY = "tracesim.evaluation.outcome"
OUTCOMES = ("passed", "failed", "undecided", "skipped", "error", "dropped", "not_sampled")
"""Every value of ``tracesim.evaluation.outcome``."""
_FOLD_AT = 4096
"""Counts queued by callers before the caller that queues one more folds them itself (the
queue's memory bound when nothing reads the totals for a while)."""


def outcome(result: EvalResult) -> str:
    """The outcome a result is counted under.

    ``error`` and ``skipped`` by status; an ``ok`` result is ``passed`` or ``failed`` when its
    evaluator decided (it has a threshold or said so), else ``undecided``.

    Example:
        >>> from tracesim.evaluators import EvalResult
        >>> outcome(EvalResult(name="exact", score=1.0, passed=True))
        'passed'
        >>> outcome(EvalResult(name="length", score=12.0))
        'undecided'
    """
    status = result.status
    if status != "ok":
        return "error" if status == "error" else "skipped"
    passed = result.passed
    if passed is None:
        return "undecided"
    return "passed" if passed else "failed"


class ResultCounts:
    """The counts behind ``tracesim.evaluation.results`` and the ``tracesim.evaluation.score`` points.

    Example:
        >>> from tracesim.evaluators import EvalResult
        >>> counts = ResultCounts()
        >>> counts.result("exact", "answer", EvalResult(name="exact", score=1.0, passed=True))
        >>> counts.count(("exact",), "answer", "dropped")
        >>> sorted((dict(a)[OUTCOME_KEY], n) for a, n in counts.totals())
        [('dropped', 1), ('passed', 1)]
    """

    def __init__(self, redaction: Redaction | None = None, *, scores: bool = False) -> None:
        self._redaction = redaction
        self._lock = threading.Lock()
        self.scores: ScoreHistogram | None = ScoreHistogram(self._lock) if scores else None
        """The score histogram (``scores``), its points added as each reader collects."""
        reset_after_fork(self)  # a lock held by a thread the fork did not copy would stay held
        self._counts: dict[tuple[str, str, str], int] = {}
        # evaluator -> {span name as given -> its label}; the names beyond the bound map to OTHER
        self._spans: dict[str, dict[str, str]] = {}
        self._evaluators: dict[str, str] = {}  # evaluator as given -> its label
        self._pairs = 0
        self._attributes: dict[tuple[str, str, str], dict[str, str]] = {}
        self._score_attributes: dict[tuple[str, str], dict[str, str]] = {}
        # (evaluators, span, outcome, n) counted by callers, not yet in _counts
        self._queued: deque[tuple[Iterable[str], str, str, int]] = deque()

    def _reset(self) -> None:
        """In a forked child: a new lock (the totals counted before the fork stay)."""
        self._lock = threading.Lock()
        if self.scores is not None:
            self.scores._lock = self._lock

    # ------------------------------------------------------------ counting

    def count(self, evaluators: Iterable[str], span: str, what: str, n: int = 1) -> None:
        """Add ``n`` to ``what`` (an outcome) for each of ``evaluators`` on a span named ``span``.

        For the caller's thread: queued in one C call, and folded in by the next reader, result
        or the caller that finds `_FOLD_AT` counts queued. ``evaluators`` must not change after.
        """
        queued = self._queued
        queued.append((evaluators, span, what, n))
        if len(queued) > _FOLD_AT:
            with self._lock:
                self._fold()

    def _fold(self) -> None:
        """Move the queued counts into the totals. Locked."""
        queued = self._queued
        counts = self._counts
        while queued:
            evaluators, span, what, n = queued.popleft()
            for evaluator in evaluators:
                key = (*self._labels(evaluator, span), what)
                counts[key] = counts.get(key, 0) + n

    def result(self, evaluator: str, span: str, result: EvalResult) -> None:
        """Count one result; an ``ok`` result with a finite score is also a histogram point."""
        self.record(evaluator, span, outcome(result), result.score if result.status == "ok" else None)

    def record(self, evaluator: str, span: str, what: str, score: float | None = None) -> None:
        """Count one result by its `outcome` (``score``: an ``ok`` result's, for the histogram)."""
        with self._lock:
            if self._queued:
                self._fold()
            labels = self._labels(evaluator, span)
            key = (*labels, what)
            self._counts[key] = self._counts.get(key, 0) + 1
            scores = self.scores
            if scores is None or score is None or not math.isfinite(score):
                return
            attributes = self._score_attributes.get(labels)
            if attributes is None:
                attributes = self._score_attributes[labels] = {
                    sc.EVALUATION_NAME: labels[0],
                    SPAN_KEY: labels[1],
                }
            scores.add(labels, attributes, score)

    def _labels(self, evaluator: str, span: str) -> tuple[str, str]:
        """The bounded, redacted labels of ``evaluator`` and ``span``. Locked."""
        label = self._evaluators.get(evaluator)
        if label is None:
            if len(self._evaluators) >= EVALUATORS:
                return OTHER, OTHER
            label = self._evaluators[evaluator] = self._redacted(evaluator, sc.EVALUATION_NAME)
            self._spans[evaluator] = {}
        spans = self._spans[evaluator]
        shown = spans.get(span)
        if shown is None:
            if len(spans) >= SPAN_NAMES_PER_EVALUATOR or self._pairs >= PAIRS:
                return label, OTHER
            shown = spans[span] = self._redacted(span, "span.name")
            self._pairs += 1
        return label, shown

    def _redacted(self, text: str, attribute: str) -> str:
        redaction = self._redaction
        return redaction.text(text, attribute) if redaction is not None else text

    # ------------------------------------------------------------ reading

    def totals(self) -> list[tuple[dict[str, str], int]]:
        """Each label set with its count, as the results counter reports them."""
        with self._lock:
            self._fold()
            items = list(self._counts.items())
            attributes = self._attributes
            out = []
            for key, n in items:
                shown = attributes.get(key)
                if shown is None:
                    shown = attributes[key] = {
                        sc.EVALUATION_NAME: key[0],
                        SPAN_KEY: key[1],
                        OUTCOME_KEY: key[2],
                    }
                out.append((shown, n))
        return out

    def observe(self, options: CallbackOptions) -> Sequence[Observation]:
        """The observable counter's callback: every total, read at collection."""
        from opentelemetry.metrics import Observation

        return [Observation(n, attributes) for attributes, n in self.totals()]

    def by_outcome(self) -> dict[str, int]:
        """Totals per outcome, every label summed (for tests and summaries).

        Example:
            >>> counts = ResultCounts()
            >>> counts.count(("a", "b"), "answer", "not_sampled")
            >>> counts.by_outcome()["not_sampled"]
            2
        """
        totals = dict.fromkeys(OUTCOMES, 0)
        with self._lock:
            self._fold()
            for (_, _, what), n in self._counts.items():
                totals[what] = totals.get(what, 0) + n
        return totals
