"""The official OTLP/HTTP span exporter, told apart from an outage: a refusal retrying cannot fix.

`RefusalAwareSpanExporter` is OpenTelemetry's ``OTLPSpanExporter`` with a session that
records each answer (`tracesim.exporters._refusals.AnswerRecorder`). What it adds:

- a refusal (400, 401, 403, 404, 405, 415, 422) is logged once per cause (a refusal of the
  configuration again after the backend has accepted a batch), with the backend's own message
  and what to change (`tracesim.exporters._refusals.advice`), instead of the SDK's
  ``Failed to export spans batch code: 422`` on every batch;
- a 413 (request too large) splits the batch in halves and sends each again; a single span the
  backend still finds too large is dropped and counted (``stats.too_large``). When a part is
  delivered and a later one meets an outage, the batch fails as a whole (to be retried), and
  the spans already delivered are left out when the same batch comes again: only what was not
  delivered is sent twice (at most 65 536 such spans are remembered);
- `last_refusal` tells the exporter around it (`SpoolingExporter`) that the last export on
  this thread was refused, and whether for the configuration (``lasting``) or for that batch;
- the request body is written by `tracesim.exporters._otlp_encode` (the same protobuf message
  as OpenTelemetry's encoder, at about a quarter of its CPU), then sent by the official
  exporter's own HTTP client (retries, compression, time-out, headers and its metrics
  unchanged). A batch it does not encode, and an OpenTelemetry exporter whose internals are not
  the ones this was written against (``_client``, ``_metrics``, ``_max_request_size``, from
  ``opentelemetry-exporter-otlp-proto-http`` 1.45), go through the official ``export`` whole.

What is kept: alone, the exporter drops a refused batch (counted in ``stats.dropped``); under
a `SpoolingExporter` (which calls `kept_in`), a batch refused for the configuration stays in
the spool for a run with the configuration fixed, and one refused for itself is dropped.

Example:
    >>> exporter = RefusalAwareSpanExporter(endpoint="http://127.0.0.1:4318/v1/traces")
    >>> exporter.stats
    RefusalStats(refused=0, dropped=0, too_large=0)
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.semconv.attributes.http_attributes import HTTP_RESPONSE_STATUS_CODE

from tracesim.exporters._otlp_encode import encode_or_fallback
from tracesim.exporters._refusals import NOT_TAKEN, PERMANENT, AnswerRecorder, Refusal, classify, describe

__all__ = ["RefusalAwareSpanExporter", "RefusalStats", "last_refusal", "post_body", "sends_own_body"]

_logger = logging.getLogger("tracesim")
_REMEMBERED = 65_536  # spans delivered by a split whose batch failed, left out when it comes again

SpanKey = tuple[int, int]


@dataclass(frozen=True)
class RefusalStats:
    """What the backend refused, as counted by a `RefusalAwareSpanExporter`."""

    refused: int
    """Export requests the backend refused (any status of ``PERMANENT``)."""
    dropped: int
    """Spans dropped because they were refused (not counting those a spool keeps)."""
    too_large: int
    """Spans dropped because the backend found a request of that span alone too large (413)."""


class RefusalAwareSpanExporter(OTLPSpanExporter):
    """``OTLPSpanExporter`` (OTLP/HTTP) that names a refusal once and splits a too-large batch.

    Takes the arguments of ``OTLPSpanExporter`` but ``session``.
    """

    def __init__(self, **kwargs: Any) -> None:
        self._recorder = AnswerRecorder(quiet=PERMANENT | NOT_TAKEN)
        super().__init__(session=self._recorder.session(), **kwargs)
        self._local = threading.local()
        self._lock = threading.Lock()
        self._said: set[tuple[int, str, bool]] = set()
        self._spool: str | None = None
        self._refused = self._dropped = self._too_large = 0
        self._lost_since_flush = False
        self._delivered_early: OrderedDict[SpanKey, None] = OrderedDict()
        self._own_body = sends_own_body(self)

    @property
    def stats(self) -> RefusalStats:
        """A snapshot of the counters."""
        with self._lock:
            return RefusalStats(self._refused, self._dropped, self._too_large)

    def kept_in(self, directory: str) -> None:
        """Say that a spool at ``directory`` keeps what the configuration has refused (see module)."""
        self._spool = directory

    def last_refusal(self) -> Refusal | None:
        """The refusal of this thread's last `export`, or None (delivered, or may be retried)."""
        refusal: Refusal | None = getattr(self._local, "refusal", None)
        return refusal

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self._local.refusal = None
        if not spans:  # a spool's health probe: an empty request (MLflow refuses it with a 400)
            self._recorder.begin()
            try:
                return super().export(spans)
            finally:
                self._recorder.end()
        with self._lock:
            left = []
            for span in spans:
                key = _key(span)
                if key in self._delivered_early:
                    del self._delivered_early[key]  # delivered by an earlier split: once is enough
                else:
                    left.append(span)
        if not left:
            return SpanExportResult.SUCCESS  # every span was delivered by an earlier split
        return self._send(left)

    def _send(self, spans: list[ReadableSpan]) -> SpanExportResult:
        self._recorder.begin()
        try:
            result = self._post(spans)
        finally:
            answer = self._recorder.last()
            self._recorder.end()
        if result is SpanExportResult.SUCCESS and self._said:
            with self._lock:  # accepted again: a refusal of the configuration is news again
                self._said = {key for key in self._said if not key[2]}
        if result is SpanExportResult.SUCCESS or answer is None:
            return result
        refusal = classify(answer, "spans")
        if refusal is None:
            return result  # an outage, or a busy backend: the caller may retry
        with self._lock:
            self._refused += 1
        if refusal.status == 413:
            return self._split(spans, refusal)
        self._local.refusal = refusal
        if refusal.lasting and self._spool:
            kept = (
                f"refused batches stay in spool {self._spool} (bounded by spool_max_bytes) "
                "for a run with the configuration fixed"
            )
        else:
            with self._lock:
                self._dropped += len(spans)
                self._lost_since_flush = True
            kept = "that batch is dropped"
            if refusal.lasting:
                kept = "refused batches are dropped (counted in stats)"
        self._say_once(refusal, kept)
        return SpanExportResult.FAILURE

    def _post(self, spans: list[ReadableSpan]) -> SpanExportResult:
        """``OTLPSpanExporter.export`` with the body written by `encode_or_fallback`."""
        if not self._own_body or self._shutdown:
            return super().export(spans)
        body = encode_or_fallback(spans)
        if body is None:  # OpenTelemetry's encoder cannot encode it either: its export says so
            return super().export(spans)
        sent = post_body(self, body, len(spans))
        if sent is None:
            return super().export(spans)  # too large to send: the official exporter drops and counts it
        return SpanExportResult.SUCCESS if sent else SpanExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """False when spans were dropped as refused since the last call (nothing is buffered here)."""
        with self._lock:
            lost, self._lost_since_flush = self._lost_since_flush, False
        return not lost

    def _split(self, spans: list[ReadableSpan], refusal: Refusal) -> SpanExportResult:
        if len(spans) == 1:
            with self._lock:
                self._too_large += 1
                self._lost_since_flush = True
            self._say_once(refusal, "a span too large on its own is dropped (counted in stats)")
            return SpanExportResult.SUCCESS  # nothing to retry: the batch's other spans were sent
        half = len(spans) // 2
        delivered: list[ReadableSpan] = []
        dropped: Refusal | None = None
        for part in (spans[:half], spans[half:]):
            self._local.refusal = None
            if self._send(part) is SpanExportResult.SUCCESS:
                delivered.extend(part)
                continue
            refused = self._local.refusal
            if refused is None or refused.lasting:
                # An outage or the configuration: the batch will come again (from the spool):
                # what was delivered of it is then left out.
                self._remember(delivered)
                return SpanExportResult.FAILURE
            dropped = refused  # this part refused for itself (dropped): the next one may be taken
        self._local.refusal = dropped
        return SpanExportResult.SUCCESS if dropped is None else SpanExportResult.FAILURE

    def _remember(self, delivered: list[ReadableSpan]) -> None:
        with self._lock:
            for span in delivered:
                self._delivered_early[_key(span)] = None
            while len(self._delivered_early) > _REMEMBERED:
                self._delivered_early.popitem(last=False)

    def _say_once(self, refusal: Refusal, kept: str) -> None:
        key = (refusal.status, refusal.advice, refusal.lasting)
        with self._lock:
            if key in self._said:
                return
            self._said.add(key)
        _logger.warning("tracesim: %s; %s (said once)", describe("spans", refusal), kept)


def sends_own_body(exporter: Any) -> bool:
    """Whether an official OTLP/HTTP exporter has the internals `post_body` sends through (those
    of ``opentelemetry-exporter-otlp-proto-http`` 1.45); when not, it exports by itself."""
    client, metrics = getattr(exporter, "_client", None), getattr(exporter, "_metrics", None)
    return bool(
        callable(getattr(client, "export", None))
        and callable(getattr(metrics, "export_operation", None))
        and isinstance(getattr(exporter, "_max_request_size", None), int)
        and isinstance(getattr(exporter, "_shutdown", None), bool)
    )


def post_body(exporter: Any, body: bytes, count: int) -> bool | None:
    """Send ``body`` (``count`` spans or records, encoded by tracesim) with an official OTLP/HTTP
    exporter's own client (its retries, compression, time-out, headers) and metrics: True when
    the backend took it, False when not, None when it is too large for the exporter's
    ``max_request_size`` (its own ``export`` then drops it and says so)."""
    if 0 < exporter._max_request_size < len(body):
        return None
    with exporter._metrics.export_operation(count) as result:
        answer = exporter._client.export(body)
        if not answer.success:
            result.error = answer.error
            status = answer.status_code
            result.error_attrs = {HTTP_RESPONSE_STATUS_CODE: status} if status is not None else None
            return False
    return True


def _key(span: ReadableSpan) -> SpanKey:
    context = span.get_span_context()
    return (context.trace_id, context.span_id) if context is not None else (0, id(span))


def last_refusal(exporter: object) -> Refusal | None:
    """The refusal of the last export of ``exporter`` on this thread; None for other exporters."""
    read = getattr(exporter, "last_refusal", None)
    refusal = read() if callable(read) else None
    return refusal if isinstance(refusal, Refusal) else None
