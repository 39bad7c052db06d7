"""A FIFO for worker threads that producers can use without waking a thread per item."""

from __future__ import annotations

import collections
import threading
from typing import Generic, TypeVar

__all__ = ["WorkQueue"]

T = TypeVar("T")


class WorkQueue(Generic[T]):
    """Producers append without a lock or a wake-up; idle workers look again every ``interval_s``.

    Waking a sleeping thread costs the waker a system call and often a context switch: a few
    microseconds that would land on every traced call. So `put` wakes the workers only when
    ``batch`` items are waiting; otherwise they find the work themselves within ``interval_s``,
    as ``BatchSpanProcessor`` does for spans. `wake` (flush, shutdown) wakes them at once.

    Example:
        >>> q = WorkQueue[int](batch=2, interval_s=0.01)
        >>> q.put(1)
        >>> q.get()
        1
    """

    def __init__(self, *, batch: int = 32, interval_s: float = 0.05) -> None:
        self._items: collections.deque[T] = collections.deque()
        self._ready = threading.Condition(threading.Lock())
        self._sleeping = 0
        self.batch = batch
        self.interval_s = interval_s

    def __len__(self) -> int:
        return len(self._items)

    def put(self, item: T) -> None:
        """Append ``item``; wake the workers only when a batch is waiting."""
        self._items.append(item)
        # Read without the lock: a wake-up missed by a race is made up by the interval.
        if self._sleeping and len(self._items) >= self.batch:
            self.wake()

    def wake(self) -> None:
        """Wake every idle worker now."""
        with self._ready:
            self._ready.notify_all()

    def get(self) -> T:
        """The oldest item, waiting for one as long as it takes."""
        while True:
            try:
                return self._items.popleft()
            except IndexError:
                pass
            with self._ready:
                if self._items:
                    continue
                self._sleeping += 1
                try:
                    self._ready.wait(self.interval_s)
                finally:
                    self._sleeping -= 1
