"""A bounded queue with one background worker that sends its items in batches, retrying with backoff.

What the senders of results to a backend's own API (MLflow assessments; Phoenix annotations
could use it too) have in common: the caller's ``submit`` never blocks and never raises; a
daemon thread (started on first use, again after a fork) takes the items that are due, up to
``max_batch_size``, as soon as there are that many or the oldest has waited
``schedule_delay_s``; an item that could not be sent yet goes back with exponential backoff
until its deadline; ``force_flush`` and ``shutdown`` wait with deadlines. A subclass says how
to send a batch (`BackgroundSender._send`) and keeps its own counters.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections import deque
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

__all__ = ["BackgroundSender", "QueuedItem"]

_logger = logging.getLogger("tracesim")


@dataclass
class QueuedItem:
    """What the queue needs of an item: when it came, until when it may be retried, and when next."""

    submitted_at: float
    deadline: float
    attempts: int = 0
    not_before: float = 0.0


Item = TypeVar("Item", bound=QueuedItem)


class BackgroundSender(Generic[Item]):
    """The queue, the worker, retries and the flush of a background sender.

    Subclasses implement ``_send(batch)`` (called by the worker, outside the lock; it must
    count or `_retry` every item it was given) and may override ``_nothing_to_wait_for``
    (force_flush returns at once when True) and ``_close``.

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
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._queue: deque[Item] = deque()
        self._in_flight = 0
        self._flushing = 0
        self._shutdown = False
        self._failed = 0
        self._logged: set[str] = set()
        self._worker: threading.Thread | None = None
        self._worker_pid = 0

    # ------------------------------------------------------------ for subclasses

    def _send(self, batch: list[Item]) -> None:
        raise NotImplementedError

    def _nothing_to_wait_for(self) -> bool:
        """True when a flush cannot help (nobody has answered yet, say); called under the lock."""
        return False

    def _close(self) -> None:
        """Release what the sender holds (a connection pool), after the worker stopped."""

    def _expired(self, count: int) -> None:
        """``count`` items passed their deadline (already counted as failed): say so."""

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
        expired = 0
        with self._lock:
            for item in items:
                item.attempts += 1
                if now >= item.deadline or self._shutdown:
                    expired += 1
                    continue
                item.not_before = now + min(0.25 * 2.0 ** (item.attempts - 1), self._max_backoff_s)
                self._queue.append(item)
            self._failed += expired
        if expired:
            self._expired(expired)

    # ------------------------------------------------------------ the worker

    def _ensure_worker(self) -> None:
        if self._worker is None or self._worker_pid != os.getpid() or not self._worker.is_alive():
            self._worker_pid = os.getpid()
            self._worker = threading.Thread(target=self._run, name=f"tracesim-{self._name}", daemon=True)
            self._worker.start()

    def _run(self) -> None:
        while True:
            with self._lock:
                batch = self._take()
                while batch is None:
                    if self._shutdown and not self._flushing:
                        return
                    self._changed.wait(self._wait_s())
                    batch = self._take()
                self._in_flight = len(batch)
            try:
                self._send(batch)
            except Exception:  # never let the worker die: what it held is given up
                _logger.exception("tracesim: %s", self._name)
                with self._lock:
                    self._failed += len(batch)
            finally:
                with self._lock:
                    self._in_flight = 0
                    self._changed.notify_all()

    def _take(self) -> list[Item] | None:
        now = time.monotonic()
        ready = [item for item in self._queue if item.not_before <= now]
        if not ready:
            return None
        waited = now - min(item.submitted_at for item in ready)
        if len(ready) < self._max_batch_size and waited < self._schedule_delay_s and not self._flushing:
            return None
        batch = ready[: self._max_batch_size]
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
        """Flush within ``timeout_s``, then stop; True if everything was sent."""
        flushed = self.force_flush(timeout_s)
        with self._lock:
            self._shutdown = True
            self._failed += len(self._queue)
            self._queue.clear()
            self._changed.notify_all()
            worker = self._worker
        if worker is not None and worker is not threading.current_thread():
            worker.join(timeout=max(timeout_s, 1.0))
        self._close()
        return flushed
