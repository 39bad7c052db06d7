"""One thread acting on deadlines: evaluators past ``timeout_s``, spans past ``max_defer_s``."""

from __future__ import annotations

import collections
import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Watchdog"]

R = TypeVar("R")


class Watchdog(Generic[R]):
    """Calls ``on_defer(job_id)`` ``max_defer_s`` after `defer`, and ``on_timeout(run)`` when a
    `watch`ed run passes its time limit. Started on first use; one thread.

    Span deadlines arrive in submit order with one delay, so they sit in a FIFO and cost the
    submitting thread no lock and no wake-up: a watchdog that saw none sleeps at most
    ``max_defer_s``, which is never past a deadline added meanwhile. Run deadlines differ per
    evaluator and are rare: a heap, with a wake-up.
    """

    def __init__(
        self, max_defer_s: float, on_defer: Callable[[int], None], on_timeout: Callable[[R], None]
    ) -> None:
        self.max_defer_s = max_defer_s
        self._on_defer = on_defer
        self._on_timeout = on_timeout
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._defer: collections.deque[tuple[float, int]] = collections.deque()
        self._timers: list[tuple[float, int, R]] = []
        self._ids = itertools.count()

    def defer(self, job_id: int) -> None:
        """Call ``on_defer(job_id)`` in ``max_defer_s`` (lock-free: the caller's hot path)."""
        self._defer.append((time.monotonic() + self.max_defer_s, job_id))
        if self._thread is None:
            with self._lock:
                self._start()

    def watch(self, run: R, timeout_s: float) -> None:
        """Call ``on_timeout(run)`` in ``timeout_s`` (the callee checks whether it finished)."""
        with self._lock:
            heapq.heappush(self._timers, (time.monotonic() + timeout_s, next(self._ids), run))
            self._start()
            self._wake.notify()

    def _start(self) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="tracesim-scoring-watchdog", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while True:
            jobs: list[int] = []
            runs: list[R] = []
            with self._lock:
                now = time.monotonic()
                while self._defer and self._defer[0][0] <= now:
                    jobs.append(self._defer.popleft()[1])
                while self._timers and self._timers[0][0] <= now:
                    runs.append(heapq.heappop(self._timers)[2])
                if not jobs and not runs:
                    deadlines = [self._defer[0][0]] if self._defer else []
                    if self._timers:
                        deadlines.append(self._timers[0][0])
                    wait = min(deadlines) - now if deadlines else self.max_defer_s
                    self._wake.wait(max(0.001, min(wait, self.max_defer_s)))
                    continue
            for run in runs:
                self._on_timeout(run)
            for job_id in jobs:
                self._on_defer(job_id)
