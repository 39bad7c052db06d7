"""The score histogram, aggregated by tracesim and added to each collection as it leaves.

OpenTelemetry's ``Histogram.record`` costs the recording thread several microseconds a point
(the attributes made hashable, the view's storage found, two locks, the exemplar filter): at
three evaluators a call, the largest part of what a host counting its workers' results spent
per call. The score histogram's points are made by tracesim alone (one series per evaluator
and span name, labels already bounded and redacted): a point here is a bucket index and four
numbers updated under the lock `ResultCounts` holds anyway, about a microsecond. The data
points are built only when a reader collects, in the exporter wrappers every destination goes
through (`RedactingMetricExporter`, the Prometheus reader), with the reader's temporality:
the same points, buckets, sums, minimums and maximums the SDK's explicit-bucket aggregation
gives for the same scores (compared in ``tests/metrics/test_score_histogram.py``).

The buckets are always the explicit score buckets (``SCORE_BUCKETS``): a preference for
exponential histograms (``OTEL_EXPORTER_OTLP_METRICS_DEFAULT_HISTOGRAM_AGGREGATION``) applies
to the GenAI client histograms, not to scores, whose alert rules read ``le`` buckets.
"""

from __future__ import annotations

import dataclasses
import math
import time
from bisect import bisect_left
from typing import TYPE_CHECKING, Any

from tracesim._internal_errors import WarnOnce

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import HistogramDataPoint, MetricsData
    from opentelemetry.sdk.resources import Resource

__all__ = ["SCORE", "SCORE_BUCKETS", "SCORE_DESCRIPTION", "ScoreHistogram"]

SCORE_BUCKETS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
"""The score histogram's bucket bounds (upper bounds, inclusive, as OpenTelemetry's)."""

SCORE = "tracesim.evaluation.score"
SCORE_DESCRIPTION = "Scores of evaluation results with status ok, by evaluator and evaluated span name."


class _Series:
    """One label set's scores: cumulative bucket counts, and one window per reader holding the
    interval's [min, max, sum] since that reader last collected. Sums are added per interval,
    as the SDK adds them, so that every point's sum is the SDK's to the last bit."""

    __slots__ = ("buckets", "windows")

    def __init__(self, size: int, readers: int) -> None:
        self.buckets = [0] * size
        self.windows: list[list[float]] = [[math.inf, -math.inf, 0.0] for _ in range(readers)]


class _Reader:
    """What one reader was given: when it last collected and, per series, the bucket counts
    then (delta) or the running [min, max, sum] (cumulative)."""

    __slots__ = ("delta", "since", "taken")

    def __init__(self, delta: bool, since: int) -> None:
        self.delta = delta
        self.since = since
        self.taken: dict[tuple[str, str], list[Any]] = {}


class ScoreHistogram:
    """The scores of ``ok`` results by (evaluator, span name) label pair.

    `add` is called with the labels' lock held (`ResultCounts.record`); `added` and `points`
    take ``lock``, the same lock, when a reader collects.

    Example:
        >>> import threading
        >>> scores = ScoreHistogram(threading.Lock())
        >>> reader = scores.reader(delta=False)
        >>> for score in (0.0, 0.1, 0.95):
        ...     scores.add(("exact", "answer"), {"gen_ai.evaluation.name": "exact"}, score)
        >>> (point,) = scores.points(reader)
        >>> point.count, point.bucket_counts[:3], round(point.sum, 2), point.max
        (3, (1, 1, 0), 1.05, 0.95)
    """

    def __init__(self, lock: Any, bounds: tuple[float, ...] | None = None) -> None:
        self.bounds = tuple(SCORE_BUCKETS if bounds is None else bounds)
        self._lock = lock
        self._started = time.time_ns()
        self._series: dict[tuple[str, str], _Series] = {}
        self._attributes: dict[tuple[str, str], dict[str, str]] = {}
        self._readers: list[_Reader] = []
        self._warnings = WarnOnce()
        self.left_out = 0
        """Negative scores not in the histogram (`add`)."""

    def reader(self, *, delta: bool) -> int:
        """Register a reader (its destination's temporality); its id for `points` and `added`.

        Readers come before the first score (`build_metrics` builds every destination first): a
        reader added later could not be given the sums and extremes of the scores before it."""
        with self._lock:
            if self._series:
                raise RuntimeError("a score histogram reader registered after scores were added")
            self._readers.append(_Reader(delta, self._started))
            return len(self._readers) - 1

    def add(self, labels: tuple[str, str], attributes: dict[str, str], score: float) -> None:
        """One score (finite) for ``labels``. The caller holds the lock.

        A negative score is left out, as OpenTelemetry's histograms leave it out (a histogram's
        sum must only grow: Prometheus rates it), and said once per evaluator."""
        if score < 0:
            self.left_out += 1
            self._warnings.warn(
                f"negative:{labels[0]}",
                "tracesim: evaluator %r gave a negative score (%r); OpenTelemetry histograms take no "
                "negative values, so such scores are counted in tracesim.evaluation.results but not in "
                "tracesim.evaluation.score. Give it scores of 0 or more to see them there.",
                labels[0],
                score,
            )
            return
        series = self._series.get(labels)
        if series is None:
            series = self._series[labels] = _Series(len(self.bounds) + 1, len(self._readers))
            self._attributes[labels] = attributes
        series.buckets[bisect_left(self.bounds, score)] += 1
        for window in series.windows:
            if score < window[0]:
                window[0] = score
            if score > window[1]:
                window[1] = score
            window[2] += score

    def points(self, reader: int, now: int | None = None) -> list[HistogramDataPoint]:
        """The points ``reader`` is given at this collection, in its temporality (a delta reader
        gets the series that had scores since its last collection, as the SDK gives them)."""
        from opentelemetry.sdk.metrics.export import HistogramDataPoint

        at = time.time_ns() if now is None else now
        bounds = self.bounds
        out = []
        with self._lock:
            state = self._readers[reader]
            taken = state.taken
            for labels, series in self._series.items():
                buckets = series.buckets
                window = series.windows[reader]
                low, high, total = window
                window[0], window[1], window[2] = math.inf, -math.inf, 0.0
                if state.delta:
                    before = taken.get(labels)
                    taken[labels] = list(buckets)
                    counts = tuple(
                        buckets if before is None else [a - b for a, b in zip(buckets, before, strict=True)]
                    )
                    start = state.since
                else:
                    kept = taken.get(labels)
                    if kept is None:
                        kept = taken[labels] = [math.inf, -math.inf, 0.0]
                    kept[0], kept[1], kept[2] = min(low, kept[0]), max(high, kept[1]), total + kept[2]
                    low, high, total = kept
                    counts = tuple(buckets)
                    start = self._started
                count = sum(counts)
                if not count:
                    continue
                out.append(
                    HistogramDataPoint(
                        attributes=self._attributes[labels],
                        start_time_unix_nano=start,
                        time_unix_nano=at,
                        count=count,
                        sum=total,
                        bucket_counts=counts,
                        explicit_bounds=bounds,
                        min=low,
                        max=high,
                        exemplars=[],
                    )
                )
            state.since = at
        return out

    def added(self, metrics_data: MetricsData, reader: int, resource: Resource) -> MetricsData:
        """``metrics_data`` with this collection's score points for ``reader``, under tracesim's
        instrumentation scope (unchanged when there are none)."""
        from opentelemetry.sdk.metrics.export import (
            AggregationTemporality,
            Histogram,
            Metric,
            ResourceMetrics,
            ScopeMetrics,
        )
        from opentelemetry.sdk.util.instrumentation import InstrumentationScope

        from tracesim._version import __version__

        points = self.points(reader)
        if not points:
            return metrics_data
        cumulative = not self._readers[reader].delta
        temporality = AggregationTemporality.CUMULATIVE if cumulative else AggregationTemporality.DELTA
        metric = Metric(
            name=SCORE,
            description=SCORE_DESCRIPTION,
            unit="1",
            data=Histogram(data_points=points, aggregation_temporality=temporality),
        )
        found = list(metrics_data.resource_metrics)
        if not found:
            found = [ResourceMetrics(resource=resource, scope_metrics=[], schema_url=resource.schema_url)]
        for at, resource_metrics in enumerate(found):
            scopes = list(resource_metrics.scope_metrics)
            for i, scope in enumerate(scopes):
                if scope.scope.name == "tracesim":  # the results counter's scope: one meter
                    scopes[i] = dataclasses.replace(scope, metrics=[*scope.metrics, metric])
                    found[at] = dataclasses.replace(resource_metrics, scope_metrics=scopes)
                    break
            else:
                continue
            break
        else:
            ours = InstrumentationScope("tracesim", __version__)
            scope = ScopeMetrics(scope=ours, metrics=[metric], schema_url="")
            found[0] = dataclasses.replace(found[0], scope_metrics=[*found[0].scope_metrics, scope])
        return dataclasses.replace(metrics_data, resource_metrics=found)
