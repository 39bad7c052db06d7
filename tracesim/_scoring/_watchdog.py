"""One thread acting on deadlines: evaluators past ``timeout_s``, spans past ``max_defer_s``."""

from __future__ import annotations

import heapq
import itertools
import threading
import time
from collections.abc import Callable
from typing import Generic, TypeVar

__all__ = ["Watchdog"]

R = TypeVar("R")


class Watchdog(Generic[R]):
    """Calls ``on_tick(now)`` every ``tick_s`` and ``on_timeout(run)`` when a `watch`ed run passes
    its time limit. Starts on first use; one thread.

    Span deadlines need no registration: they are kept on the jobs, which the tick scans
    oldest first, so a scored call costs the caller nothing here and memory is bounded by the
    calls in flight. Run deadlines differ per evaluator and are rare: a heap, with a wake-up.
    """

    def __init__(
        self, tick_s: float, on_tick: Callable[[float], None], on_timeout: Callable[[R], None]
    ) -> None:
        self.tick_s = tick_s
        self._on_tick = on_tick
        self._on_timeout = on_timeout
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._timers: list[tuple[float, int, R]] = []
        self._ids = itertools.count()
        self._stopped = False

    def start(self) -> None:
        """Start the thread if it is not running."""
        if self._thread is None:
            with self._lock:
                self._start()

    def watch(self, run: R, timeout_s: float) -> None:
        """Call ``on_timeout(run)`` in ``timeout_s`` (the callee checks whether it finished)."""
        with self._lock:
            heapq.heappush(self._timers, (time.monotonic() + timeout_s, next(self._ids), run))
            self._start()
            self._wake.notify()

    def stop(self) -> None:
        """End the thread (it holds the pipeline alive through its callbacks); no more calls."""
        with self._lock:
            self._stopped = True
            self._timers.clear()
            self._wake.notify()

    def _start(self) -> None:
        if self._thread is None and not self._stopped:
            self._thread = threading.Thread(target=self._loop, name="tracesim-scoring-watchdog", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        next_tick = time.monotonic() + self.tick_s
        while True:
            runs: list[R] = []
            with self._lock:
                if self._stopped:
                    return
                now = time.monotonic()
                while self._timers and self._timers[0][0] <= now:
                    runs.append(heapq.heappop(self._timers)[2])
                if not runs and now < next_tick:
                    until = min(next_tick, self._timers[0][0]) if self._timers else next_tick
                    self._wake.wait(max(0.001, until - now))
                    continue
            for run in runs:
                self._on_timeout(run)
            if now >= next_tick:
                next_tick = now + self.tick_s
                self._on_tick(now)
