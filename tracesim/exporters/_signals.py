"""OTLP exporters for metrics and logs that stop, after saying so once, where the backend takes neither.

Spans go to a backend that may take nothing else: MLflow answers 404 on ``/v1/metrics`` and
``/v1/logs``, Phoenix 405. The official exporters would log an ERROR on every export interval
for ever, and their providers' ``force_flush`` would still return True. The exporters built
here are the official OTLP/HTTP ones, given a session that records each answer
(`tracesim.exporters._refusals.AnswerRecorder`): an answer that says the signal is not taken
at this URL (404, 405, 415, 501), or a configuration the backend refuses (401, 403, 422), is
reported once, naming the URL, the status and the backend's message (INFO when the signal was
on by default, WARNING when the settings asked for it), and from then on an export returns
SUCCESS without a request. A 400 or 413 refuses one request only: it is reported once per
status, that request is dropped and the next ones are sent.

Over gRPC the official exporters are returned as they are.

Example:
    >>> from tracesim._config import resolve
    >>> settings = resolve({"exporters": "otlp", "otlp_endpoint": "http://127.0.0.1:4318"}, environ={})
    >>> exporter = otlp_log_exporter(settings)
    >>> refusal_of(exporter) is None
    True
    >>> signal_url("http://127.0.0.1:5000/v1/traces", "metrics")
    'http://127.0.0.1:5000/v1/metrics'
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExportResult

from tracesim.exporters._refusals import (
    NOT_TAKEN,
    PERMANENT,
    AnswerRecorder,
    Refusal,
    advice,
    backend_message,
    describe,
)

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import ReadableLogRecord
    from opentelemetry.sdk._logs.export import LogRecordExporter
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricsData

    from tracesim._config import Settings

__all__ = ["SignalGate", "otlp_log_exporter", "otlp_metric_exporter", "refusal_of", "signal_url"]

_logger = logging.getLogger("tracesim")

STOPPING = NOT_TAKEN | {401, 403, 422}
"""Answers after which a signal is no longer sent in this process (the configuration must change)."""


def signal_url(endpoint: str, signal: str) -> str:
    """The OTLP/HTTP URL of ``signal`` (``metrics``, ``logs``) beside the traces ``endpoint``.

    ``.../v1/traces`` becomes ``.../v1/<signal>``; any other URL is a base, to which
    ``/v1/<signal>`` is added.

    Example:
        >>> signal_url("http://collector:4318", "logs")
        'http://collector:4318/v1/logs'
        >>> signal_url("http://collector:4318/v1/traces/", "metrics")
        'http://collector:4318/v1/metrics'
    """
    base = endpoint.rstrip("/")
    if base.endswith("/v1/traces"):
        base = base[: -len("/v1/traces")]
    return f"{base}/v1/{signal}"


class SignalGate:
    """Reads each answer of one signal's exporter and closes for good on a refusal that says so.

    Args:
        signal: ``"metrics"`` or ``"logs"``, for the messages.
        explicit: Whether the settings asked for the signal (WARNING) or it is on by default (INFO).

    Example:
        >>> gate = SignalGate("logs", explicit=False)
        >>> gate.refused is None, gate.open
        (True, True)
    """

    def __init__(self, signal: str, *, explicit: bool) -> None:
        self.signal = signal
        self.explicit = explicit
        self.recorder = AnswerRecorder(quiet=PERMANENT | NOT_TAKEN)
        self._lock = threading.Lock()
        self._refused: Refusal | None = None
        self._reported: set[int] = set()

    @property
    def refused(self) -> Refusal | None:
        """The refusal that closed this gate, or None while it is open."""
        return self._refused

    @property
    def open(self) -> bool:
        """Whether exports still go out."""
        return self._refused is None

    def after_export(self) -> bool:
        """Read the answer of the export just made on this thread; True if it was a refusal."""
        answer = self.recorder.last()
        self.recorder.end()
        if answer is None or answer.status not in PERMANENT | NOT_TAKEN:
            return False
        message = backend_message(answer)
        refusal = Refusal(answer.url, answer.status, message, advice(answer.status, message, self.signal))
        closing = answer.status in STOPPING
        with self._lock:
            if closing and self._refused is None:
                self._refused = refusal
            elif closing or answer.status in self._reported:
                return True
            self._reported.add(answer.status)
        if closing and answer.status in NOT_TAKEN:
            text = f"tracesim: {describe(self.signal, refusal)}; no more {self.signal} are sent there"
        elif closing:
            text = (
                f"tracesim: {describe(self.signal, refusal)}; no more {self.signal} are sent in this process"
            )
        else:
            text = f"tracesim: {describe(self.signal, refusal)}; that request was dropped (said once)"
        _logger.log(logging.WARNING if self.explicit or not closing else logging.INFO, "%s", text)
        return True


class _GatedMetricExporter(OTLPMetricExporter):
    """The official OTLP/HTTP metric exporter, behind a `SignalGate`."""

    def __init__(self, gate: SignalGate, **kwargs: Any) -> None:
        super().__init__(session=gate.recorder.session(), **kwargs)
        self.gate = gate

    @property
    def refused(self) -> Refusal | None:
        """The refusal that stopped the exports, or None."""
        return self.gate.refused

    def export(
        self, metrics_data: MetricsData, timeout_millis: float | None = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        if not self.gate.open:
            return MetricExportResult.SUCCESS
        self.gate.recorder.begin()
        try:
            result: MetricExportResult = super().export(metrics_data, timeout_millis, **kwargs)
        finally:
            refused = self.gate.after_export()
        return MetricExportResult.FAILURE if refused else result


class _GatedLogExporter(OTLPLogExporter):
    """The official OTLP/HTTP log record exporter, behind a `SignalGate`."""

    def __init__(self, gate: SignalGate, **kwargs: Any) -> None:
        super().__init__(session=gate.recorder.session(), **kwargs)
        self.gate = gate

    @property
    def refused(self) -> Refusal | None:
        """The refusal that stopped the exports, or None."""
        return self.gate.refused

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        if not self.gate.open:
            return LogRecordExportResult.SUCCESS
        self.gate.recorder.begin()
        try:
            result: LogRecordExportResult = super().export(batch)
        finally:
            refused = self.gate.after_export()
        return LogRecordExportResult.FAILURE if refused else result


def refusal_of(exporter: object) -> Refusal | None:
    """The refusal that stopped an exporter built here, or None (also for any other exporter)."""
    refused: Refusal | None = getattr(exporter, "refused", None)
    return refused if isinstance(refused, Refusal) else None


def otlp_metric_exporter(settings: Settings, *, explicit: bool = False, **kwargs: Any) -> MetricExporter:
    """The official OTLP metric exporter for the settings' endpoint, protocol and headers.

    Over HTTP, behind a `SignalGate` (see the module's text). ``explicit`` says the settings
    asked for metrics over OTLP, so that a refusal is a WARNING rather than an INFO line.
    ``kwargs`` go to the official exporter (``preferred_temporality``, ``timeout`` ...).

    Example:
        >>> from tracesim._config import resolve
        >>> settings = resolve({"exporters": "otlp", "otlp_endpoint": "http://127.0.0.1:4318"}, environ={})
        >>> otlp_metric_exporter(settings).refused is None  # type: ignore[attr-defined]
        True
    """
    from tracesim.exporters._otlp import settings_headers

    headers = settings_headers(settings.otlp_headers, settings.mlflow_experiment_id)
    if settings.otlp_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )

        return GrpcMetricExporter(endpoint=settings.otlp_endpoint, headers=headers, **kwargs)
    endpoint = signal_url(settings.otlp_endpoint, "metrics") if settings.otlp_endpoint else None
    return _GatedMetricExporter(
        SignalGate("metrics", explicit=explicit), endpoint=endpoint, headers=headers, **kwargs
    )


def otlp_log_exporter(settings: Settings, *, explicit: bool = False, **kwargs: Any) -> LogRecordExporter:
    """The official OTLP log record exporter for the settings' endpoint, protocol and headers.

    Over HTTP, behind a `SignalGate` (see the module's text); ``explicit`` as for
    `otlp_metric_exporter`.

    Example:
        >>> from tracesim._config import resolve
        >>> settings = resolve({"exporters": "otlp", "otlp_endpoint": "http://127.0.0.1:4318"}, environ={})
        >>> refusal_of(otlp_log_exporter(settings, explicit=True)) is None
        True
    """
    from tracesim.exporters._otlp import settings_headers

    headers = settings_headers(settings.otlp_headers, settings.mlflow_experiment_id)
    if settings.otlp_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter

        return GrpcLogExporter(endpoint=settings.otlp_endpoint, headers=headers, **kwargs)
    endpoint = signal_url(settings.otlp_endpoint, "logs") if settings.otlp_endpoint else None
    return _GatedLogExporter(
        SignalGate("logs", explicit=explicit), endpoint=endpoint, headers=headers, **kwargs
    )
