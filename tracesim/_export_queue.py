"""The export queue: OpenTelemetry's `BatchSpanProcessor`, with every span it loses counted.

The SDK's batch processor holds finished spans in a bounded queue for its export thread. A
caller that outruns the exporter (a traced CPU loop, a slow disk, a backend far away) fills
it, and the SDK then drops spans with one ``Queue full`` log line and no count anyone can
read. `ExportQueue` subclasses it and puts a gate in front of its queue: the gate admits a
span only while the queue has room, so the SDK never drops one itself, and every span the
gate refuses is counted.

The gate knows how full the queue is without reading the SDK's internals: it holds a token for
each span admitted, and the exporter it hands the SDK (`_Handover`) gives back one for each span
taken for export. The tokens are never fewer than the spans in the queue (a token is taken
before its span is queued, and given back after it has left), so a full gate means a full queue
or fuller. While there is room a span passes without a lock (the tokens are a deque, whose
``len`` and ``append`` are atomic); callers that race past the check together can overfill the
gate by a few spans, for which the SDK's queue keeps `_RACE_ROOM` places more than the gate.

When the queue is full (``on_full``):

- ``drop`` (default): the span is dropped and counted; the caller does not wait.
- ``wait``: the caller waits for room, at most ``wait_s``, then drops and counts. A wait that
  runs out marks the exporter stalled: later callers drop at once until the exporter takes a
  batch again, so a hung exporter costs the host one ``wait_s``, not one per span. A span
  ended by the export thread itself never waits (it would wait for itself).

The count reaches the exporter too, so it survives the process: a span named
``tracesim.export.dropped`` whose ``tracesim.export.dropped_spans`` attribute holds the spans
dropped since the previous such span. One goes into the queue at most once a second while
drops go on, and at every flush and shutdown; ``tracesim report`` sums them.
"""

from __future__ import annotations

import collections
import logging
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags

from tracesim import _semconv as sc
from tracesim._internal_errors import WarnOnce
from tracesim._version import __version__
from tracesim.exporters._redacting import shut_down

if TYPE_CHECKING:
    from tracesim._config import Settings

__all__ = [
    "DEFAULT_QUEUE_SIZE",
    "ON_FULL",
    "BoundedFlush",
    "ExportQueue",
    "ExportStats",
    "export_stats",
    "queue_size",
    "reset_after_fork",
]

DEFAULT_QUEUE_SIZE: Final = 2048
"""OpenTelemetry's default queue size."""
ON_FULL: Final = ("drop", "wait")
"""What a caller does when the queue is full."""
RECORD_INTERVAL_S: Final = 1.0
"""While drops go on, a record of them goes into the queue at most this often."""
_BATCH_SIZE: Final = 512  # the SDK's default export batch
_WAIT_SCHEDULE_DELAY_MS: Final = 100
# Places the SDK's queue has beyond the gate's size: for callers that pass the gate's check at
# the same moment (one per thread the interpreter switches away between check and append).
_RACE_ROOM: Final = 256

_logger = logging.getLogger("tracesim")


def queue_size(settings: Settings, scored: bool) -> int:
    """The spans each exporter's queue holds: ``export_queue_size``, or the default for ``settings``.

    Scored spans end in bursts when scoring catches up: up to ``scoring_queue_size`` of them,
    already held in memory while they waited. When evaluators are in use (configured rules, or
    functions decorated with evaluators before configure()), the queue holds that many on top
    of OpenTelemetry's usual 2,048, so such a burst is never dropped. Without them the queue is
    the usual size, and so is its memory when a tight loop fills it. A size the user sets (or
    ``OTEL_BSP_MAX_QUEUE_SIZE``) is taken as it is.

    Example:
        >>> from tracesim._config import resolve
        >>> queue_size(resolve({}, environ={}), scored=True)
        12048
        >>> queue_size(resolve({"export_queue_size": 500}, environ={}), scored=True)
        500
    """
    if settings.export_queue_size is not None:
        return settings.export_queue_size
    extra = settings.scoring_queue_size if scored and settings.scoring_mode == "background" else 0
    return DEFAULT_QUEUE_SIZE + extra


def reset_after_fork(queue: Any) -> None:
    """Call ``queue._reset()`` in a forked child (held weakly: a queue gone by then is skipped)."""
    if hasattr(os, "register_at_fork"):
        this = weakref.ref(queue)

        def after_in_child() -> None:
            alive = this()
            if alive is not None:
                alive._reset()

        os.register_at_fork(after_in_child=after_in_child)


class BoundedFlush:
    """Runs a batch processor's flush on a thread of its own, and waits for it only until a deadline.

    OpenTelemetry's batch processors take a ``timeout_millis`` in ``force_flush`` and do not use
    it (opentelemetry-python#4568): the flush exports everything queued on the caller's thread,
    behind the lock of an export in progress, so a backend that hangs holds the caller for the
    exporter's own timeout and retries (10 s and more), whatever deadline it gave. Here the
    caller waits at most its deadline; a flush still going on when the next one is asked is
    waited for instead of starting another (it exports until the queue is empty).

    Example:
        >>> BoundedFlush("tracesim-flush").run(lambda: True, timeout_s=1.0)
        True
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._lock = threading.Lock()
        self._running: tuple[threading.Thread, list[bool]] | None = None

    def run(self, flush: Callable[[], bool], timeout_s: float) -> bool:
        """``flush()``'s answer, or False when it is not over within ``timeout_s``.

        A flush already going on is waited for first (it may have looked at the queue before the
        caller's last items came), then a new one starts: one thread at most, however many
        callers a backend that hangs holds.
        """
        deadline = time.monotonic() + max(0.0, timeout_s)
        with self._lock:
            running = self._running
        if running is not None and running[0].is_alive():
            running[0].join(max(0.0, deadline - time.monotonic()))
            if running[0].is_alive():
                return False
        with self._lock:
            running = self._running
            if running is None or not running[0].is_alive():
                answer: list[bool] = []

                def target() -> None:
                    try:
                        answer.append(bool(flush()))
                    except Exception:
                        answer.append(False)
                        _logger.exception("tracesim: a flush failed")

                thread = threading.Thread(target=target, name=self._name, daemon=True)
                try:
                    thread.start()
                except RuntimeError:  # no new threads at interpreter exit (Python 3.12.0-3.12.1)
                    target()  # on the caller's thread, with no deadline: the only way left
                    return answer[0]
                running = self._running = (thread, answer)
        thread, answer = running
        thread.join(max(0.0, deadline - time.monotonic()))
        return bool(answer) and answer[0]


@dataclass(frozen=True)
class ExportStats:
    """Counters of the export queues of the active configuration, summed over its exporters.

    ``enqueued``: spans admitted to a queue. ``exported``: spans taken from it and handed to the
    exporter (whether or not the exporter then delivered them: its own failures are its own
    count). ``dropped``: spans lost at the queue, because it was full (after waiting, with
    ``export_on_full='wait'``) or because its exporter had shut down. ``recorded``: dropped
    spans whose count went to the exporter in a ``tracesim.export.dropped`` span.
    ``waits`` and ``wait_s``: callers that waited for room, and the seconds they waited in all.

    Each exporter has its own queue: a span that two queues drop counts twice.

    Example:
        >>> import tracesim
        >>> tracesim.export_stats().dropped
        0
    """

    enqueued: int = 0
    exported: int = 0
    dropped: int = 0
    recorded: int = 0
    waits: int = 0
    wait_s: float = 0.0


def export_stats(processors: Sequence[object]) -> ExportStats:
    """The counters of the `ExportQueue` among ``processors``, added up."""
    queues = [p.stats() for p in processors if isinstance(p, ExportQueue)]
    return ExportStats(
        enqueued=sum(s.enqueued for s in queues),
        exported=sum(s.exported for s in queues),
        dropped=sum(s.dropped for s in queues),
        recorded=sum(s.recorded for s in queues),
        waits=sum(s.waits for s in queues),
        wait_s=sum(s.wait_s for s in queues),
    )


class ExportQueue(BatchSpanProcessor):
    """A `BatchSpanProcessor` that counts the spans it drops and can make callers wait for room.

    Args:
        exporter: Where batches go.
        queue_size: Spans the queue holds.
        on_full: ``"drop"`` or ``"wait"`` (see the module docstring).
        wait_s: The longest a caller waits for room with ``on_full="wait"``.
        name: The exporter's name in the warning and in the record spans.
        warnings: Shared by the queues of one configuration, so a full queue is logged once.

    Example:
        >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        >>> queue = ExportQueue(InMemorySpanExporter(), queue_size=100, on_full="wait", wait_s=0.5)
        >>> queue.stats().dropped
        0
        >>> queue.shutdown()
    """

    def __init__(
        self,
        exporter: SpanExporter,
        *,
        queue_size: int = DEFAULT_QUEUE_SIZE,
        on_full: str = "drop",
        wait_s: float = 1.0,
        name: str | None = None,
        warnings: WarnOnce | None = None,
    ) -> None:
        if on_full not in ON_FULL:
            raise ValueError(f"on_full must be one of {', '.join(ON_FULL)}, got {on_full!r}")
        self.queue_size = queue_size
        self.on_full = on_full
        self.wait_s = wait_s
        self.name = name or type(exporter).__name__
        self._warnings = warnings if warnings is not None else WarnOnce()
        self._reset()
        # A queue smaller than two of the SDK's batches exports half of itself at a time: a
        # batch leaving makes room while the next one fills (the SDK checks the batch size
        # against the queue's, and its export thread wakes when a batch is queued).
        batch = None if queue_size >= 2 * _BATCH_SIZE else max(1, queue_size // 2)
        # The SDK's thread is woken by a span queued past a batch, or by its timer (5 s). A
        # caller that waits queues nothing: were the whole queue filled between the thread's
        # last look and its going back to sleep (a small queue can be), only the timer would
        # wake it, so with ``wait`` the timer is short.
        delay = _WAIT_SCHEDULE_DELAY_MS if on_full == "wait" else None
        super().__init__(
            _Handover(exporter, self),
            max_queue_size=queue_size + _RACE_ROOM,
            max_export_batch_size=batch,
            schedule_delay_millis=delay,
        )
        # The SDK's own on_end checks the sampled flag again, then queues the span: its queueing
        # step is called directly where this SDK version has it (one Python call less a span).
        inner = getattr(getattr(self, "_batch_processor", None), "emit", None)
        self._emit = inner if callable(inner) else super().on_end
        reset_after_fork(self)  # the SDK empties its queue in a forked child: so do the counts

    def _reset(self) -> None:
        self._flush = BoundedFlush("tracesim-flush")  # a forked child has none of the parent's threads
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)  # callers waiting for room
        # One token per span admitted and not yet taken for export: >= the SDK queue's length.
        self._tokens: collections.deque[None] = collections.deque()
        self._exported = self._dropped = self._recorded = self._waits = 0
        self._lost = 0  # admitted, then left in the SDK's queue at shutdown (counted dropped)
        self._wait_total = 0.0
        self._unrecorded = 0  # dropped, not yet in a record span
        self._first_drop_ns = self._last_drop_ns = 0
        self._resource: Resource | None = None  # a dropped span's, for the record
        self._last_record = -RECORD_INTERVAL_S
        self._records: dict[int, ReadableSpan] = {}  # record spans queued, by id (held: no id reuse)
        self._waiting = 0
        self._stalled = False  # a wait ran out; cleared when the exporter takes a batch
        self._closed = False
        self._exporting: set[int] = set()  # threads inside the exporter
        self._in_flight = 0  # spans in an export that has not returned
        self._warned = False

    def stats(self) -> ExportStats:
        """A snapshot of this queue's counters."""
        with self._cond:
            # Admitted: exported, left at shutdown, or still queued (records are not spans).
            enqueued = self._exported + self._lost + max(0, len(self._tokens) - len(self._records))
            return ExportStats(
                enqueued, self._exported, self._dropped, self._recorded, self._waits, self._wait_total
            )

    def on_end(self, span: ReadableSpan) -> None:
        """Queue ``span`` if there is room (waiting for it with ``on_full="wait"``), else count it dropped."""
        context = span.context
        if context is None or not context.trace_flags.sampled:
            return
        tokens = self._tokens
        if len(tokens) < self.queue_size and not self._unrecorded and not self._closed:
            tokens.append(None)  # every span passes here: room, and no record due, without a lock
            self._emit(span)
            return
        record = None
        with self._lock:
            admitted = not self._closed and (len(tokens) < self.queue_size or self._room())
            if admitted:
                tokens.append(None)
                if self._unrecorded:
                    record = self._record_due(force=False)
            else:
                self._drop(span)
        if not admitted:
            if not self._warned:
                self._warn()
            return
        super().on_end(span)
        if record is not None:
            super().on_end(record)

    def _room(self) -> bool:
        """Wait for room, with the lock held; False when there is none within the bound."""
        if (
            self.on_full != "wait"
            or self._closed
            or self._stalled
            or threading.get_ident() in self._exporting
        ):
            return False
        self._waits += 1
        self._waiting += 1
        started = time.monotonic()
        try:
            self._cond.wait_for(
                lambda: len(self._tokens) < self.queue_size or self._stalled or self._closed, self.wait_s
            )
        finally:
            self._waiting -= 1
            self._wait_total += time.monotonic() - started
        if len(self._tokens) < self.queue_size and not self._closed:
            return True
        if not self._stalled and not self._closed:
            self._stalled = True  # the exporter took nothing for wait_s: stop making callers wait
            self._cond.notify_all()
        return False

    def _drop(self, span: ReadableSpan) -> None:
        now = time.time_ns()
        self._dropped += 1
        if self._closed:
            return  # no exporter left to write a record to
        self._unrecorded += 1
        if not self._first_drop_ns:
            self._first_drop_ns = now
        self._last_drop_ns = now
        self._resource = span.resource

    def _warn(self) -> None:
        self._warned = True
        if self._closed:
            return
        self._warnings.warn(
            "export-queue-full",
            "tracesim: the export queue of the %s exporter (export_queue_size=%d) is full, so spans "
            "are dropped: each is counted in tracesim.export_stats() and in %s spans that "
            "`tracesim report` sums. Raise export_queue_size (TRACESIM_EXPORT_QUEUE_SIZE), or set "
            "export_on_full='wait' to make callers wait up to export_wait_s for room.",
            self.name,
            self.queue_size,
            sc.EXPORT_DROPPED,
        )

    def _record_due(self, *, force: bool) -> ReadableSpan | None:
        """A record of the drops not yet recorded, when one is due and fits; the lock is held."""
        if not self._unrecorded or self._closed or len(self._tokens) >= self.queue_size:
            return None
        now = time.monotonic()
        if not force and now - self._last_record < RECORD_INTERVAL_S:
            return None
        record = self._record_span(self._unrecorded)
        self._records[id(record)] = record
        self._recorded += self._unrecorded
        self._unrecorded = 0
        self._first_drop_ns = 0
        self._last_record = now
        self._tokens.append(None)
        return record

    def _record_span(self, count: int) -> ReadableSpan:
        trace_id = random.getrandbits(128) or 1
        context = SpanContext(trace_id, random.getrandbits(64) or 1, False, TraceFlags(TraceFlags.SAMPLED))
        return ReadableSpan(
            name=sc.EXPORT_DROPPED,
            context=context,
            resource=self._resource,
            attributes={
                sc.EXPORT_DROPPED_SPANS: count,
                sc.EXPORT_QUEUE_SIZE: self.queue_size,
                sc.EXPORT_ON_FULL: self.on_full,
                sc.EXPORT_EXPORTER: self.name,
            },
            kind=SpanKind.INTERNAL,
            start_time=self._first_drop_ns,
            end_time=self._last_drop_ns,
            instrumentation_scope=InstrumentationScope("tracesim", __version__),
        )

    def _taken(self, spans: Sequence[ReadableSpan]) -> None:
        """The SDK took ``spans`` from its queue for export."""
        with self._cond:
            records = self._records
            mine = [key for key in map(id, spans) if key in records] if records else []
            for key in mine:
                del records[key]
            tokens = self._tokens
            for _ in range(min(len(spans), len(tokens))):
                tokens.pop()
            self._exported += len(spans) - len(mine)
            self._stalled = False
            if self._waiting:
                self._cond.notify(len(spans))

    def force_flush(self, timeout_millis: int | None = None) -> bool:
        """Export what is queued, then a record of the drops not yet recorded, within
        ``timeout_millis`` (the SDK's default 30 s when None; see `BoundedFlush`)."""
        deadline = time.monotonic() + (30.0 if timeout_millis is None else max(0, timeout_millis) / 1000)
        flush = super().force_flush
        ok = self._flush.run(flush, deadline - time.monotonic())
        with self._cond:
            record = self._record_due(force=True)
        if record is not None:
            super().on_end(record)
            ok = self._flush.run(flush, deadline - time.monotonic()) and ok
        return ok

    def unsent(self) -> int:
        """Spans queued or in an export that has not returned."""
        with self._cond:
            return max(0, len(self._tokens) - len(self._records)) + self._in_flight

    def shutdown(self) -> None:
        """Export what is queued and a last record, then stop; spans ending later are dropped.

        As OpenTelemetry's processor does, within 30 s: tracesim's shutdown waits for it only
        until its own deadline (and names the spans still to send then), and it goes on in the
        background while the process lives. The spans still queued at the end never reach the
        exporter: counted dropped, and said in a WARNING (nobody reads the counts after a
        shutdown).
        """
        with self._cond:
            record = self._record_due(force=True)
            self._closed = True
            self._cond.notify_all()
        if record is not None:
            super().on_end(record)
        super().shutdown()  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated
        with self._cond:
            # What the SDK left in its queue at its shutdown deadline never reaches the exporter.
            left = len(self._tokens) - len(self._records)
            if left > 0:
                self._dropped += left
                self._lost += left
            self._tokens.clear()
            self._records.clear()
        in_flight = self._in_flight
        if left > 0 or in_flight:
            _logger.warning(
                "tracesim: at the end of its shutdown %d spans for the %s exporter were still queued, "
                "and are lost, and %d in an export that had not returned",
                max(0, left),
                self.name,
                in_flight,
            )


class _Handover(SpanExporter):
    """The exporter the SDK's queue hands batches to: tells the gate, then passes them on."""

    def __init__(self, inner: SpanExporter, queue: ExportQueue) -> None:
        self.inner = inner
        self._queue = weakref.ref(queue)  # the SDK's thread holds this exporter; the queue holds it

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        queue = self._queue()
        if queue is None:
            return self.inner.export(spans)
        queue._taken(spans)
        me = threading.get_ident()
        queue._exporting.add(me)
        queue._in_flight += len(spans)  # one export at a time (the SDK's lock): no race
        try:
            return self.inner.export(spans)
        finally:
            queue._in_flight -= len(spans)
            queue._exporting.discard(me)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float | None = None) -> None:
        shut_down(self.inner, timeout_millis)
