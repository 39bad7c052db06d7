"""Rate limits and the retry budget of one model endpoint (all on the model loop)."""

from __future__ import annotations

import asyncio
import time

__all__ = ["RateLimiter", "RetryBudget"]


class _Bucket:
    """A token bucket: ``per_minute`` tokens a minute, at most a minute's worth saved up."""

    def __init__(self, per_minute: float) -> None:
        self.rate = per_minute / 60.0
        self.capacity = float(per_minute)
        self.tokens = float(per_minute)
        self.stamp = time.monotonic()

    def wait_for(self, amount: float) -> float:
        """Seconds until ``amount`` tokens are there (0: take them now)."""
        now = time.monotonic()
        self.tokens = min(self.capacity, self.tokens + (now - self.stamp) * self.rate)
        self.stamp = now
        amount = min(amount, self.capacity)  # a request larger than a minute's budget waits for a full bucket
        if self.tokens >= amount:
            self.tokens -= amount
            return 0.0
        return (amount - self.tokens) / self.rate


class RateLimiter:
    """Requests per minute and tokens per minute for one (endpoint, model); None = no limit.

    Callers wait in turn (a lock), so a burst is spread out instead of answered with 429s.

    Example:
        >>> import asyncio
        >>> asyncio.run(RateLimiter(rpm=600, tpm=None).acquire(10))
        0.0
    """

    def __init__(self, *, rpm: float | None, tpm: float | None) -> None:
        self._requests = _Bucket(rpm) if rpm else None
        self._tokens = _Bucket(tpm) if tpm else None
        self._lock: asyncio.Lock | None = None

    async def acquire(self, tokens: float) -> float:
        """Wait until one request of about ``tokens`` tokens may go; returns the seconds waited."""
        if self._requests is None and self._tokens is None:
            return 0.0
        if self._lock is None:
            self._lock = asyncio.Lock()
        waited = 0.0
        async with self._lock:
            for bucket, amount in ((self._requests, 1.0), (self._tokens, tokens)):
                while bucket is not None:
                    delay = bucket.wait_for(amount)
                    if delay <= 0:
                        break
                    waited += delay
                    await asyncio.sleep(delay)
        return waited


class RetryBudget:
    """Retries allowed as a share of requests, so a failing backend is not hit by a retry storm.

    Each request adds ``ratio`` of a retry to the budget (up to ``capacity``); each retry takes
    one. A fresh budget holds ``capacity`` retries.

    Example:
        >>> budget = RetryBudget(ratio=0.2, capacity=2)
        >>> budget.take(), budget.take(), budget.take()
        (True, True, False)
    """

    def __init__(self, *, ratio: float = 0.2, capacity: float = 10.0) -> None:
        self.ratio = ratio
        self.capacity = capacity
        self.balance = capacity

    def deposit(self) -> None:
        self.balance = min(self.capacity, self.balance + self.ratio)

    def take(self) -> bool:
        if self.balance >= 1.0:
            self.balance -= 1.0
            return True
        return False
