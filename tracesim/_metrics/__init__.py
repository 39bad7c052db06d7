"""OpenTelemetry metrics for online scoring and LLM calls (see ``docs/metrics.md``).

One `Metrics` per configuration that has any destination (``metrics`` setting; by default as
the spans: ``otlp`` beside OTLP spans, ``jsonl`` beside the trace file). It owns a
``MeterProvider`` of its own (never the global one, which is the application's) with:

- ``tracesim.evaluation.results`` (observable counter, ``{result}``): results by evaluator
  (``gen_ai.evaluation.name``), evaluated span name (``tracesim.span.name``) and
  ``tracesim.evaluation.outcome``; counted by the scoring pipeline (`ResultCounts`);
- ``tracesim.evaluation.score`` (histogram, ``1``, buckets 0, 0.1 ... 1): the score of each
  ``ok`` result, aggregated by tracesim (`ScoreHistogram`, under the result counts' lock) and
  added to each collection by the destinations' wrappers;
- ``tracesim.llm.cost`` (counter, ``{USD}``): the cost of LLM calls, counted on the export path
  (`CostCounting`);
- the GenAI client metrics (``gen_ai.client.token.usage``, ``gen_ai.client.operation.duration``)
  the instrumentations record through `CurrentMeterProvider`.

Every label value leaves redacted, as span attributes do.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tracesim._internal_errors import internal_error
from tracesim._metrics._counts import OUTCOMES, SCORE_BUCKETS, UNNAMED, ResultCounts, outcome
from tracesim._metrics._prometheus import scrape_url

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricReader, MetricsData
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace.export import SpanExporter

    from tracesim._config import Settings
    from tracesim._metrics._prometheus import Endpoint
    from tracesim._metrics._scores import ScoreHistogram

    Adding = tuple[ScoreHistogram, Resource]
    """The score histogram a destination adds to what it collects, and the resource it goes under."""
    from tracesim.evaluators import EvalResult
    from tracesim.exporters import Redaction

__all__ = [
    "OUTCOMES",
    "SCORE_BUCKETS",
    "UNNAMED",
    "Metrics",
    "ResultCounts",
    "build_metrics",
    "destinations",
    "outcome",
    "scrape_url",
]

RESULTS = "tracesim.evaluation.results"
COST = "tracesim.llm.cost"
EVALUATION_SERIES = 8000
"""Cardinality limit of each tracesim.evaluation.* metric per reader (the labels are bounded below it)."""
OTHER_SERIES = 2000
"""Cardinality limit of every other metric (the SDK's default); beyond, ``otel.metric.overflow``."""


def destinations(settings: Settings) -> tuple[str, ...]:
    """Where the settings send metrics: ``metrics`` as given, or by default as the spans go.

    Example:
        >>> from tracesim._config import resolve
        >>> destinations(resolve({"exporters": ["jsonl", "otlp"]}, environ={}))
        ('otlp', 'jsonl')
        >>> destinations(resolve({"exporters": ["jsonl"], "metrics": "none"}, environ={}))
        ()
    """
    if settings.metrics is not None:
        return tuple(settings.metrics)
    names = {item for item in settings.exporters if isinstance(item, str)}
    return tuple(name for name in ("otlp", "jsonl") if name in names)


class Metrics:
    """One configuration's metrics: the provider, its readers, and what tracesim counts into it."""

    def __init__(
        self,
        provider: MeterProvider,
        counts: ResultCounts,
        cost: Counter,
        endpoint: Endpoint | None = None,
        registry: Any = None,
    ) -> None:
        self.provider = provider
        """The configuration's own ``MeterProvider`` (instrumentations record through it)."""
        self.counts = counts
        """The evaluation results counted so far."""
        self.cost = cost
        self._endpoint = endpoint
        self._registry = registry
        self._closed = False
        self._lock = threading.Lock()
        self._flushing: _Flush | None = None

    def cost_counting(self, exporter: SpanExporter) -> SpanExporter:
        """``exporter`` with the cost of the LLM spans it exports counted on the way."""
        from tracesim._metrics._cost import CostCounting

        return CostCounting(exporter, self.cost)

    def feedback(self, target: Any, result: EvalResult) -> None:
        """Count a ``tracesim.score()`` result for ``target`` (a span; a ``SpanContext`` is `UNNAMED`).

        Example:
            >>> from opentelemetry.sdk.metrics import MeterProvider
            >>> from tracesim.evaluators import EvalResult
            >>> provider = MeterProvider()
            >>> counter = provider.get_meter("t").create_counter("c")
            >>> metrics = Metrics(provider, ResultCounts(), counter)
            >>> metrics.feedback(None, EvalResult(name="user_rating", score=1.0, passed=True))
            >>> metrics.counts.by_outcome()["passed"]
            1
        """
        name = getattr(getattr(target, "otel_span", target), "name", None)
        self.counts.result(result.name, name if isinstance(name, str) else UNNAMED, result)

    def activate(self) -> None:
        """The configuration is being installed: the scrape endpoint serves its metrics from now on."""
        if self._endpoint is not None and not self._closed:
            self._endpoint.serve(self._registry)

    def force_flush(self, timeout_s: float) -> bool:
        """Export the current totals (otlp, jsonl) within ``timeout_s``; False past it.

        The SDK's exporters keep retrying a backend that is down for their own time limit,
        whatever time the caller has: the flush runs in a thread of its own, waited for until
        the deadline (a flush still running then is waited for by the next one, not doubled).
        """
        if self._closed:
            return True
        with self._lock:
            flushing = self._flushing
            if flushing is None or not flushing.thread.is_alive():
                flushing = self._flushing = _Flush(self.provider, timeout_s)
        flushing.thread.join(max(0.0, timeout_s))
        return not flushing.thread.is_alive() and flushing.ok

    def shutdown(self, timeout_s: float) -> bool:
        """Export the last totals and stop; the scrape endpoint stops when no configuration uses it."""
        with self._lock:
            if self._closed:
                return True
            self._closed = True
        try:
            if self._endpoint is not None:
                self._endpoint.release(id(self), self._registry)
        finally:
            self.provider.shutdown(max(1, int(timeout_s * 1000)))
        return True


class _Flush:
    """One ``force_flush`` of a meter provider, in a daemon thread."""

    def __init__(self, provider: MeterProvider, timeout_s: float) -> None:
        self.ok = False
        self._provider = provider
        self._millis = max(1, int(timeout_s * 1000))
        self.thread = threading.Thread(target=self._run, name="tracesim-metrics-flush", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.ok = bool(self._provider.force_flush(self._millis))
        except Exception:
            internal_error("metrics: flush")


def build_metrics(settings: Settings, resource: Resource, redaction: Redaction) -> Metrics | None:
    """The metrics of a configuration, or None when it sends them nowhere. Raises `ConfigError`."""
    where = destinations(settings)
    if not where:
        return None
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.view import View
    from opentelemetry.sdk.resources import Resource as SdkResource

    from tracesim._version import __version__
    from tracesim.exporters._redacting import redacted_attributes

    readers: list[MetricReader] = []
    endpoint: Endpoint | None = None
    registry: Any = None
    user = object()
    counts = ResultCounts(redaction, scores=True)
    assert counts.scores is not None
    sdk_resource = SdkResource(dict(redacted_attributes(redaction, resource.attributes)), resource.schema_url)
    adding = (counts.scores, sdk_resource)
    try:
        for name in dict.fromkeys(where):
            if name == "prometheus":
                endpoint, registry, reader = _prometheus_reader(settings, redaction, id(user), adding)
                readers.append(reader)
            else:
                readers.append(_periodic(_exporter(name, settings, redaction, adding), settings))
    except BaseException:  # a later destination is refused: stop what the earlier ones started
        for reader in readers:
            reader.shutdown()
        if endpoint is not None:
            endpoint.release(id(user), registry)
        raise
    # Every view an instrument matches makes a stream of its own: one view, for tracesim's
    # bounded evaluation metrics; the others keep the SDK's limit (OTHER_SERIES).
    views = [View(instrument_name="tracesim.evaluation.*", aggregation_cardinality_limit=EVALUATION_SERIES)]
    provider = MeterProvider(
        metric_readers=readers, resource=sdk_resource, shutdown_on_exit=False, views=views
    )
    meter = provider.get_meter("tracesim", __version__)
    # The score histogram (tracesim.evaluation.score) is tracesim's own aggregation, added to each
    # collection by the destinations' wrappers (`ScoreHistogram`): OpenTelemetry's record costs
    # several µs a point.
    meter.create_observable_counter(
        RESULTS,
        callbacks=[counts.observe],
        unit="{result}",
        description="Evaluation results by evaluator, evaluated span name and outcome.",
    )
    cost = meter.create_counter(
        COST, unit="{USD}", description="Cost in US dollars of the LLM calls exported, by provider and model."
    )
    metrics = Metrics(provider, counts, cost, endpoint, registry)
    if endpoint is not None:
        # The endpoint knew this configuration by a placeholder until the object existed.
        endpoint.rename(id(user), id(metrics))
    return metrics


def _periodic(exporter: MetricExporter, settings: Settings) -> MetricReader:
    from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

    interval = max(10, int(settings.metrics_interval_s * 1000))
    return PeriodicExportingMetricReader(
        exporter, export_interval_millis=interval, export_timeout_millis=max(interval, 10_000)
    )


def _exporter(name: str, settings: Settings, redaction: Redaction, adding: Adding) -> MetricExporter:
    if name == "jsonl":
        from tracesim.exporters._jsonl import require_writable
        from tracesim.exporters._jsonl_metrics import JsonlMetricExporter

        trace_file = Path(settings.jsonl_path).absolute()
        path = trace_file.with_name(trace_file.stem + ".metrics.jsonl")
        require_writable(path, settings, f"a file path beside which tracesim can write {path.name}")
        inner: MetricExporter = JsonlMetricExporter(
            path, max_bytes=settings.jsonl_max_bytes, backups=settings.jsonl_backups
        )
    else:
        from tracesim.exporters._signals import otlp_metric_exporter

        inner = otlp_metric_exporter(settings, explicit=settings.metrics is not None)
    from tracesim._metrics._redacted import RedactingMetricExporter

    return RedactingMetricExporter(inner, redaction, adding)


def _prometheus_reader(
    settings: Settings, redaction: Redaction, user: int, adding: Adding
) -> tuple[Endpoint, Any, MetricReader]:
    from tracesim._metrics._prometheus import acquire, missing_extra

    try:
        from opentelemetry.exporter.prometheus import PrometheusMetricReader
        from prometheus_client import CollectorRegistry
    except ImportError:
        raise missing_extra() from None

    scores, resource = adding
    with_scores = (scores, scores.reader(delta=False), resource)  # Prometheus is cumulative

    class _Reader(PrometheusMetricReader):
        """The exporter's reader, its points redacted as they are collected, the scores added."""

        def _receive_metrics(
            self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
        ) -> None:
            from tracesim._metrics._redacted import leaving

            super()._receive_metrics(leaving(metrics_data, redaction, with_scores), timeout_millis, **kwargs)

        def force_flush(self, timeout_millis: float = 10_000) -> bool:
            # Points are read on each scrape; collecting now would queue a second copy of every
            # series for the next scrape (the exporter's collector keeps what it was given).
            return True

    endpoint = acquire(settings.prometheus_host, settings.prometheus_port, user)
    registry = CollectorRegistry()
    return endpoint, registry, _Reader(registry=registry)
