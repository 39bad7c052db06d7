"""The queue of the results' log records: OpenTelemetry's batch processor, with every record it
loses counted.

`tracesim._scoring._sinks.LogEventSink` sends each result as a log record through
OpenTelemetry's ``BatchLogRecordProcessor``, so the thread that made the result never waits on
a backend. When that processor's bounded queue is full (a backend that is slow or down, a burst
of results), the SDK drops the record, logs ``Queue full`` once per record and counts it
nowhere anyone reads. `ResultLogQueue` puts the gate of `tracesim._export_queue.ExportQueue` in
front of it: a token per record admitted, given back when the SDK's thread takes the record
for export. A record that finds the gate full is dropped at once and counted
(``tracesim.scoring_stats().log_records_dropped``), and the first such drop is logged, once. So
are the records still queued when the queue shuts down past its deadline.

Example:
    >>> from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter
    >>> queue = ResultLogQueue(InMemoryLogRecordExporter(), queue_size=100, name="memory")
    >>> queue.dropped
    0
    >>> queue.close(1.0)
"""

from __future__ import annotations

import collections
import logging
import threading
import time
import weakref
from collections.abc import Sequence
from typing import Any, Final

from opentelemetry.sdk._logs import ReadableLogRecord, ReadWriteLogRecord
from opentelemetry.sdk._logs.export import BatchLogRecordProcessor, LogRecordExporter, LogRecordExportResult

from tracesim._export_queue import BoundedFlush, reset_after_fork
from tracesim._internal_errors import WarnOnce
from tracesim.exporters._redacting import shut_down

__all__ = ["SAY_MARGIN_S", "ResultLogQueue"]

_logger = logging.getLogger("tracesim")
_RACE_ROOM: Final = 256  # the SDK's queue beyond the gate: callers that pass the check together
SAY_MARGIN_S: Final = 0.25
"""Kept before a shutdown's deadline to count and say what is left (the shutdown gives up then)."""


class ResultLogQueue(BatchLogRecordProcessor):
    """A ``BatchLogRecordProcessor`` that drops at its own gate, so it can count what it drops.

    Args:
        exporter: Where batches go.
        queue_size: Records the queue holds (the span queue's size: `tracesim._export_queue.queue_size`).
        name: The destination's name in the warning.
        warnings: Shared by the sinks of one configuration, so a full queue is logged once.
    """

    def __init__(
        self,
        exporter: LogRecordExporter,
        *,
        queue_size: int,
        name: str,
        warnings: WarnOnce | None = None,
    ) -> None:
        self.queue_size = queue_size
        self.name = name
        self._warnings = warnings if warnings is not None else WarnOnce()
        self._reset()
        batch = None if queue_size >= 1024 else max(1, queue_size // 2)  # as `ExportQueue` does
        super().__init__(
            _Taken(exporter, self), max_export_batch_size=batch, max_queue_size=queue_size + _RACE_ROOM
        )
        reset_after_fork(self)  # the SDK empties its queue in a forked child: so do the counts

    def _reset(self) -> None:
        self._flush = BoundedFlush("tracesim-log-flush")  # a forked child has none of the parent's threads
        self._lock = threading.Lock()
        # One token per record admitted and not yet taken for export: >= the SDK queue's length.
        self._tokens: collections.deque[None] = collections.deque()
        self._closed = getattr(self, "_closed", False)  # a forked child of a closed queue: closed
        self.dropped = 0
        """Records lost: the queue was full, closed, or still held them at its shutdown deadline."""
        self.in_flight = 0
        """Records in an export that has not returned."""

    def on_emit(self, log_record: ReadWriteLogRecord) -> None:
        """Queue ``log_record`` if there is room; else drop and count it."""
        if self._admitted():
            super().on_emit(log_record)

    def _admitted(self) -> bool:
        """A token for one record, True; or, with the queue full or closed, the record counted
        dropped (and the first drop said), False."""
        tokens = self._tokens
        if len(tokens) < self.queue_size and not self._closed:
            tokens.append(None)  # no lock while there is room: deque appends are atomic
            return True
        with self._lock:
            self.dropped += 1
        if not self._closed:
            self._warnings.warn(
                "log-queue-full",
                "tracesim: the queue of evaluation log records for %s (%d records, the span queue's "
                "export_queue_size) is full, so records are dropped: each is counted in "
                "tracesim.scoring_stats().log_records_dropped. The span events still hold every result "
                "(unless evaluation_span_events is false). Raise export_queue_size "
                "(TRACESIM_EXPORT_QUEUE_SIZE), or look at why %s takes records slowly.",
                self.name,
                self.queue_size,
                self.name,
            )
        return False

    @property
    def direct(self) -> bool:
        """Whether `put` can take records: the SDK keeps its queue in the batch processor it shares
        between signals (1.34 on)."""
        return callable(getattr(getattr(self, "_batch_processor", None), "emit", None))

    def put(self, record: ReadableLogRecord) -> None:
        """`on_emit` for a record made ready for export (the SDK's ``ReadableLogRecord``, as its
        batch processor makes one from what ``Logger.emit`` hands it): queued if there is room,
        else dropped and counted."""
        if self._admitted():
            self._batch_processor.emit(record)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Export what is queued, within ``timeout_millis`` (see `tracesim._export_queue.BoundedFlush`)."""
        return self._flush.run(super().force_flush, max(0, timeout_millis) / 1000)

    def _taken(self, count: int) -> None:
        """The SDK took ``count`` records from its queue for export."""
        tokens = self._tokens
        with self._lock:
            for _ in range(min(count, len(tokens))):
                tokens.pop()

    def close(self, timeout_s: float) -> None:
        """Export what is queued within ``timeout_s``, then stop; what is left is counted dropped.

        (The SDK's own shutdown waits up to 30 s for a backend that is down: the deadline is
        passed to its batch processor, which takes it.)
        """
        self._closed = True
        deadline = time.monotonic() + timeout_s
        batch: Any = getattr(self, "_batch_processor", None)
        if batch is not None:
            batch.shutdown(timeout_millis=max(0.0, (deadline - time.monotonic()) * 1000))
        else:  # an SDK without the shared batch processor: its own shutdown
            self.shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
        with self._lock:
            left = len(self._tokens)  # still queued: they never reach the exporter
            self.dropped += left
            self._tokens.clear()
        in_flight = self.in_flight
        if left or in_flight:  # nobody reads the counts after a shutdown: said
            _logger.warning(
                "tracesim: at the shutdown deadline %d evaluation log records for %s were still "
                "queued, and are lost, and %d in an export that had not returned (the span events "
                "hold their results)",
                left,
                self.name,
                in_flight,
            )


class _Taken(LogRecordExporter):
    """The exporter the SDK's queue hands batches to: tells the gate, then passes them on."""

    def __init__(self, inner: LogRecordExporter, queue: ResultLogQueue) -> None:
        self.inner = inner
        self._queue = weakref.ref(queue)  # the SDK's thread holds this exporter; the queue holds it

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        queue = self._queue()
        if queue is None:
            return self.inner.export(batch)
        queue._taken(len(batch))
        queue.in_flight += len(batch)  # one export at a time (the SDK's lock): no race
        try:
            return self.inner.export(batch)
        finally:
            queue.in_flight -= len(batch)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float | None = None) -> None:
        shut_down(self.inner, timeout_millis)
