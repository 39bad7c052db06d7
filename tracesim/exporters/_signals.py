"""OTLP exporters for metrics and logs that stop, after saying so once, where the backend takes neither.

Spans go to a backend that may take nothing else: MLflow answers 404 on ``/v1/metrics`` and
``/v1/logs``, Phoenix 405. The official exporters would log an ERROR on every export interval
for ever, and their providers' ``force_flush`` would still return True. The exporters built
here are the official OTLP/HTTP ones, given a session that records each answer
(`tracesim.exporters._refusals.AnswerRecorder`), and each refusal is read by the rule spans
follow (`tracesim.exporters._refusals.classify`):

- 404, 405, 415 or 501 before the URL has ever taken this signal: the signal is not taken
  there (MLflow, Phoenix). Said once, naming the URL, the status and the backend's message
  (INFO when the signal was on by default, WARNING when the settings asked for it); from then
  on an export returns SUCCESS without a request. The same answer after the URL has taken
  the signal (a proxy's one-off 404) drops that request only;
- a refusal of the configuration (401, 403; a 400 or 422 naming a request header): said once
  (WARNING); exports are dropped without a request for ``retry_s`` (5 minutes), then one is
  tried again, so that fixed credentials are taken without a restart;
- any other 400, 413 or 422 refuses that request only: it is dropped (said once per status)
  and the next ones are sent.

The URL is the one beside the spans' (``otlp_endpoint``, else the
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` with ``/v1/traces`` swapped, else the
``OTEL_EXPORTER_OTLP_ENDPOINT`` base), unless ``OTEL_EXPORTER_OTLP_METRICS_ENDPOINT`` /
``OTEL_EXPORTER_OTLP_LOGS_ENDPOINT`` names one: then that one, as the official exporters do.

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
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from opentelemetry.exporter.otlp.proto.http._log_exporter import OTLPLogExporter
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk._logs.export import LogRecordExportResult
from opentelemetry.sdk.metrics.export import MetricExportResult

from tracesim.exporters._refusals import NOT_TAKEN, PERMANENT, AnswerRecorder, Refusal, classify, describe

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import ReadableLogRecord
    from opentelemetry.sdk._logs.export import LogRecordExporter
    from opentelemetry.sdk.metrics.export import MetricExporter, MetricsData

    from tracesim._config import Settings

__all__ = [
    "SignalGate",
    "otlp_log_exporter",
    "otlp_metric_exporter",
    "refusal_of",
    "signal_endpoint",
    "signal_url",
]

_logger = logging.getLogger("tracesim")
RETRY_S = 300.0  # while the configuration is refused, one export is tried again this often


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
    """Reads each answer of one signal's exporter: closes for good where the signal is not taken.

    Args:
        signal: ``"metrics"`` or ``"logs"``, for the messages.
        explicit: Whether the settings asked for the signal (WARNING) or it is on by default (INFO).
        retry_s: While the backend refuses the configuration, how long exports are dropped
            before one is tried again.

    Example:
        >>> gate = SignalGate("logs", explicit=False)
        >>> gate.refused is None, gate.open
        (True, True)
    """

    def __init__(self, signal: str, *, explicit: bool, retry_s: float = RETRY_S) -> None:
        self.signal = signal
        self.explicit = explicit
        self.recorder = AnswerRecorder(quiet=PERMANENT | NOT_TAKEN)
        self._retry_s = retry_s
        self._lock = threading.Lock()
        self._refused: Refusal | None = None  # not taken here: closed for good
        self._paused: Refusal | None = None  # the configuration refused: tried again later
        self._paused_until = 0.0
        self._taken = False  # the URL has taken this signal at least once
        self._reported: set[tuple[int, bool]] = set()

    @property
    def refused(self) -> Refusal | None:
        """The refusal that closed this gate for good (the signal is not taken), or None."""
        return self._refused

    @property
    def open(self) -> bool:
        """Whether exports still go out (False for good where the signal is not taken)."""
        return self._refused is None

    def passes(self) -> bool:
        """Whether an export may go out now: open, and not waiting out a refused configuration."""
        with self._lock:
            return self._refused is None and (self._paused is None or time.monotonic() >= self._paused_until)

    def export(self, send: Callable[[], Any], success: Any, failure: Any) -> Any:
        """Run ``send`` (the official exporter's export) behind the gate; its result, or ``failure``.

        Closed for good: ``success`` without a request (nothing is to be delivered there).
        While a refused configuration is waited out: ``failure`` without a request.
        """
        if not self.open:
            return success
        if not self.passes():
            return failure
        self.recorder.begin()
        try:
            result = send()
        finally:
            refused = self.after_export()
        return failure if refused else result

    def after_export(self) -> bool:
        """Read the answer of the export just made on this thread; True if it was a refusal."""
        answer = self.recorder.last()
        self.recorder.end()
        if answer is None:
            return False  # no answer: an outage, the official exporter has said so
        refusal = classify(answer, self.signal)
        if refusal is None:
            if 200 <= answer.status < 300:
                with self._lock:
                    self._taken = True
                    self._paused = None
            return False
        with self._lock:
            if refusal.status in NOT_TAKEN and not self._taken:
                kind = "closed"
                if self._refused is not None:
                    return True
                self._refused = refusal
            elif refusal.lasting and refusal.status not in NOT_TAKEN:
                kind = "paused"
                first = self._paused is None
                self._paused = refusal
                self._paused_until = time.monotonic() + self._retry_s
                if not first:
                    return True
            else:
                kind = "dropped"
                key = (refusal.status, refusal.lasting)
                if key in self._reported:
                    return True
                self._reported.add(key)
        described = describe(self.signal, refusal)
        if kind == "closed":
            text = f"tracesim: {described}; no more {self.signal} are sent there"
            level = logging.WARNING if self.explicit else logging.INFO
        elif kind == "paused":
            text = (
                f"tracesim: {described}; {self.signal} are dropped, and tried again every "
                f"{self._retry_s:g} s until the backend takes them"
            )
            level = logging.WARNING
        else:
            text = f"tracesim: {described}; that request was dropped (said once)"
            level = logging.WARNING
        _logger.log(level, "%s", text)
        return True


class _Gated:
    """What the gated exporters share: the gate, and the session that lets it read each answer.

    Listed before the official exporter in a subclass's bases, so that ``__init__`` hands the
    official one the gate's recording session.
    """

    def __init__(self, gate: SignalGate, **kwargs: Any) -> None:
        super().__init__(session=gate.recorder.session(), **kwargs)  # type: ignore[call-arg]
        self.gate = gate

    @property
    def refused(self) -> Refusal | None:
        """The refusal that stopped the exports for good, or None."""
        return self.gate.refused


class _GatedMetricExporter(_Gated, OTLPMetricExporter):
    """The official OTLP/HTTP metric exporter, behind a `SignalGate`."""

    def export(
        self, metrics_data: MetricsData, timeout_millis: float | None = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        result: MetricExportResult = self.gate.export(
            lambda: super(_GatedMetricExporter, self).export(metrics_data, timeout_millis, **kwargs),
            MetricExportResult.SUCCESS,
            MetricExportResult.FAILURE,
        )
        return result


class _GatedLogExporter(_Gated, OTLPLogExporter):
    """The official OTLP/HTTP log record exporter, behind a `SignalGate`.

    The request body is written by `tracesim.exporters._otlp_log_encode` (the protobuf message
    OpenTelemetry's encoder builds, byte for byte) and sent by the official exporter's own HTTP
    client (retries, compression, time-out, headers, its metrics), as the span exporter does
    (`tracesim.exporters._otlp_http`); an exporter whose internals are not the ones this was
    written against (``opentelemetry-exporter-otlp-proto-http`` 1.45) sends through its own
    ``export`` whole.
    """

    def __init__(self, gate: SignalGate, **kwargs: Any) -> None:
        super().__init__(gate, **kwargs)
        from tracesim.exporters._otlp_http import sends_own_body

        self._own_body = sends_own_body(self)

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        result: LogRecordExportResult = self.gate.export(
            lambda: self._post(batch),
            LogRecordExportResult.SUCCESS,
            LogRecordExportResult.FAILURE,
        )
        return result

    def _post(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """``OTLPLogExporter.export`` with the body written by `encode_logs_or_fallback`."""
        if not self._own_body or self._shutdown:
            return super().export(batch)
        from tracesim.exporters._otlp_http import post_body
        from tracesim.exporters._otlp_log_encode import encode_logs_or_fallback

        body = encode_logs_or_fallback(batch)
        sent = None if body is None else post_body(self, body, len(batch))
        if sent is None:
            return super().export(batch)  # the official exporter says why it does not send it
        return LogRecordExportResult.SUCCESS if sent else LogRecordExportResult.FAILURE


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
    if settings.otlp_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcMetricExporter,
        )

        return GrpcMetricExporter(**_address(settings, "metrics"), **kwargs)
    return _GatedMetricExporter(
        SignalGate("metrics", explicit=explicit), **_address(settings, "metrics"), **kwargs
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
    if settings.otlp_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc._log_exporter import OTLPLogExporter as GrpcLogExporter

        return GrpcLogExporter(**_address(settings, "logs"), **kwargs)
    return _GatedLogExporter(SignalGate("logs", explicit=explicit), **_address(settings, "logs"), **kwargs)


def _address(settings: Settings, signal: str) -> dict[str, Any]:
    """The official exporter's ``endpoint`` and ``headers`` for ``signal`` under the settings."""
    from tracesim.exporters._otlp import settings_headers

    grpc = settings.otlp_protocol == "grpc"
    return {
        "endpoint": _grpc_endpoint(settings, signal) if grpc else signal_endpoint(settings, signal),
        "headers": settings_headers(settings.otlp_headers, settings.mlflow_experiment_id, signal=signal),
    }


def signal_endpoint(settings: Settings, signal: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The OTLP/HTTP URL of ``signal`` for the settings: beside the spans', unless a variable names one.

    ``OTEL_EXPORTER_OTLP_<SIGNAL>_ENDPOINT`` wins (None: the official exporter reads it
    itself); then the spans' URL with ``/v1/traces`` swapped: ``otlp_endpoint``, else
    ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; else None, and the official exporter adds
    ``/v1/<signal>`` to ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or uses its localhost default).

    Example:
        >>> from tracesim._config import resolve
        >>> settings = resolve({"exporters": "otlp"}, environ={})
        >>> traces = {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}
        >>> signal_endpoint(settings, "logs", traces)
        'http://c:4318/v1/logs'
        >>> named = {**traces, "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT": "http://l"}
        >>> signal_endpoint(settings, "logs", named) is None
        True
    """
    environ = os.environ if environ is None else environ
    if environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip():
        return None
    if settings.otlp_endpoint:
        return signal_url(settings.otlp_endpoint, signal)
    traces = environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip().rstrip("/")
    path = urlparse(traces).path
    if not traces or not (path in ("", "/") or path.endswith("/traces")):
        return None  # a traces URL of another shape: no sure neighbour; the base variable decides
    if path.endswith("/traces") and not path.endswith("/v1/traces"):
        return traces[: -len("traces")] + signal
    return signal_url(traces, signal)


def _grpc_endpoint(settings: Settings, signal: str) -> str | None:
    # Over gRPC every signal has the same address: the spans' one, unless a variable names one.
    if settings.otlp_endpoint or os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_ENDPOINT", "").strip():
        return settings.otlp_endpoint
    return os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").strip() or None
