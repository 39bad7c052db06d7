"""A bounded queue with one background worker that sends its items in batches, retrying with backoff.

What the senders of results to a backend's own API (MLflow assessments; Phoenix annotations
could use it too) have in common: the caller's ``submit`` never blocks and never raises; a
daemon thread (started on first use, again after a fork) takes the items that are due, up to
``max_batch_size``, as soon as there are that many or the oldest has waited
``schedule_delay_s``; an item that could not be sent yet goes back with exponential backoff
until its deadline; ``force_flush`` and ``shutdown`` wait with deadlines (``shutdown`` holds
its own: a worker stuck on a request that never returns is left to close the client itself).
A subclass says how to send a batch (`BackgroundSender._send`) and keeps its own counters;
its ``submit`` ends in `BackgroundSender._enqueue`, which counts the item in and queues it.

A forked child starts empty: what the parent had queued is the parent's to send (sent twice,
MLflow would keep both copies), and its counters start at zero. httpx's one INFO line per
request (``HTTP Request: POST ...``) is left out of the logs for the senders' own threads only
(`quiet_httpx`): a user's own httpx calls log as they did.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["BackgroundSender", "QueuedItem", "quiet_httpx"]

_logger = logging.getLogger("tracesim")
_quiet = threading.local()


class _SenderThreadsFilter(logging.Filter):
    """Drops httpx's per-request INFO records logged from a thread that `quiet_httpx` marked."""

    def filter(self, record: logging.LogRecord) -> bool:
        return record.levelno > logging.INFO or not getattr(_quiet, "on", False)


_FILTER = _SenderThreadsFilter("tracesim")


def quiet_httpx() -> None:
    """Leave httpx's INFO lines (one per request) out of the logs for the calling thread only.

    Called first thing by each sender's worker: the filter sits on the ``httpx`` logger (added
    once) and lets through every record of every other thread, and warnings from this one.

    Example:
        >>> import logging
        >>> records = []
        >>> class Keep(logging.Handler):
        ...     def emit(self, record):
        ...         records.append(record.getMessage())
        >>> handler = Keep()
        >>> log = logging.getLogger("httpx")
        >>> log.addHandler(handler); log.setLevel(logging.INFO)
        >>> worker = threading.Thread(target=lambda: (quiet_httpx(), log.info("sender's")))
        >>> worker.start(); worker.join()
        >>> log.info("user's own")
        >>> records
        ["user's own"]
        >>> log.removeHandler(handler); log.setLevel(logging.NOTSET)
    """
    _quiet.on = True
    httpx_logger = logging.getLogger("httpx")
    if _FILTER not in httpx_logger.filters:
        httpx_logger.addFilter(_FILTER)


@dataclass
class QueuedItem:
    """What the queue needs of an item: when it came, until when it may be retried, and when next."""

    submitted_at: float
    deadline: float
    attempts: int = 0
    not_before: float = 0.0
    settled: bool = False
    """Counted (sent, failed...) or back in the queue: set by `BackgroundSender._settle`."""


Item = TypeVar("Item", bound=QueuedItem)


class BackgroundSender(Generic[Item]):
    """The queue, the worker, retries and the flush of a background sender.

    Subclasses implement ``_send(batch)`` (called by the worker, outside the lock; it must
    count and `_settle`, or `_retry`, every item it was given: an exception counts the rest
    as failed) and may override ``_nothing_to_wait_for`` (force_flush returns at once when
    True), ``_close``, ``_forked_child`` (its counters and connections in a forked child) and
    ``_off`` (`_enqueue` then counts nothing in). ``_submitted`` and ``_dropped`` are the
    subclass's counters, which `_enqueue` adds to.

    Example:
        >>> class Printer(BackgroundSender[QueuedItem]):
        ...     def _send(self, batch):
        ...         print(len(batch), "sent")
        >>> printer = Printer(name="printer")
        >>> now = time.monotonic()
        >>> printer._offer(QueuedItem(now, now + 1.0))
        True
        >>> printer.shutdown(5.0)
        1 sent
        True
    """

    _submitted: int
    _dropped: int

    def __init__(
        self,
        *,
        name: str,
        max_queue_size: int = 2048,
        max_batch_size: int = 64,
        schedule_delay_s: float = 0.5,
        max_backoff_s: float = 10.0,
    ) -> None:
        self._name = name
        self._max_queue_size = max_queue_size
        self._max_batch_size = max_batch_size
        self._schedule_delay_s = schedule_delay_s
        self._max_backoff_s = max_backoff_s
        self._logged: set[str] = set()
        self._what = "item"  # what one item is, for the log lines (`_enqueue`)
        self._reset()
        ref = weakref.ref(self)

        def after_fork() -> None:
            sender = ref()
            if sender is not None:
                sender._after_fork()

        os.register_at_fork(after_in_child=after_fork)

    def _reset(self) -> None:
        # Also the after-fork hook's: a thread of the parent may have held the lock at the fork.
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: deque[Item] = deque()
        self._in_flight = 0
        self._flushing = 0
        self._shutdown = False
        self._closed = False
        self._failed = 0
        self._worker: threading.Thread | None = None
        self._worker_pid = 0

    def _after_fork(self) -> None:
        """In a forked child: an empty queue, no worker, zero counters (the parent sends its own)."""
        shutdown = self._shutdown
        self._reset()
        self._shutdown = shutdown
        self._forked_child()

    # ------------------------------------------------------------ for subclasses

    def _send(self, batch: list[Item]) -> None:
        raise NotImplementedError

    def _nothing_to_wait_for(self) -> bool:
        """True when a flush cannot help (nobody has answered yet, say); called under the lock."""
        return False

    def _close(self) -> None:
        """Release what the sender holds (a connection pool), once no request is on its way."""

    def _forked_child(self) -> None:
        """In a forked child: zero the subclass's counters, replace what it shares with the parent."""

    def _settle(self, items: list[Item]) -> None:
        """Mark ``items`` as counted by the subclass (sent, failed, already there)."""
        for item in items:
            item.settled = True

    def _expired(self, count: int) -> None:
        """``count`` items passed their deadline (already counted as failed): say so."""

    def _off(self) -> bool:
        """True once the backend is known to take none of these items; called under the lock."""
        return False

    def _enqueue(self, item: Item, what: str) -> None:
        """Count ``item`` as submitted and queue it; one without room is dropped, said once.

        The subclass keeps ``_submitted`` and ``_dropped``; ``what`` names one item in the
        log line ("MLflow assessment").
        """
        with self._lock:
            if self._off():  # decided while this call was on its way in
                return
            self._submitted += 1
        self._what = what
        if self._offer(item):
            return
        with self._lock:
            self._dropped += 1
            full = not self._shutdown
        if full:
            self._log_once("full", "tracesim: %s queue full (%d); dropping", what, self._max_queue_size)

    def _offer(self, item: Item) -> bool:
        """Queue ``item``; False when shut down or full (the caller counts it as dropped)."""
        with self._lock:
            if self._shutdown or len(self._queue) + self._in_flight >= self._max_queue_size:
                return False
            self._queue.append(item)
            self._ensure_worker()
            if len(self._queue) >= self._max_batch_size:
                self._changed.notify_all()
            return True

    def _pending(self) -> int:
        """Queued and in flight; call under the lock."""
        return len(self._queue) + self._in_flight

    def _log_once(self, key: str, message: str, *args: Any, level: int = logging.WARNING) -> None:
        with self._lock:
            if key in self._logged:
                return
            self._logged.add(key)
        _logger.log(level, message + " (logged once)", *args)

    def _retry(self, items: list[Item]) -> None:
        """Send ``items`` again after a backoff; those past their deadline count as failed."""
        now = time.monotonic()
        expired = stopped = 0
        with self._lock:
            for item in items:
                item.settled = True
                item.attempts += 1
                if self._shutdown:  # shutdown already said it could not send everything
                    stopped += 1
                elif now >= item.deadline:
                    expired += 1
                else:
                    item.not_before = now + min(0.25 * 2.0 ** (item.attempts - 1), self._max_backoff_s)
                    self._queue.append(item)
            self._failed += expired + stopped
        if expired:
            self._expired(expired)

    # ------------------------------------------------------------ the worker

    def _ensure_worker(self) -> None:
        if self._worker is None or self._worker_pid != os.getpid() or not self._worker.is_alive():
            self._worker_pid = os.getpid()
            self._worker = threading.Thread(target=self._run, name=f"tracesim-{self._name}", daemon=True)
            self._worker.start()

    def _run(self) -> None:
        quiet_httpx()
        while True:
            with self._lock:
                batch = self._take()
                while batch is None:
                    if self._shutdown and not self._flushing:
                        break
                    self._changed.wait(self._wait_s())
                    batch = self._take()
                if batch is None:
                    break
                self._in_flight = len(batch)
            try:
                self._send(batch)
            except Exception:  # never let the worker die: what it held and had not counted is given up
                with self._lock:
                    closed = self._closed
                    self._failed += sum(not item.settled for item in batch)
                if not closed:
                    _logger.exception("tracesim: %s", self._name)
            finally:
                with self._lock:
                    self._in_flight = 0
                    self._changed.notify_all()
        self._close_once()  # shut down: a shutdown that could not wait for this thread left it here

    def _close_once(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._close()

    def _take(self) -> list[Item] | None:
        now = time.monotonic()
        ready = [item for item in self._queue if item.not_before <= now]
        if not ready:
            return None
        waited = now - min(item.submitted_at for item in ready)
        if len(ready) < self._max_batch_size and waited < self._schedule_delay_s and not self._flushing:
            return None
        batch = ready[: self._max_batch_size]
        for item in batch:
            item.settled = False
        taken = set(map(id, batch))
        self._queue = deque(item for item in self._queue if id(item) not in taken)
        return batch

    def _wait_s(self) -> float | None:
        if not self._queue:
            return None
        soonest = min(max(i.not_before, i.submitted_at + self._schedule_delay_s) for i in self._queue)
        return max(soonest - time.monotonic(), 0.01)

    # ------------------------------------------------------------ flush and shutdown

    def force_flush(self, timeout_s: float = 30.0) -> bool:
        """Send everything queued now; True if nothing is left within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            if self._nothing_to_wait_for():
                return not self._queue and not self._in_flight
            self._flushing += 1
            try:
                now = time.monotonic()
                for item in self._queue:  # one more try now for those waiting on backoff
                    item.not_before = min(item.not_before, now)
                self._changed.notify_all()
                while self._queue or self._in_flight:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0 or self._worker is None or not self._worker.is_alive():
                        return not self._queue and not self._in_flight
                    self._changed.wait(remaining)
                return True
            finally:
                self._flushing -= 1

    def shutdown(self, timeout_s: float = 30.0) -> bool:
        """Flush, then stop, within ``timeout_s``; True if everything was sent.

        What is still queued then counts as failed. A request still on its way (a server that
        does not answer) is not waited for past the deadline: its worker counts it when it
        returns, then closes the client itself.
        """
        deadline = time.monotonic() + timeout_s
        flushed = self.force_flush(timeout_s)
        with self._lock:
            self._shutdown = True
            left, in_flight = len(self._queue), self._in_flight
            self._failed += left
            self._queue.clear()
            self._changed.notify_all()
            worker = self._worker
        if left or in_flight:  # nobody reads the counts after a shutdown: said
            _logger.warning(
                "tracesim: at the shutdown deadline %d items of the %s sender (%ss) were still "
                "queued, and are lost, and %d on their way without an answer yet",
                left,
                self._name,
                self._what,
                in_flight,
            )
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=max(deadline - time.monotonic(), 0.0))
            if worker.is_alive():
                return flushed  # it closes the client when its request returns
        self._close_once()
        return flushed
