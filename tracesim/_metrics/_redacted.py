"""Metric points redacted before they leave the process, as spans are."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData

from tracesim.exporters._redacting import redacted_attributes

if TYPE_CHECKING:
    from tracesim.exporters import Redaction

__all__ = ["RedactingMetricExporter", "redacted"]


class RedactingMetricExporter(MetricExporter):
    """Redacts the points' attribute values, then hands them to the wrapped exporter."""

    def __init__(self, inner: MetricExporter, redaction: Redaction) -> None:
        super().__init__(inner._preferred_temporality, inner._preferred_aggregation)
        self._inner = inner
        self._redaction = redaction

    @property
    def inner(self) -> MetricExporter:
        """The exporter the points go to."""
        return self._inner

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Export the points, redacted."""
        return self._inner.export(
            redacted(metrics_data, self._redaction), timeout_millis=timeout_millis, **kwargs
        )

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Flush the wrapped exporter."""
        return self._inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Shut the wrapped exporter down."""
        self._inner.shutdown(timeout_millis=timeout_millis, **kwargs)


def redacted(metrics_data: MetricsData, redaction: Redaction) -> MetricsData:
    """``metrics_data`` with every string attribute value of its points redacted.

    tracesim's own labels are redacted when first counted; this covers the points the
    instrumentations record (models, server addresses). Unchanged data is returned as it is.
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
                    metric = dataclasses.replace(metric, data=dataclasses.replace(data, data_points=points))  # type: ignore[arg-type]
                    changed = True
                metrics.append(metric)
            scopes.append(dataclasses.replace(scope_metrics, metrics=metrics))
        resources.append(dataclasses.replace(resource_metrics, scope_metrics=scopes))
    if not changed:
        return metrics_data
    return dataclasses.replace(metrics_data, resource_metrics=resources)
