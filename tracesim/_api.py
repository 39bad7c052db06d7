"""`configure`, `force_flush` and `shutdown`: the typed public face of the runtime."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from tracesim import _runtime
from tracesim._config import Redactor
from tracesim._scoring import ScoringStats

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

    from tracesim._export_queue import ExportStats

__all__ = ["configure", "export_stats", "force_flush", "score", "scoring_stats", "shutdown"]


def configure(
    *,
    service_name: str | None = None,
    exporters: Sequence[str | SpanExporter] | str | SpanExporter | None = None,
    enabled: bool | None = None,
    resource_attributes: Mapping[str, Any] | None = None,
    capture: bool | None = None,
    max_value_chars: int | None = None,
    max_generator_items: int | None = None,
    redact: Redactor | None = None,
    redact_patterns: Sequence[str] | str | None = None,
    jsonl_path: str | os.PathLike[str] | None = None,
    jsonl_max_bytes: int | None = None,
    jsonl_backups: int | None = None,
    otlp_protocol: str | None = None,
    otlp_endpoint: str | None = None,
    otlp_headers: Mapping[str, str] | None = None,
    spool_dir: str | os.PathLike[str] | None = None,
    spool_max_bytes: int | None = None,
    batch_export: bool | None = None,
    export_queue_size: int | None = None,
    export_on_full: str | None = None,
    export_wait_s: float | None = None,
    set_global_tracer_provider: bool | None = None,
    scoring_mode: str | None = None,
    evaluation_sample_rate: float | None = None,
    max_defer_s: float | None = None,
    scoring_queue_size: int | None = None,
    scoring_workers: int | None = None,
    scoring_processes: int | str | None = None,
    scoring_export: str | None = None,
    evaluation_log_events: bool | None = None,
    evaluation_span_events: bool | None = None,
    evaluators: Sequence[Mapping[str, Any]] | None = None,
    phoenix_annotations: bool | None = None,
    phoenix_annotations_url: str | None = None,
    mlflow_experiment_id: str | int | None = None,
    mlflow_assessments: bool | None = None,
    mlflow_url: str | None = None,
    metrics: Sequence[str] | str | None = None,
    metrics_interval_s: float | None = None,
    prometheus_host: str | None = None,
    prometheus_port: int | None = None,
    shutdown_timeout_s: float | None = None,
    internal_errors: str | None = None,
    instrument: Sequence[str] | str | None = None,
    prices: Mapping[str, Mapping[str, float]] | None = None,
    config_file: str | os.PathLike[str] | None = None,
) -> None:
    """Set tracesim up: where spans go, what is captured, how outputs are scored.

    Every argument is optional; one left out comes from its environment variable
    (``TRACESIM_*`` or the standard ``OTEL_*``), then from ``tracesim.yaml`` in the working
    directory (or ``config_file``), then from the default. With no exporter named and no
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` set, spans go to ``.tracesim/traces.jsonl``.

    Calling it again replaces the configuration: the previous exporters are flushed and
    shut down. If the application already installed an OpenTelemetry ``TracerProvider``,
    tracesim adds its processors to it instead of replacing it.

    The README's configuration table lists every setting, its variable and its values.

    Raises:
        ConfigError: a setting has an invalid value; the message names the setting, where
            the value came from (the argument, the environment variable or the config file)
            and the accepted values.

    Example:
        >>> import tracesim
        >>> tracesim.configure(service_name="support-bot", exporters=["jsonl", "console"])  # doctest: +SKIP
    """
    arguments = {name: value for name, value in locals().items() if name != "config_file"}
    if isinstance(jsonl_path, os.PathLike):
        arguments["jsonl_path"] = os.fspath(jsonl_path)
    _runtime.configure(arguments, config_file=config_file, instrument=_instrument)


def _instrument(names: Sequence[str]) -> None:
    """Turn on the integrations the ``instrument`` setting names (they stay on)."""
    if names:
        from tracesim.integrations._registry import instrument

        instrument(names)


def force_flush(timeout_s: float = 30.0) -> bool:
    """Wait until pending scores are written and finished spans are exported.

    Use it at the end of short scripts, in serverless handlers and in tests. Returns False
    when the deadline passed first.

    Example:
        >>> import tracesim
        >>> tracesim.force_flush(timeout_s=5)
        True
    """
    return _runtime.force_flush(timeout_s)


def shutdown(timeout_s: float | None = None) -> bool:
    """Drain pending work, then stop exporting; traced code runs untraced afterwards.

    Runs automatically at interpreter exit. ``timeout_s`` defaults to the
    ``shutdown_timeout_s`` setting (10 s). Returns False when the deadline passed first.
    """
    return _runtime.shutdown(timeout_s)


def score(
    target: Any,
    *,
    name: str,
    value: float | None = None,
    label: str | None = None,
    explanation: str | None = None,
    passed: bool | None = None,
    annotator_kind: str = "HUMAN",
) -> None:
    """Record a result for a span after the fact: human feedback, a late judge, a user rating.

    The result goes on a carrier span (``openinference.span.kind=EVALUATOR``) in the target's
    trace, linked to the target, with the same ``gen_ai.evaluation.result`` event and flat
    ``tracesim.eval.<name>.*`` attributes as online scores. Given a span that has ended, the
    carrier is placed at its end, so the trace's latency in a backend stays the call's; a bare
    ``SpanContext`` carries no times, and its carrier stands at the moment of scoring.

    Args:
        target: The span scored: a `tracesim.Span`, an OpenTelemetry span, or its
            ``SpanContext`` (keep ``span.span_context`` to score later).
        name: The score's name, e.g. ``"user_rating"``.
        value: A numeric score.
        label: A short label, e.g. ``"helpful"``.
        explanation: Free text; redacted like captured values.
        passed: Whether this counts as a pass.
        annotator_kind: ``HUMAN`` (default), ``LLM`` or ``CODE``.

    Raises:
        TypeError, ValueError: the target or the values are not usable (a bug at the call site).

    Example:
        >>> import tracesim
        >>> with tracesim.span("answer") as s:
        ...     s.set_output("Warsaw")
        >>> tracesim.score(s, name="user_rating", value=1.0, label="helpful")
    """
    from tracesim import _semconv as sc
    from tracesim._scoring import emit_carrier, end_time_of, target_context
    from tracesim.evaluators import EvalResult

    context = target_context(target)
    if not isinstance(name, str) or not name:
        raise ValueError("score() needs a non-empty name")
    if value is None and label is None and explanation is None:
        raise ValueError("score() needs at least one of value, label or explanation")
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise TypeError(f"score() value must be a number, got {type(value).__name__}")
    runtime = _runtime.active()
    if runtime is None or not context.is_valid:
        return
    result = EvalResult(name=name, score=value, label=label, explanation=explanation, passed=passed)
    emit_carrier(
        runtime.tracer,
        context,
        result,
        runtime.capture,
        {sc.EVALUATION_ANNOTATOR_KIND: annotator_kind},
        at_ns=end_time_of(target),
    )
    for sink in runtime.sinks:
        sink.submit(context, result, annotator_kind)
    if runtime.metrics is not None:
        runtime.metrics.feedback(target, result)


def scoring_stats() -> ScoringStats:
    """A snapshot of the scoring counters: queued, completed, dropped, errors, time-outs, late.

    Example:
        >>> import tracesim
        >>> tracesim.scoring_stats().dropped
        0
    """
    runtime = _runtime.current
    if runtime is None or runtime.scoring is None:
        return ScoringStats()
    stats = dataclasses.replace(runtime.scoring.stats)
    sinks = runtime.scoring.sinks
    stats.log_records_dropped += sum(getattr(sink, "log_records_dropped", 0) for sink in sinks)
    for sink in sinks:  # Phoenix annotations, MLflow assessments: their senders' counters
        counters = getattr(sink, "stats", None)
        if counters is not None:
            stats.results_not_sent += counters.dropped + counters.failed
    runs = runtime.runs
    if runs is not None:
        stats.runs_traces_evicted = runs.evicted
    return stats


def export_stats() -> ExportStats:
    """A snapshot of the export queues' counters: enqueued, exported, dropped, recorded, waits.

    A sibling of `scoring_stats`: spans lost between a traced call and its exporters, because
    an exporter's queue (``export_queue_size``) was full, are counted here, summed over the
    exporters (each has its own queue). ``tracesim report`` shows them too, from the
    ``tracesim.export.dropped`` spans written to the trace file.

    Example:
        >>> import tracesim
        >>> tracesim.export_stats().dropped
        0
    """
    from tracesim._export_queue import ExportStats, export_stats

    runtime = _runtime.current
    if runtime is None:
        return ExportStats()
    return export_stats(runtime.processors)
