"""Extra destinations for evaluation results, next to the span events.

- OTLP log records named ``gen_ai.evaluation.result``, parented to the evaluated span, for
  backends that read evaluation results from logs (the form the GenAI conventions move to:
  OpenTelemetry's OTEP 4430 deprecates the span-event API in favour of log-based events). By
  default (``evaluation_log_events`` auto) whenever spans go over OTLP/HTTP: a backend that
  takes no logs (MLflow 404, Phoenix 405) is said once, at INFO, and sent no more; the local
  trace file's span events already hold every result, so no ``.logs.jsonl`` file unless asked
  for (or unless span events are off).
- Phoenix span annotations, so results appear in Phoenix's evaluation views.

A sink's ``submit`` never blocks and never raises; ``force_flush`` and ``shutdown`` take
deadlines in seconds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from opentelemetry import trace as otel_trace
from opentelemetry.trace import NonRecordingSpan, SpanContext

from tracesim import _semconv as sc
from tracesim._capture import CaptureOptions, capture_value, make_options
from tracesim._scoring._expect import NOT_SET

if TYPE_CHECKING:
    from opentelemetry.sdk._logs import LogRecordLimits
    from opentelemetry.sdk._logs.export import LogRecordExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    from tracesim._config import Settings
    from tracesim._scoring._log_queue import ResultLogQueue
    from tracesim.evaluators import EvalResult
    from tracesim.exporters import Redaction
    from tracesim.exporters._phoenix import AnnotationStats

__all__ = ["ResultSink", "result_sinks"]

_logger = logging.getLogger("tracesim")
_EXPECTED_CAPTURE = make_options(True, 2000)  # an annotation's expected output: a preview, not a copy


class ResultSink(Protocol):
    """Somewhere evaluation results go besides the evaluated span."""

    def submit(
        self, target: SpanContext, result: EvalResult, annotator_kind: str, *, expected: Any = NOT_SET
    ) -> None:
        """Take one result for the span ``target`` (and the output it expected); never blocks or raises."""

    def force_flush(self, timeout_s: float) -> bool:
        """Deliver what was submitted, within ``timeout_s``."""

    def shutdown(self, timeout_s: float) -> bool:
        """Flush, then stop."""


def result_sinks(
    settings: Settings, provider: TracerProvider, capture: CaptureOptions, redaction: Redaction
) -> list[ResultSink]:
    """The sinks the settings ask for; ``redaction`` is applied to what they send, as to spans."""
    sinks: list[ResultSink] = []
    if log_destinations(settings):
        sinks.append(LogEventSink(settings, provider.resource, capture, redaction))
    if phoenix := phoenix_target(settings):
        from tracesim.exporters._otlp import env_headers

        url, detect = phoenix
        headers = settings.otlp_headers
        if not settings.phoenix_annotations_url:
            # Phoenix found behind the OTLP endpoint: its API key is the exporter's. Never sent to
            # a URL named separately, which may be another host than the variables' backend.
            headers = headers or env_headers()
        sinks.append(PhoenixSink(url, headers, redaction, detect=detect))
    from tracesim.exporters._mlflow import mlflow_sinks

    sinks.extend(mlflow_sinks(settings, redaction))
    return sinks


def phoenix_target(settings: Settings, environ: Mapping[str, str] | None = None) -> tuple[str, bool] | None:
    """Where Phoenix annotations go, and whether to ask first that it is Phoenix; None for nowhere.

    ``phoenix_annotations_url`` says where. Otherwise spans exported over OTLP/HTTP may be
    going to Phoenix: its base URL is the traces endpoint without ``/v1/traces``, asked once
    (``GET /arize_phoenix_version``) unless ``phoenix_annotations=true`` says it is Phoenix.
    Over gRPC Phoenix's REST API is on another port: only the URL setting can name it.

    Example:
        >>> from tracesim._config import resolve
        >>> settings = resolve({"exporters": "otlp", "otlp_endpoint": "http://phoenix:6006"}, environ={})
        >>> phoenix_target(settings, environ={})
        ('http://phoenix:6006', True)
    """
    from tracesim.exporters._phoenix import api_behind_otlp

    return api_behind_otlp(
        settings,
        environ,
        setting="phoenix_annotations",
        on=settings.phoenix_annotations,
        url=settings.phoenix_annotations_url,
        expected="false, or true with phoenix_annotations_url set (Phoenix's base URL) when spans "
        "do not go to Phoenix over OTLP/HTTP",
    )


class LogEventSink:
    """Each result as an OTLP log record (``event_name="gen_ai.evaluation.result"``).

    Records go through the OpenTelemetry logs SDK to the same places as the spans: the OTLP
    endpoint for ``otlp`` (``/v1/logs`` beside ``/v1/traces``, behind the gate of
    `tracesim.exporters._signals`), and ``<trace file>.logs.jsonl`` (OTLP/JSON lines) next to
    the local trace file for ``jsonl`` (see `result_sinks` for when). A record carries the
    attributes of the span event (the GenAI conventions' names), the evaluated span's trace and
    span ids, severity WARN for an error (with ``error.type``) and INFO otherwise, and a short
    body for people: ``evaluation: rouge=0.93``. While the record limits change nothing, the
    records skip the SDK's ``Logger.emit`` and go straight into the queues (`_Direct`: 15 µs a
    record instead of 35), the same records in the same bytes.
    """

    def __init__(
        self, settings: Settings, resource: Resource, capture: CaptureOptions, redaction: Redaction
    ) -> None:
        from opentelemetry.sdk._logs import LoggerProvider, LogRecordProcessor
        from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

        from tracesim._export_queue import queue_size
        from tracesim._internal_errors import WarnOnce
        from tracesim._scoring._log_queue import ResultLogQueue
        from tracesim.exporters._jsonl_logs import JsonlLogExporter

        self._capture = capture
        self._redaction = redaction
        self._provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
        self._exporters = _log_exporters(settings)
        self._queues: list[ResultLogQueue] = []
        warnings = WarnOnce()
        for exporter in self._exporters:
            # Over the network, always a batch (a bounded queue, drained by its own thread):
            # the thread that makes a result (the caller's, for `tracesim.score`) never waits on
            # a backend, whatever batch_export says. The local file follows batch_export, as the
            # trace file does. The queue holds as many records as the span queue holds spans; a
            # full one drops records, and counts them (`dropped`).
            processor: LogRecordProcessor
            if settings.batch_export or not isinstance(exporter, JsonlLogExporter):
                name = str(exporter.path) if isinstance(exporter, JsonlLogExporter) else "the OTLP endpoint"
                queue = ResultLogQueue(
                    exporter, queue_size=queue_size(settings, True), name=name, warnings=warnings
                )
                self._queues.append(queue)
                processor = queue
            else:
                processor = SimpleLogRecordProcessor(exporter)
            self._provider.add_log_record_processor(processor)
        self._logger = self._provider.get_logger("tracesim")
        self._refused = False  # latched: a refusal is for good
        self._direct = _direct_path(self._logger, self._queues, len(self._exporters))

    @property
    def log_records_dropped(self) -> int:
        """Records lost at a full (or closed) queue, summed over the destinations."""
        return sum(queue.dropped for queue in self._queues)

    @property
    def refused(self) -> bool:
        """True once every destination has refused log records for good (a backend without logs)."""
        from tracesim.exporters._signals import refusal_of

        if not self._refused:
            for exporter in self._exporters:
                if refusal_of(exporter) is None:
                    return False
            self._refused = bool(self._exporters)
        return self._refused

    def submit(
        self, target: SpanContext, result: EvalResult, annotator_kind: str, *, expected: Any = NOT_SET
    ) -> None:
        from opentelemetry._logs import SeverityNumber

        from tracesim._scoring._results import render
        from tracesim.exporters._redacting import redacted_attributes

        if self.refused:
            return  # nowhere to go: not even rendered
        try:
            attributes = redacted_attributes(
                self._redaction, render(result, self._capture, redaction=self._redaction)[0]
            )
            body = self._redaction.text(log_body(attributes), sc.EVALUATION_NAME)
            direct = self._direct
            if direct is not None and (direct.most is None or len(attributes) <= direct.most):
                direct.put(target, result.status == "error", body, attributes)
                return
            self._logger.emit(
                timestamp=time.time_ns(),
                context=otel_trace.set_span_in_context(NonRecordingSpan(target)),
                severity_number=SeverityNumber.WARN if result.status == "error" else SeverityNumber.INFO,
                event_name=sc.EVALUATION_EVENT,
                body=body,
                attributes=attributes,
            )
        except Exception:
            _logger.exception("tracesim: could not emit an evaluation log record")

    def force_flush(self, timeout_s: float) -> bool:
        return self._provider.force_flush(int(timeout_s * 1000))

    def shutdown(self, timeout_s: float) -> bool:
        # Each queue within the deadline: the provider's shutdown would wait up to the SDK's
        # 30 s for a backend that is down (the batch processor takes the deadline only inside).
        from tracesim._scoring._log_queue import SAY_MARGIN_S

        deadline = time.monotonic() + timeout_s - min(SAY_MARGIN_S, timeout_s / 10)  # said in time
        for queue in self._queues:
            queue.close(max(0.0, deadline - time.monotonic()))
        self._provider.shutdown()  # the rest; a queue closed above returns at once
        return True


class _Direct:
    """The results' records, made as the SDK's ``Logger.emit`` makes them and put straight in
    their queues (`ResultLogQueue.put`).

    The SDK's path costs about 35 µs a record against 15 here (3,000 records, the export thread
    held off, CPython 3.11): a context for the span, an API record copied twice, the attributes
    checked again into a ``BoundedAttributes`` with a lock of its own. A result's attributes
    are `render`'s, strings, floats and booleans that those checks let through unchanged, and
    the evaluated span's ids are at hand. Taken only while the record limits would change
    nothing (no value-length limit; no more attributes than the count limit, checked per
    record) and the SDK's own metrics are off; the encoders write the same bytes either way
    (tested against the SDK's path).
    """

    __slots__ = ("_empty", "_levels", "_limits", "_logger", "_queues", "_readable", "_record", "most")

    def __init__(self, logger: Any, queues: list[ResultLogQueue], limits: LogRecordLimits) -> None:
        from opentelemetry._logs import LogRecord, SeverityNumber
        from opentelemetry.context import Context
        from opentelemetry.sdk._logs import ReadableLogRecord

        self.most: int | None = limits.max_log_record_attributes
        self._queues = queues
        self._logger = logger  # its resource read per record: a forked child's is its own (new ids)
        self._limits = limits
        self._record = LogRecord
        self._readable = ReadableLogRecord
        self._empty = Context()  # what the SDK's batch processor leaves on a record it queues
        self._levels = (SeverityNumber.INFO, SeverityNumber.WARN)

    def put(self, target: SpanContext, error: bool, body: str, attributes: Mapping[str, Any]) -> None:
        record = self._record(
            timestamp=time.time_ns(),
            severity_number=self._levels[error],
            body=body,
            attributes=attributes,
            event_name=sc.EVALUATION_EVENT,
        )
        record.context = self._empty
        record.trace_id, record.span_id = target.trace_id, target.span_id
        record.trace_flags = target.trace_flags
        logger = self._logger
        readable = self._readable(
            log_record=record,
            resource=logger.resource,
            instrumentation_scope=logger.instrumentation_scope,
            limits=self._limits,
        )
        for queue in self._queues:
            queue.put(readable)


def _direct_path(logger: Any, queues: list[ResultLogQueue], destinations: int) -> _Direct | None:
    """`_Direct` when the records can skip the SDK's ``Logger.emit`` unchanged, else None."""
    import os

    from opentelemetry.sdk._logs import Logger, LogRecordLimits
    from opentelemetry.sdk.environment_variables import OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED

    limits = LogRecordLimits()
    if (
        not isinstance(logger, Logger)  # OTEL_SDK_DISABLED: a logger that takes nothing
        or len(queues) != destinations  # a destination without a queue (the local file, unbatched)
        or not all(queue.direct for queue in queues)
        or limits.max_log_record_attribute_length is not None
        or os.environ.get(OTEL_PYTHON_SDK_INTERNAL_METRICS_ENABLED, "").strip().lower() == "true"
    ):
        return None
    return _Direct(logger, queues, limits)


def log_body(attributes: Mapping[str, Any]) -> str:
    """The short human line of an evaluation log record, from its (redacted) attributes.

    Example:
        >>> log_body({"gen_ai.evaluation.name": "rouge", "gen_ai.evaluation.score.value": 0.93})
        'evaluation: rouge=0.93'
        >>> log_body({"gen_ai.evaluation.name": "tone", "gen_ai.evaluation.score.label": "polite"})
        'evaluation: tone=polite'
        >>> log_body({"gen_ai.evaluation.name": "judge", "error.type": "TimeoutError"})
        'evaluation: judge failed (TimeoutError)'
    """
    name = attributes.get(sc.EVALUATION_NAME, "?")
    if sc.ERROR_TYPE in attributes:
        return f"evaluation: {name} failed ({attributes[sc.ERROR_TYPE]})"
    score = attributes.get(sc.EVALUATION_SCORE_VALUE)
    label = attributes.get(sc.EVALUATION_SCORE_LABEL)
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        value = f"{score:.4g}" + (f" ({label})" if label is not None else "")
    elif label is not None:
        value = str(label)
    else:
        value = str(attributes.get(sc.EVALUATION_STATUS, "recorded"))
    return f"evaluation: {name}={value}"


def log_destinations(settings: Settings) -> list[str]:
    """Where evaluation log records go: ``"otlp"``, ``"jsonl"`` (the ``.logs.jsonl`` file), both or none.

    ``evaluation_log_events`` true: OTLP when spans go there, and the file when spans go to the
    trace file. Auto: OTLP/HTTP only (a backend that takes no logs says so: see
    `tracesim.exporters._signals`); not the file, whose span events hold every result already
    (``evaluation_span_events=false`` leaves them out of what goes to backends only). Over gRPC
    auto sends none: no answer there says that the backend takes no logs, and the official
    exporter would log an error per batch.

    Example:
        >>> from tracesim._config import resolve
        >>> log_destinations(resolve({"exporters": ["otlp", "jsonl"]}, environ={}))
        ['otlp']
        >>> asked = {"exporters": ["otlp", "jsonl"], "evaluation_log_events": True}
        >>> log_destinations(resolve(asked, environ={}))
        ['otlp', 'jsonl']
    """
    asked = settings.evaluation_log_events
    if asked is False:
        return []
    wanted = {
        "jsonl": bool(asked),
        "otlp": bool(asked) or settings.otlp_protocol != "grpc",
    }
    return [item for item in settings.exporters if isinstance(item, str) and wanted.get(item, False)]


def _log_exporters(settings: Settings) -> list[LogRecordExporter]:
    exporters: list[LogRecordExporter] = []
    for item in log_destinations(settings):
        if item == "jsonl":
            path = Path(settings.jsonl_path).absolute()
            from tracesim.exporters._jsonl_logs import JsonlLogExporter

            exporters.append(
                JsonlLogExporter(
                    path.with_name(path.stem + ".logs.jsonl"),
                    max_bytes=settings.jsonl_max_bytes,
                    backups=settings.jsonl_backups,
                )
            )
        else:
            exporters.append(_otlp_log_exporter(settings))
    return exporters


def _otlp_log_exporter(settings: Settings) -> LogRecordExporter:
    """The OTLP log exporter of the settings: over HTTP, said once and stopped where not taken."""
    from tracesim.exporters._signals import otlp_log_exporter

    return otlp_log_exporter(settings, explicit=settings.evaluation_log_events is True)


class PhoenixSink:
    """Each result as a Phoenix span annotation (through Phoenix's REST API)."""

    def __init__(
        self,
        base_url: str,
        headers: Any,
        redaction: Redaction,
        *,
        max_wait_for_span_s: float = 120.0,
        detect: bool = False,
    ) -> None:
        from tracesim.exporters._phoenix import PhoenixAnnotationSink

        self._sink = PhoenixAnnotationSink(
            base_url,
            headers=dict(headers) if headers else None,
            max_wait_for_span_s=max_wait_for_span_s,
            detect=detect,
        )
        self._redaction = redaction

    @property
    def is_phoenix(self) -> bool | None:
        """Whether the URL is Phoenix; None until a detecting sink has asked."""
        return self._sink.is_phoenix

    @property
    def stats(self) -> AnnotationStats:
        """The annotation counters (submitted, sent, dropped, failed, pending)."""
        return self._sink.stats

    def submit(
        self, target: SpanContext, result: EvalResult, annotator_kind: str, *, expected: Any = NOT_SET
    ) -> None:
        if result.status != "ok":
            return  # annotations describe scores; errors stay on the span
        clean = self._redaction.json
        metadata: dict[str, Any] = {
            "passed": result.passed,
            "threshold": result.threshold,
            "details": result.details,
            "status": result.status,
        }
        if expected is not NOT_SET and expected is not None:
            # Phoenix's span page has no place for an expected output: beside the score it is
            # one click away, instead of among the span's attributes.
            metadata["expected"] = capture_value(expected, _EXPECTED_CAPTURE).text
        self._sink.submit(
            format(target.span_id, "016x"),
            clean(result.name, sc.EVALUATION_NAME),
            score=result.score,
            label=clean(result.label, sc.EVALUATION_SCORE_LABEL),
            explanation=clean(result.explanation, sc.EVALUATION_EXPLANATION),
            annotator_kind=annotator_kind,
            metadata=clean(metadata, sc.EVALUATION_DETAILS),
            identifier="tracesim",
        )

    def force_flush(self, timeout_s: float) -> bool:
        return bool(self._sink.force_flush(timeout_s))

    def shutdown(self, timeout_s: float) -> bool:
        return bool(self._sink.shutdown(timeout_s))
