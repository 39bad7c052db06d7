"""Export that loses nothing while the backend is down: spool to disk, re-send later.

`SpoolingExporter` wraps any OpenTelemetry ``SpanExporter`` (the official OTLP/HTTP and gRPC
ones in practice). ``export`` never waits on the network: it hands the batch to one
background sender and returns. The sender delivers batches in order through the wrapped
exporter (which retries within its own time-out); a batch it cannot deliver is written to a
spool directory as an OTLP/JSON line and re-sent, in order, with exponential backoff. While
the backend is known to be down (the circuit is open) new batches go straight to disk, so the
``BatchSpanProcessor`` queue in front never fills up and drops spans, not even during the
first time-out that reveals the outage.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracesim._errors import ConfigError
from tracesim._guard import internal_error
from tracesim.exporters._otlp_decode import readable_spans
from tracesim.exporters._spool_store import SpoolEntry, SpoolStore, claim

__all__ = ["SpoolStats", "SpoolingExporter"]

_logger = logging.getLogger("tracesim")

DEFAULT_MAX_BYTES = 256 * 1024 * 1024


@dataclass(frozen=True)
class SpoolStats:
    """Counters of a `SpoolingExporter`, in spans."""

    delivered: int
    """Spans the backend has accepted, sent from memory or from disk."""
    spooled: int
    """Spans written to disk (backend down, or too many batches waiting)."""
    resent: int
    """Spans from disk that the backend has accepted (part of ``delivered``)."""
    dropped: int
    """Spans deleted unsent: spool full (oldest first), or a batch that could not be written."""
    rejected: int
    """Spans the backend refused repeatedly while healthy, or unreadable spool files."""
    pending: int
    """Spans waiting now, in memory and on disk."""
    pending_bytes: int
    """Bytes the waiting batches take on disk."""
    circuit_open: bool
    """True while the backend is considered down."""


class SpoolingExporter(SpanExporter):
    """Wrap ``inner`` so that batches it cannot deliver are kept on disk and re-sent later.

    ``export`` returns ``SUCCESS`` once a batch is queued for the sender or safely on disk,
    and ``FAILURE`` only when it had to be dropped. ``force_flush`` waits, within its
    deadline, until every waiting batch is delivered (``TracerProvider.force_flush`` does not
    call it: call ``exporter.force_flush()`` or ``tracesim.force_flush()`` to wait for
    delivery). ``shutdown`` gives the sender a moment to finish, stops it, and writes what is
    unsent to disk for the next process that opens the same directory.

    Args:
        inner: The exporter that talks to the backend.
        directory: Spool directory, created if missing.
        max_bytes: Bound on the spool's size on disk; when full, the oldest batches are
            deleted first (counted in `stats`, logged once per burst).
        max_in_memory: Batches that may wait in memory for the sender; more go to disk.
        initial_backoff_s / max_backoff_s: Re-send backoff, doubled after each failure.
        max_rejections: A batch that fails this many times while the backend answers an empty
            export (a health probe) is deleted as rejected, so one bad batch cannot block
            the others forever.

    Example:
        >>> from opentelemetry.sdk.trace.export import BatchSpanProcessor
        >>> from tracesim.exporters import SpoolingExporter, otlp_exporter
        >>> exporter = SpoolingExporter(otlp_exporter(endpoint="http://127.0.0.1:6006"), ".tracesim/spool")
        >>> processor = BatchSpanProcessor(exporter)  # doctest: +SKIP
        >>> exporter.stats.pending  # doctest: +SKIP
        0
    """

    def __init__(
        self,
        inner: SpanExporter,
        directory: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        max_in_memory: int = 8,
        initial_backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        max_rejections: int = 3,
    ) -> None:
        if max_bytes <= 0:
            raise ConfigError("spool_max_bytes", max_bytes, "a positive number of bytes")
        try:
            self._store = SpoolStore(directory)
        except OSError as exc:
            raise ConfigError("spool_dir", os.fspath(directory), f"a writable directory ({exc})") from None
        self._inner = inner
        self.max_bytes = max_bytes
        self._max_in_memory = max_in_memory
        self._initial_backoff_s = initial_backoff_s
        self._max_backoff_s = max_backoff_s
        self._max_rejections = max_rejections
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._shutdown = self._stopping = False
        # Files left by an earlier run mean "try to send them now", not "backend down".
        self._circuit_open = False
        self._backoff_s = initial_backoff_s
        self._next_attempt = 0.0
        self._flush_requested = False  # a flush wants an attempt that starts after it asked
        self._sending: SpoolEntry | None = None
        self._rejections: dict[str, int] = {}
        self._delivered = self._spooled = self._resent = self._dropped = self._rejected = 0
        self._burst_dropped = 0
        self._write_error_logged = False
        self._worker: threading.Thread | None = None
        self._worker_pid = 0
        if self._store.entries:
            _logger.info(
                "tracesim: %d spans left in spool %s by an earlier run will be re-sent",
                self._store.spans,
                self._store.directory,
            )
            self._ensure_worker()

    @property
    def inner(self) -> SpanExporter:
        """The wrapped exporter."""
        return self._inner

    @property
    def directory(self) -> str:
        """The spool directory."""
        return str(self._store.directory)

    @property
    def stats(self) -> SpoolStats:
        """A snapshot of the counters."""
        with self._lock:
            return SpoolStats(
                delivered=self._delivered,
                spooled=self._spooled,
                resent=self._resent,
                dropped=self._dropped,
                rejected=self._rejected,
                pending=self._store.spans,
                pending_bytes=self._store.bytes,
                circuit_open=self._circuit_open,
            )

    # ------------------------------------------------------------ caller side

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Queue ``spans`` for the sender, or write them to the spool when the backend is down."""
        if self._shutdown:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        with self._lock:
            if not self._circuit_open and self._store.in_memory < self._max_in_memory:
                self._store.add_in_memory(list(spans))
                self._ensure_worker()
                self._changed.notify_all()
                return SpanExportResult.SUCCESS
        return self._write(spans)

    def _write(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        data = self._encode(spans)
        if data is None:
            return self._count_dropped(len(spans))
        with self._lock:
            self._make_room(len(data))
            try:
                self._store.add_on_disk(data, len(spans))
            except OSError as exc:
                self._log_write_error(exc)
                self._dropped += len(spans)
                return SpanExportResult.FAILURE
            self._write_error_logged = False
            self._spooled += len(spans)
            self._ensure_worker()
            self._changed.notify_all()
        return SpanExportResult.SUCCESS

    def _encode(self, spans: Sequence[ReadableSpan]) -> bytes | None:
        try:
            data = (json.dumps(encode_spans(spans).to_dict(), separators=(",", ":")) + "\n").encode()
        except Exception:
            _logger.exception("tracesim: could not encode %d spans for the spool; dropped", len(spans))
            return None
        if len(data) > self.max_bytes:
            _logger.warning(
                "tracesim: a batch of %d spans (%d bytes) is larger than the spool (%d bytes); dropped",
                len(spans),
                len(data),
                self.max_bytes,
            )
            return None
        return data

    def _count_dropped(self, spans: int) -> SpanExportResult:
        with self._lock:
            self._dropped += spans
        return SpanExportResult.FAILURE

    def _log_write_error(self, exc: OSError) -> None:
        if not self._write_error_logged:
            self._write_error_logged = True
            _logger.error("tracesim: cannot write to spool %s (%s); dropping batches", self.directory, exc)

    def _make_room(self, size: int) -> None:
        # Oldest files first, but never the one being sent right now.
        while self._store.bytes + size > self.max_bytes:
            victim = next((e for e in self._store.entries if e.on_disk and e is not self._sending), None)
            if victim is None:
                return  # only the in-flight file is left; it is deleted or kept shortly
            self._store.remove(victim)
            self._dropped += victim.spans
            if not self._burst_dropped:
                _logger.warning(
                    "tracesim: spool %s is full (%d bytes); deleting the oldest batches "
                    "(counted in stats.dropped, logged again when the spool drains)",
                    self.directory,
                    self.max_bytes,
                )
            self._burst_dropped += victim.spans

    def _ensure_worker(self) -> None:
        # Lazily, and again after a fork (threads do not survive it).
        if self._worker is None or self._worker_pid != os.getpid() or not self._worker.is_alive():
            self._worker_pid = os.getpid()
            self._worker = threading.Thread(target=self._run, name="tracesim-spool", daemon=True)
            self._worker.start()

    # ------------------------------------------------------------ sender side

    def _run(self) -> None:
        while True:
            with self._lock:
                while not self._stopping and not self._due():
                    wait = self._next_attempt - time.monotonic() if self._store.entries else None
                    self._changed.wait(wait)
                if self._stopping:
                    return
                head = self._sending = self._store.entries[0]
                self._flush_requested = False
            try:
                try:
                    delivered = self._send(head)
                except Exception:  # a bug of ours: logged once (raised under our tests); the batch stays
                    delivered = False
                    internal_error("spool sender")
                if not delivered:
                    self._on_failure(head)
            finally:
                with self._lock:
                    self._sending = None
                    self._changed.notify_all()

    def _due(self) -> bool:
        return bool(self._store.entries) and time.monotonic() >= self._next_attempt

    def _send(self, head: SpoolEntry) -> bool:
        if head.batch is not None:
            if self._inner.export(head.batch) is not SpanExportResult.SUCCESS:
                return False
            with self._lock:
                self._store.remove(head)
                self._on_success(head, resent=False)
            return True
        try:
            with claim(self._store.path(head)) as requests:
                if requests is None:  # gone, or another process is sending it
                    with self._lock:
                        self._store.remove(head, unlink=False)
                    return True
                spans = [span for request in requests for span in readable_spans(request)]
                if self._inner.export(spans) is not SpanExportResult.SUCCESS:
                    return False
                with self._lock:
                    self._store.remove(head)  # unlinked while still locked
                    self._on_success(head, resent=True)
                return True
        except (ValueError, KeyError, TypeError) as exc:
            _logger.error("tracesim: spool file %s is damaged (%r); deleted", head.name, exc)
            with self._lock:
                self._store.remove(head)
                self._rejected += head.spans
            return True

    def _on_success(self, head: SpoolEntry, *, resent: bool) -> None:
        self._delivered += head.spans
        if resent:
            self._resent += head.spans
        self._rejections.pop(head.name, None)
        self._backoff_s = self._initial_backoff_s
        self._next_attempt = 0.0
        if self._circuit_open:
            _logger.info("tracesim: the trace backend accepts batches again; sending the spool")
            self._circuit_open = False
        if not self._store.entries and self._burst_dropped:
            _logger.warning(
                "tracesim: spool drained; %d spans were deleted unsent while it was full", self._burst_dropped
            )
            self._burst_dropped = 0

    def _on_failure(self, head: SpoolEntry) -> None:
        # Down, or does it refuse this one batch? An empty export is a valid OTLP request
        # that a healthy backend accepts (Phoenix: 200 over HTTP and gRPC).
        healthy = not self._stopping and self._inner.export([]) is SpanExportResult.SUCCESS
        with self._lock:
            if healthy:
                count = self._rejections[head.name] = self._rejections.get(head.name, 0) + 1
                if count >= self._max_rejections:
                    _logger.error(
                        "tracesim: the trace backend refused a batch of %d spans %d times while healthy; "
                        "deleted",
                        head.spans,
                        count,
                    )
                    self._store.remove(head)
                    self._rejections.pop(head.name, None)
                    self._rejected += head.spans
                    return
            self._sending = None  # the attempt is over: the head may be dropped if the spool is full
            if not self._circuit_open:
                _logger.warning(
                    "tracesim: the trace backend did not accept a batch; spooling to %s until it does",
                    self.directory,
                )
            self._circuit_open = True
            # Jitter, so processes sharing a backend do not retry in lock-step; a flush that
            # arrived during this attempt gets one more right away.
            delay = 0.0 if self._flush_requested else self._backoff_s * random.uniform(1.0, 1.2)
            self._next_attempt = time.monotonic() + delay
            self._backoff_s = min(self._backoff_s * 2, self._max_backoff_s)
        self._persist_in_memory()

    def _persist_in_memory(self) -> None:
        """Write every batch still waiting in memory to disk (backend down, or shutting down)."""
        with self._lock:
            waiting = [e for e in self._store.entries if not e.on_disk]
        for entry in waiting:
            assert entry.batch is not None
            data = self._encode(entry.batch)
            with self._lock:
                if data is None:
                    self._store.remove(entry)
                    self._dropped += entry.spans
                    continue
                self._make_room(len(data))
                try:
                    self._store.persist(entry, data)
                except OSError as exc:
                    self._log_write_error(exc)  # stays in memory; lost only if the process ends
                    continue
                self._spooled += entry.spans

    # ------------------------------------------------------------ flush and shutdown

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Try to deliver everything waiting within the deadline; True if nothing is left."""
        return self._drain(time.monotonic() + timeout_millis / 1000, until_down=False)

    def _drain(self, deadline: float, *, until_down: bool) -> bool:
        with self._lock:
            if not self._store.entries:
                return True
            if self._stopping:
                return False
            self._next_attempt = min(self._next_attempt, time.monotonic())  # one attempt now
            self._flush_requested = True
            self._ensure_worker()
            self._changed.notify_all()
            while self._store.entries and not self._stopping and not (until_down and self._circuit_open):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
            return not self._store.entries

    def shutdown(self, timeout_millis: int = 5_000) -> None:
        """Stop sending; whatever is still unsent is written to the spool directory."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True  # no new batches from here on
            circuit_open = self._circuit_open
        if not circuit_open:  # the backend was fine: give the sender a moment to finish
            self._drain(time.monotonic() + min(timeout_millis, 5_000) / 1000, until_down=True)
        with self._lock:
            self._stopping = True
            self._changed.notify_all()
            worker = self._worker
        # Shutting the inner exporter down cuts its retry waits short.
        self._inner.shutdown()
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=10.0)
        self._persist_in_memory()
        with self._lock:
            if self._store.entries:
                _logger.info(
                    "tracesim: %d unsent spans stay in spool %s for the next run",
                    self._store.spans,
                    self.directory,
                )
