"""Rate limits and the retry budget: a failing or busy backend is not hit by a storm."""

from __future__ import annotations

import asyncio
import time

import pytest
from llm_server import CHAT, LLMServer, Reply

from tracesim.evaluators import LLMSimilarity
from tracesim.evaluators._model._limits import RateLimiter, RetryBudget


def test_requests_per_minute_spread_a_burst_out() -> None:
    async def burst() -> list[float]:
        limiter = RateLimiter(rpm=60, tpm=None)  # a minute's worth (60) may go at once, then one a second
        return [await limiter.acquire(1) for _ in range(62)]

    waited = asyncio.run(burst())
    assert waited[:60] == [0.0] * 60
    assert waited[60] > 0.5
    assert waited[61] > 0.5


def test_tokens_per_minute_hold_back_a_large_request() -> None:
    async def run() -> tuple[float, float]:
        limiter = RateLimiter(rpm=None, tpm=60_000)  # 1,000 tokens a second
        return await limiter.acquire(60_000), await limiter.acquire(500)

    first, second = asyncio.run(run())
    assert first == 0.0
    assert second >= 0.4  # about half a second for 500 more tokens


def test_the_retry_budget_is_earned_by_requests() -> None:
    budget = RetryBudget(ratio=0.5, capacity=1)
    assert budget.take()
    assert not budget.take()
    budget.deposit()
    budget.deposit()
    assert budget.take()


def test_a_failing_backend_gets_a_bounded_number_of_retries(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tracesim.evaluators._model._caller._BACKOFF_BASE_S", 0.01)  # short waits, same count
    server.script(CHAT, *[Reply.status(500)] * 1000)
    judge = LLMSimilarity(base_url=server.base_url, api_key="k", model="budget-test", max_retries=4)
    results = [judge.evaluate(f"answer {i}", "reference", input="q") for i in range(30)]
    assert {r.error_type for r in results} == {"server_error"}
    # 30 calls: without a budget 4 retries each would make 150 requests; the budget allows 10 in all
    assert server.count(CHAT) == 30 + 10


def test_rpm_applies_to_the_evaluator_calls(server: LLMServer) -> None:
    judge = LLMSimilarity(base_url=server.base_url, api_key="k", model="rpm-test", rpm=60)
    started = time.monotonic()
    for i in range(61):
        assert judge.evaluate(f"answer {i}", "reference", input="q").status == "ok"
    assert time.monotonic() - started >= 0.5  # the 61st waited for the bucket (a lower bound)
    assert server.count(CHAT) == 61


def test_a_retry_after_past_60_s_is_not_waited_for(server: LLMServer) -> None:
    """The cap on Retry-After: a server asking for 61 s gets a rate_limited result at once."""
    server.script(CHAT, Reply.status(429, retry_after=61))
    judge = LLMSimilarity(base_url=server.base_url, api_key="k", model="retry-after-cap", timeout_s=120)
    result = judge.evaluate("answer", "reference", input="q")  # without the cap: waits 61 s, then scores
    assert result.error_type == "rate_limited"
    assert "asked to wait 61 s (Retry-After), more than the 60 s" in (result.error or "")
    assert server.count(CHAT) == 1


def test_a_retry_that_would_pass_timeout_s_is_not_started(server: LLMServer) -> None:
    server.script(CHAT, Reply.status(429, retry_after=30))
    judge = LLMSimilarity(base_url=server.base_url, api_key="k", model="retry-deadline", timeout_s=10)
    started = time.monotonic()
    result = judge.evaluate("answer", "reference", input="q")
    assert result.error_type == "rate_limited"  # the real cause, not a time-out 10 s later
    assert "a retry in 30 s would pass timeout_s=10 s" in (result.error or "")
    assert time.monotonic() - started < 60  # a hang ceiling: it answers at once, not after the 30 s wait
    assert server.count(CHAT) == 1
