"""Export that loses nothing while the backend is down: spool to disk, re-send later.

`SpoolingExporter` wraps any OpenTelemetry ``SpanExporter`` (the official OTLP/HTTP and gRPC
ones in practice). ``export`` never waits on the network: it hands the batch to one
background sender and returns. The sender delivers batches in order through the wrapped
exporter (which retries within its own time-out); a batch it cannot deliver is written to a
spool directory as an OTLP/JSON line and re-sent, in order, with exponential backoff. While
the backend is known to be down (the circuit is open) new batches go straight to disk, so the
``BatchSpanProcessor`` queue in front never fills up and drops spans, not even during the
first time-out that reveals the outage.

A refusal is not an outage. When the wrapped exporter reports one (the OTLP/HTTP exporter of
`tracesim.exporters.otlp_exporter` does: a 4xx retrying cannot fix, see
`tracesim.exporters._otlp_http`), a batch refused for the configuration (a missing header,
credentials, the path) stays in the spool, as do the batches after it, bounded by
``max_bytes``, so that a run with the configuration fixed delivers them; this process tries the
oldest again only every ``refusal_retry_s``, never probes the backend meanwhile, and
``force_flush`` returns False at once. A batch refused for itself (malformed) is deleted.
"""

from __future__ import annotations

import logging
import math
import os
import random
import threading
import time
from collections.abc import Sequence

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracesim._errors import ConfigError
from tracesim._internal_errors import CauseLog, internal_error, os_cause
from tracesim.exporters._otlp_http import last_refusal
from tracesim.exporters._refusals import Refusal
from tracesim.exporters._spool_store import (
    Encoded,
    SpoolEntry,
    SpoolStats,
    SpoolStore,
    claim,
    encode_batch,
)
from tracesim.tracefile._sdk_spans import readable_spans

__all__ = ["SpoolStats", "SpoolingExporter"]

_BUSY_S = 1.0  # a backend that accepted a batch this recently is busy, not down
_logger = logging.getLogger("tracesim")

DEFAULT_MAX_BYTES = 256 * 1024 * 1024
DEFAULT_SHUTDOWN_S = 5.0
# What a damaged spool file raises while it is parsed and decoded.
_DAMAGED = (ValueError, KeyError, TypeError, AttributeError, OverflowError, RecursionError)


class SpoolingExporter(SpanExporter):
    """Wrap ``inner`` so that batches it cannot deliver are kept on disk and re-sent later.

    ``export`` returns ``SUCCESS`` once a batch is queued for the sender or safely on disk,
    and ``FAILURE`` only when some of it had to be dropped. ``force_flush`` prompts a delivery
    attempt at once and waits, within its deadline, until every waiting batch is delivered or
    the backend is found down (``TracerProvider.force_flush`` does not call it: call
    ``exporter.force_flush()`` or ``tracesim.force_flush()``). ``shutdown`` keeps to its
    deadline (see `set_shutdown_deadline`): it stops the sender and writes what is unsent to
    disk for the next process that opens the same directory.

    Args:
        inner: The exporter that talks to the backend.
        directory: Spool directory, created if missing.
        max_bytes: Bound on the spool's size on disk; when full, the oldest batches are
            deleted first (counted in `stats`, logged once per burst). A batch larger than
            the spool is split, so its newest spans are kept; only a single span larger than
            the whole spool is dropped.
        max_in_memory: Batches that may wait in memory for the sender.
        backpressure_s: While the backend answers, how long the export thread waits for
            room in memory before it writes a batch to disk instead (0: at once).
        initial_backoff_s: The first re-send backoff, doubled after each failure.
        max_backoff_s: The longest re-send backoff.
        max_rejections: A batch that fails this many times while the backend answers an empty
            export (a health probe) is deleted as rejected, so one bad batch cannot block
            the others forever.
        refusal_retry_s: While the backend refuses the configuration, how long between two
            attempts with the oldest batch (one request each; a backend whose configuration is
            fixed meanwhile gets the spool).

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
        max_in_memory: int = 4,
        backpressure_s: float = 5.0,
        initial_backoff_s: float = 1.0,
        max_backoff_s: float = 30.0,
        max_rejections: int = 3,
        refusal_retry_s: float = 300.0,
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
        self._backpressure_s = backpressure_s
        self._last_success = -math.inf  # monotonic time of the last batch the backend accepted
        self._initial_backoff_s = initial_backoff_s
        self._max_backoff_s = max_backoff_s
        self._max_rejections = max_rejections
        self._refusal_retry_s = refusal_retry_s
        self._refusal: Refusal | None = None  # the backend refuses the configuration
        self._refused = 0
        self._refused_since_flush = False  # a batch deleted as refused: the next flush says False
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._shutdown = self._stopping = False
        # Files left by an earlier run mean "try to send them now", not "backend down".
        self._circuit_open = False
        self._backoff_s = initial_backoff_s
        self._next_attempt = 0.0
        # Attempts are numbered; a flush waits for one that starts after it asked.
        self._attempts = self._wanted_after = self._down_attempt = self._flushes = 0
        self._shutdown_deadline: float | None = None
        self._rejections: dict[str, int] = {}
        self._delivered = self._spooled = self._resent = self._dropped = self._rejected = 0
        self._burst_dropped = 0
        self._problems = CauseLog()  # disk trouble: once per cause, again after recovery
        self._too_big_logged = False
        self._persist_lock = threading.Lock()
        self._worker: threading.Thread | None = None
        self._worker_pid = 0
        keeps = getattr(inner, "kept_in", None)
        if callable(keeps):  # the inner exporter's refusal message says where refused batches are
            keeps(str(self._store.directory))
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
                refused=self._refused,
            )

    @property
    def refusal(self) -> Refusal | None:
        """The backend's refusal of the configuration, while it lasts (None otherwise)."""
        with self._lock:
            return self._refusal

    # ------------------------------------------------------------ caller side

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Queue ``spans`` for the sender, or write them to the spool when the backend is down."""
        if self._shutdown:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        with self._lock:
            # A healthy backend that is only busy gets back-pressure: the export thread (never
            # the application's) waits for the sender, as OpenTelemetry's own exporter would,
            # instead of writing batches to disk and reading them back. The disk is for a
            # backend that is down or hangs (no answer for _BUSY_S), or one so slow that a
            # batch waited `backpressure_s`.
            deadline = time.monotonic() + self._backpressure_s
            while (
                not self._circuit_open
                and not self._shutdown
                and self._store.in_memory >= self._max_in_memory
                and time.monotonic() - self._last_success < _BUSY_S  # answering, only busy
                and (left := deadline - time.monotonic()) > 0
            ):
                self._ensure_worker()
                self._changed.wait(min(left, _BUSY_S / 4))
            if not self._circuit_open and self._store.in_memory < self._max_in_memory:
                self._store.add_in_memory(list(spans))
                self._ensure_worker()
                self._changed.notify_all()
                return SpanExportResult.SUCCESS
        return self._write(spans)

    def _write(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        encoded = self._encode(spans)
        with self._lock:
            kept = self._admit(encoded, None)
            written = sum(n for _, n in kept)
            if kept:
                try:
                    self._store.add_on_disk(kept)
                except OSError as exc:
                    self._write_failed(exc)
                    self._dropped += written
                    return SpanExportResult.FAILURE
                self._problems.recovered("tracesim: writing to spool %s works again", self.directory)
                self._spooled += written
                self._ensure_worker()
                self._changed.notify_all()
        return SpanExportResult.SUCCESS if written == len(spans) else SpanExportResult.FAILURE

    def _encode(self, spans: Sequence[ReadableSpan], room: int | None = None) -> Encoded:
        try:
            return encode_batch(spans, self.max_bytes, room)
        except Exception:  # a bug of ours: logged once (raised under our tests)
            internal_error("spool encoder")
            with self._lock:
                self._dropped += len(spans)
            return Encoded([])

    def _write_failed(self, exc: OSError) -> None:
        self._problems.failed(
            os_cause(exc),
            "tracesim: cannot write to spool %s (%s); batches that cannot wait in memory are dropped "
            "(counted in stats.dropped, logged once per cause)",
            self.directory,
            exc,
        )

    def _admit(self, encoded: Encoded, entry: SpoolEntry | None) -> list[tuple[bytes, int]]:
        """Count what ``encoded`` left out and make room for the rest; the pieces to write.

        Call under the lock.
        """
        self._drop_full(encoded.no_room)
        self._dropped += encoded.too_big
        if encoded.too_big and not self._too_big_logged:
            self._too_big_logged = True
            _logger.warning(
                "tracesim: a span larger than the whole spool (%d bytes) was dropped "
                "(counted in stats.dropped, logged once)",
                self.max_bytes,
            )
        kept, dropped = self._store.make_room(encoded.pieces, entry, self.max_bytes)
        self._drop_full(dropped)
        return kept

    def _drop_full(self, spans: int) -> None:
        if not spans:
            return
        self._dropped += spans
        if not self._burst_dropped:
            _logger.warning(
                "tracesim: spool %s is full (%d bytes); deleting the oldest batches "
                "(counted in stats.dropped, logged again when the spool drains)",
                self.directory,
                self.max_bytes,
            )
        self._burst_dropped += spans

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
                head = self._store.entries[0]
                batch = head.batch  # read under the lock: shutdown may write it to disk meanwhile
                self._attempts += 1
                attempt = self._attempts
            try:
                try:
                    delivered = self._send(head, batch)
                except Exception:  # a bug of ours: logged once (raised under our tests); the batch stays
                    delivered = False
                    internal_error("spool sender")
                if not delivered:
                    refusal = last_refusal(self._inner)
                    if refusal is None:
                        self._on_failure(head, attempt)
                    else:
                        self._on_refusal(head, attempt, refusal)
            finally:
                with self._lock:
                    self._changed.notify_all()

    def _due(self) -> bool:
        return bool(self._store.entries) and time.monotonic() >= self._next_attempt

    def _send(self, head: SpoolEntry, batch: Sequence[ReadableSpan] | None) -> bool:
        if batch is not None:
            if self._inner.export(batch) is not SpanExportResult.SUCCESS:
                return False
            with self._lock:
                self._on_success(head, resent=False)  # and delete its file(s), if any by now
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
                    self._on_success(head, resent=True)  # unlinked while still locked
                return True
        except _DAMAGED as exc:
            _logger.error("tracesim: spool file %s is damaged (%r); deleted", head.name, exc)
            with self._lock:
                self._store.remove(head)
                self._rejected += head.spans
            return True

    def _on_success(self, head: SpoolEntry, *, resent: bool) -> None:
        self._last_success = time.monotonic()
        evicted = head.spans - self._store.remove(head)
        if evicted:  # deleted for room while it was being sent, yet delivered: not lost after all
            self._dropped -= evicted
            self._burst_dropped = max(0, self._burst_dropped - evicted)
        self._delivered += head.spans
        if resent:
            self._resent += head.spans
        self._rejections.pop(head.name, None)
        self._backoff_s = self._initial_backoff_s
        self._next_attempt = 0.0
        if self._circuit_open:
            _logger.info("tracesim: the trace backend accepts batches again; sending the spool")
            self._circuit_open = False
        self._refusal = None
        if not self._store.entries and self._burst_dropped:
            _logger.warning(
                "tracesim: spool drained; %d spans were deleted unsent while it was full", self._burst_dropped
            )
            self._burst_dropped = 0

    def _on_refusal(self, head: SpoolEntry, attempt: int, refusal: Refusal) -> None:
        # The inner exporter has said it once, with what to change. Not an outage: no health
        # probe, no backoff race; the batch stays (the configuration) or goes (the batch).
        with self._lock:
            self._refused += head.spans
            if not refusal.lasting:
                self._store.remove(head)
                self._rejections.pop(head.name, None)
                self._rejected += head.spans
                self._refused_since_flush = True
                return
            self._refusal = refusal
            self._circuit_open = True  # new batches go to disk, bounded as in an outage
            self._down_attempt = attempt  # answers the flushes waiting
            self._next_attempt = time.monotonic() + self._refusal_retry_s
        self._persist_in_memory()

    def _on_failure(self, head: SpoolEntry, attempt: int) -> None:
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
            else:
                self._down_attempt = attempt  # answers the flushes that asked before it started
            if not self._circuit_open:
                _logger.warning(
                    "tracesim: the trace backend did not accept a batch; spooling to %s until it does",
                    self.directory,
                )
            self._circuit_open = True
            # A flush that asked after this attempt started gets one right away, and so does a
            # waiting flush while a healthy backend refuses a batch (until it is rejected).
            # Otherwise jitter, so processes sharing a backend do not retry in lock-step.
            now = self._wanted_after >= attempt or (healthy and self._flushes > 0)
            delay = 0.0 if now else self._backoff_s * random.uniform(1.0, 1.2)
            self._next_attempt = time.monotonic() + delay
            self._backoff_s = min(self._backoff_s * 2, self._max_backoff_s)
        self._persist_in_memory()

    def _persist_in_memory(self) -> None:
        """Write every batch still in memory to disk, the one being sent included."""
        with self._persist_lock:  # one writer at a time: the sender's and shutdown's would race
            with self._lock:
                waiting = [e for e in self._store.entries if not e.on_disk]
            for entry in reversed(waiting):  # newest first: they have the first claim on the room
                with self._lock:
                    room = self._store.room_for(entry, self.max_bytes)
                assert entry.batch is not None
                encoded = self._encode(entry.batch, room)
                with self._lock:
                    if entry.on_disk or entry not in self._store.entries:
                        continue  # delivered meanwhile
                    kept = self._admit(encoded, entry)
                    try:
                        self._store.persist(entry, kept)
                    except OSError as exc:
                        self._write_failed(exc)  # stays in memory; lost only if the process ends
                        continue
                    self._problems.recovered("tracesim: writing to spool %s works again", self.directory)
                    self._spooled += sum(n for _, n in kept)

    # ------------------------------------------------------------ flush and shutdown

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Try now to deliver everything waiting; True if nothing is left.

        Prompts an attempt at once, also while the backend is considered down, and waits
        within the deadline until everything is delivered or an attempt that started after
        this call finds the backend down (a refused connection fails fast; a backend that
        hangs is waited for until the deadline). What is not delivered is then on disk
        before this returns, so a process may exit right after. While the backend refuses the
        configuration (`refusal`), returns False at once, sending nothing; and False once after
        a batch the backend refused for itself was deleted.
        """
        drained = self._drain(time.monotonic() + timeout_millis / 1000)
        with self._lock:
            refused, self._refused_since_flush = self._refused_since_flush, False
        if drained:
            return not refused
        self._persist_in_memory()
        return False

    def settle(self, timeout_s: float) -> None:
        """Return once every batch given to `export` so far is delivered or on disk.

        For an exporter whose caller says the spans are kept once this returns (a scoring
        worker process acknowledges its calls to the host then): no delivery attempt is
        prompted and the backoff is kept, so a backend that is down costs nothing here.
        Batches the sender has not delivered within ``timeout_s`` (a backend that hangs) are
        written to disk before this returns.

        Example:
            >>> exporter.export(spans)  # doctest: +SKIP
            >>> exporter.settle(2.0)  # delivered, or in the spool directory  # doctest: +SKIP
        """
        deadline = time.monotonic() + timeout_s
        with self._lock:
            while self._store.in_memory and not self._stopping:
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self._ensure_worker()
                self._changed.wait(left)
            waiting = self._store.in_memory
        if waiting:
            self._persist_in_memory()

    def _drain(self, deadline: float, *, until_down: bool = False) -> bool:
        with self._lock:
            if not self._store.entries:
                return True
            if self._stopping or self._refusal is not None:
                return False
            asked = self._attempts  # attempts numbered above this started after the request
            self._wanted_after = max(self._wanted_after, asked)
            self._next_attempt = min(self._next_attempt, time.monotonic())
            self._ensure_worker()
            self._changed.notify_all()
            self._flushes += 1
            try:
                while (
                    self._store.entries
                    and not self._stopping
                    and self._down_attempt <= asked
                    and self._refusal is None
                    and not (until_down and self._circuit_open)
                ):
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return False
                    self._changed.wait(remaining)
                return not self._store.entries
            finally:
                self._flushes -= 1

    def set_shutdown_deadline(self, deadline: float | None) -> None:
        """Make `shutdown` return by ``deadline``, a `time.monotonic` value (None: no such bound).

        The SDK's ``BatchSpanProcessor`` calls ``shutdown`` with its own 30 s default; an owner
        with a deadline of its own (``tracesim.shutdown``) sets it here before shutting the
        processor down.

        Example:
            >>> import time
            >>> exporter.set_shutdown_deadline(time.monotonic() + 2.0)  # doctest: +SKIP
            >>> provider.shutdown()  # returns within about 2 s  # doctest: +SKIP
        """
        with self._lock:
            self._shutdown_deadline = deadline

    def shutdown(self, timeout_millis: float | None = None) -> None:
        """Write every unsent batch to disk, let the sender deliver until the deadline, stop.

        The deadline is the earlier of ``timeout_millis`` from now (default 5 s) and the one
        given to `set_shutdown_deadline`. Batches still in memory, the one being sent
        included, go to disk first (the one step not cut short: at most ``max_in_memory``
        batches), so nothing is lost however the rest ends; then, while the backend is up,
        the sender delivers from disk, and it is waited for only until the deadline.
        """
        start = time.monotonic()
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True  # no new batches from here on
            limit = self._shutdown_deadline
        deadline = start + (timeout_millis / 1000 if timeout_millis is not None else DEFAULT_SHUTDOWN_S)
        deadline = min(deadline, limit) if limit is not None else deadline
        self._persist_in_memory()
        with self._lock:
            circuit_open = self._circuit_open
        if not circuit_open:
            self._drain(deadline, until_down=True)
        with self._lock:
            self._stopping = True
            self._changed.notify_all()
            worker = self._worker
        self._inner.shutdown()  # cuts the inner exporter's retry waits short
        self._persist_in_memory()  # a batch that raced with the start of shutdown
        if worker is not None and worker is not threading.current_thread():
            worker.join(max(0.0, deadline - time.monotonic()))  # a batch it delivers now leaves the disk
        with self._lock:
            if self._store.entries:
                _logger.info(
                    "tracesim: %d unsent spans stay in spool %s for the next run",
                    self._store.spans,
                    self.directory,
                )
