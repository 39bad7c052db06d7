"""Metrics in a local file: one OTLP/JSON ``ExportMetricsServiceRequest`` per line."""

from __future__ import annotations

import json
from typing import Any

from opentelemetry.exporter.otlp.json.common.metrics_encoder import encode_metrics
from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData

from tracesim.exporters._linefile import LineFileExporter

__all__ = ["JsonlMetricExporter"]


class JsonlMetricExporter(LineFileExporter, MetricExporter):
    """Append metrics to a file, one OTLP/JSON ``ExportMetricsServiceRequest`` per line.

    tracesim writes its metrics here (``<trace file>.metrics.jsonl``) when spans go to the
    local file, at every ``metrics_interval_s``, on ``tracesim.force_flush()`` and at shutdown.
    Points are cumulative: the last line holds the totals since ``configure()``. The file is
    a `LineFile`, as the trace file is: rotated by size, shared safely between processes,
    never left with a half line; lines the disk refuses wait in memory (``pending``, within
    ``backlog_bytes``, the oldest dropped first and counted in ``dropped``).

    Example:
        >>> from opentelemetry.sdk.metrics import MeterProvider
        >>> from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
        >>> exporter = JsonlMetricExporter(".tracesim/traces.metrics.jsonl")  # doctest: +SKIP
        >>> provider = MeterProvider([PeriodicExportingMetricReader(exporter)])  # doctest: +SKIP
    """

    what = "metrics"
    component = "jsonl metric exporter"

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Write the points as one line; ``FAILURE`` when it is not in the file (kept to retry)."""
        return self._export(
            1 if metrics_data.resource_metrics else 0,
            lambda: (
                json.dumps(encode_metrics(metrics_data).to_dict(), separators=(",", ":")) + "\n"
            ).encode(),
            MetricExportResult.SUCCESS,
            MetricExportResult.FAILURE,
        )
