"""Metric points redacted before they leave the process, as spans are."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    Buckets,
    ExponentialHistogramDataPoint,
    Gauge,
    HistogramDataPoint,
    MetricExporter,
    MetricExportResult,
    MetricsData,
    NumberDataPoint,
)

from tracesim.exporters._redacting import redacted_attributes

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource

    from tracesim._metrics._scores import ScoreHistogram
    from tracesim.exporters import Redaction

    Scores = tuple[ScoreHistogram, int, Resource]
    """The score histogram a destination adds, its reader id there, and the resource of its points."""

__all__ = ["RedactingMetricExporter", "leaving", "merged", "redacted"]


class RedactingMetricExporter(MetricExporter):
    """Redacts the points' attribute values, adds the score histogram's points (``adding``: the
    `ScoreHistogram` and the resource they go under), then hands them to the wrapped exporter."""

    def __init__(
        self,
        inner: MetricExporter,
        redaction: Redaction,
        adding: tuple[ScoreHistogram, Resource] | None = None,
    ) -> None:
        super().__init__(inner._preferred_temporality, inner._preferred_aggregation)
        self._inner = inner
        self._redaction = redaction
        self._scores: Scores | None = None
        if adding is not None:
            from opentelemetry.sdk.metrics import Histogram

            scores, resource = adding
            wanted = (inner._preferred_temporality or {}).get(Histogram)
            self._scores = (scores, scores.reader(delta=wanted is AggregationTemporality.DELTA), resource)

    @property
    def inner(self) -> MetricExporter:
        """The exporter the points go to."""
        return self._inner

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Export the points, the scores added, redacted."""
        return self._inner.export(
            leaving(metrics_data, self._redaction, self._scores), timeout_millis=timeout_millis, **kwargs
        )

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Flush the wrapped exporter."""
        return self._inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Shut the wrapped exporter down."""
        self._inner.shutdown(timeout_millis=timeout_millis, **kwargs)


def leaving(metrics_data: MetricsData, redaction: Redaction, scores: Scores | None) -> MetricsData:
    """What a destination is given: ``metrics_data`` with the score points of its reader added
    (``scores``), then `redacted` (the score labels go through the pass every point goes through)."""
    if scores is not None:
        histogram, reader, resource = scores
        metrics_data = histogram.added(metrics_data, reader, resource)
    return redacted(metrics_data, redaction)


def redacted(metrics_data: MetricsData, redaction: Redaction) -> MetricsData:
    """``metrics_data`` with every string attribute value of its points redacted.

    tracesim's own labels are redacted when first counted; this covers the points the
    instrumentations record (models, server addresses). Points whose attributes become the
    same once redacted (two models that differ only in a customer name the ``redact`` hook
    hides) are merged into one (`merged`): one series per label set, as every destination
    requires (Prometheus refuses a scrape that holds a series twice). Unchanged data is
    returned as it is.
    """
    changed = False
    resources = []
    for resource_metrics in metrics_data.resource_metrics:
        scopes = []
        for scope_metrics in resource_metrics.scope_metrics:
            metrics = []
            for metric in scope_metrics.metrics:
                data = metric.data
                points: list[Any] = []
                moved = False
                for point in data.data_points:
                    attributes = point.attributes
                    if attributes:
                        shown = redacted_attributes(redaction, attributes)
                        if shown is not attributes:
                            point = dataclasses.replace(point, attributes=shown)
                            moved = True
                    points.append(point)
                if moved:
                    points = merged(points, latest=isinstance(data, Gauge))
                    metric = dataclasses.replace(metric, data=dataclasses.replace(data, data_points=points))  # type: ignore[arg-type]
                    changed = True
                metrics.append(metric)
            scopes.append(dataclasses.replace(scope_metrics, metrics=metrics))
        resources.append(dataclasses.replace(resource_metrics, scope_metrics=scopes))
    if not changed:
        return metrics_data
    return dataclasses.replace(metrics_data, resource_metrics=resources)


def merged(points: list[Any], *, latest: bool = False) -> list[Any]:
    """``points`` (of one metric) with those of equal attributes merged into one, in first-seen order.

    Counters add their values; histograms add their bucket counts, counts and sums and keep the
    smallest ``min`` and largest ``max``; the points of a gauge (``latest``) keep the latest value.
    A point spans from the earliest start to the latest time of those merged.

    Example:
        >>> from opentelemetry.sdk.metrics.export import NumberDataPoint
        >>> a = NumberDataPoint({"model": "m:[customer]"}, 0, 5, 2)
        >>> b = NumberDataPoint({"model": "m:[customer]"}, 0, 6, 3)
        >>> [(p.value, p.time_unix_nano) for p in merged([a, b])]
        [(5, 6)]
    """
    kept: dict[tuple[tuple[str, Any], ...], int] = {}
    out: list[Any] = []
    for point in points:
        key = _key(point.attributes)
        at = kept.get(key)
        if at is None:
            kept[key] = len(out)
            out.append(point)
            continue
        both = _merge(out[at], point, latest)
        if both is None:  # cannot be one point (histograms of different bounds): both stay
            out.append(point)
        else:
            out[at] = both
    return out


def _key(attributes: Any) -> tuple[tuple[str, Any], ...]:
    if not attributes:
        return ()
    return tuple(sorted((k, tuple(v) if isinstance(v, (list, tuple)) else v) for k, v in attributes.items()))


def _merge(a: Any, b: Any, latest: bool) -> Any:
    """One point holding ``a`` and ``b`` (same metric, same attributes), or None when they cannot be one."""
    common: dict[str, Any] = {
        "start_time_unix_nano": min(a.start_time_unix_nano, b.start_time_unix_nano),
        "time_unix_nano": max(a.time_unix_nano, b.time_unix_nano),
        "exemplars": [*(a.exemplars or ()), *(b.exemplars or ())],
    }
    if isinstance(a, NumberDataPoint) and isinstance(b, NumberDataPoint):
        if latest:
            value = b.value if b.time_unix_nano >= a.time_unix_nano else a.value
        else:
            value = a.value + b.value
        return dataclasses.replace(a, value=value, **common)
    if isinstance(a, HistogramDataPoint) and isinstance(b, HistogramDataPoint):
        if list(a.explicit_bounds) != list(b.explicit_bounds):
            return None
        return dataclasses.replace(
            a,
            count=a.count + b.count,
            sum=a.sum + b.sum,
            bucket_counts=[x + y for x, y in zip(a.bucket_counts, b.bucket_counts, strict=True)],
            min=min(a.min, b.min),
            max=max(a.max, b.max),
            **common,
        )
    if isinstance(a, ExponentialHistogramDataPoint) and isinstance(b, ExponentialHistogramDataPoint):
        scale = min(a.scale, b.scale)
        return dataclasses.replace(
            a,
            count=a.count + b.count,
            sum=a.sum + b.sum,
            scale=scale,
            zero_count=a.zero_count + b.zero_count,
            positive=_buckets(a.positive, a.scale, b.positive, b.scale, scale),
            negative=_buckets(a.negative, a.scale, b.negative, b.scale, scale),
            min=min(a.min, b.min),
            max=max(a.max, b.max),
            **common,
        )
    return None


def _buckets(a: Buckets, a_scale: int, b: Buckets, b_scale: int, scale: int) -> Buckets:
    """The buckets of two exponential histograms, at ``scale`` (the coarser of theirs).

    Example:
        >>> _buckets(Buckets(0, [1, 1]), 1, Buckets(1, [5]), 0, 0)
        Buckets(offset=0, bucket_counts=[2, 5])
    """
    counts: dict[int, int] = {}
    for buckets, own in ((a, a_scale), (b, b_scale)):
        shift = own - scale  # a bucket index at a finer scale maps to index >> shift
        for i, n in enumerate(buckets.bucket_counts):
            if n:
                index = (buckets.offset + i) >> shift
                counts[index] = counts.get(index, 0) + n
    if not counts:
        return Buckets(0, [])
    low = min(counts)
    return Buckets(low, [counts.get(i, 0) for i in range(low, max(counts) + 1)])
