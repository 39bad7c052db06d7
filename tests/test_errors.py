"""The user's exceptions propagate untouched; tracesim's own failures never reach user code."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Iterator

import pytest

import tracesim
from tracesim import _internal_errors
from tracesim.testing import CapturedSpans, capture_spans


class AgentError(Exception):
    pass


@pytest.fixture
def captured() -> Iterator[CapturedSpans]:
    with capture_spans() as spans:
        yield spans


def _assert_error_span(captured: CapturedSpans, name: str) -> None:
    span = captured.by_name(name)
    assert span.status_code == "ERROR"
    assert span.status_message == "AgentError: boom"
    assert span.attributes["error.type"] == f"{__name__}.AgentError"
    (event,) = span.event("exception")
    assert event.attributes["exception.type"].endswith("AgentError")
    assert event.attributes["exception.message"] == "boom"
    assert "Traceback" in event.attributes["exception.stacktrace"]


def test_a_sync_exception_propagates_as_the_same_object(captured: CapturedSpans) -> None:
    error = AgentError("boom")

    @tracesim.trace
    def fails() -> None:
        raise error

    with pytest.raises(AgentError) as info:
        fails()
    assert info.value is error
    assert info.value.__traceback__ is not None
    # the traceback still points into the user's function
    assert info.traceback[-1].name == "fails"
    _assert_error_span(captured, "fails")


def test_an_async_exception_propagates(captured: CapturedSpans) -> None:
    @tracesim.trace
    async def fails() -> None:
        await asyncio.sleep(0)
        raise AgentError("boom")

    with pytest.raises(AgentError, match="boom"):
        asyncio.run(fails())
    _assert_error_span(captured, "fails")


def test_a_generator_exception_propagates_with_the_items_so_far(captured: CapturedSpans) -> None:
    @tracesim.trace
    def fails() -> Iterator[str]:
        yield "partial"
        raise AgentError("boom")

    received: list[str] = []
    with pytest.raises(AgentError):
        received.extend(fails())
    assert received == ["partial"]
    _assert_error_span(captured, "fails")
    assert captured.by_name("fails").attributes["output.value"] == "partial"


def test_an_async_generator_exception_propagates(captured: CapturedSpans) -> None:
    @tracesim.trace
    async def fails() -> AsyncIterator[str]:
        yield "partial"
        raise AgentError("boom")

    async def consume() -> None:
        async for _ in fails():
            pass

    with pytest.raises(AgentError):
        asyncio.run(consume())
    _assert_error_span(captured, "fails")


def test_an_exception_in_a_span_block_propagates(captured: CapturedSpans) -> None:
    with pytest.raises(AgentError), tracesim.span("block"):
        raise AgentError("boom")
    _assert_error_span(captured, "block")


def test_asyncio_cancellation_ends_the_span_and_propagates(captured: CapturedSpans) -> None:
    started = asyncio.Event()

    @tracesim.trace
    async def slow() -> str:
        started.set()
        await asyncio.sleep(3600)
        return "never"

    @tracesim.trace
    async def stream() -> AsyncIterator[int]:
        yield 1
        started.set()
        await asyncio.sleep(3600)
        yield 2

    async def main() -> None:
        task = asyncio.create_task(slow())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

        started.clear()

        async def consume() -> None:
            async for _ in stream():
                pass

        task = asyncio.create_task(consume())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    for name in ("slow", "stream"):
        span = captured.by_name(name)
        assert span.status_code == "ERROR"
        assert span.attributes["error.type"] == "asyncio.exceptions.CancelledError"
        assert span.end_time_unix_nano > span.start_time_unix_nano


def test_record_exception_on_a_span(captured: CapturedSpans) -> None:
    with tracesim.span("handled") as s:
        try:
            raise AgentError("boom")
        except AgentError as exc:
            s.record_exception(exc, mark_error=False)
    span = captured.by_name("handled")
    assert span.status_code == "OK"  # handled, not raised: the block succeeded
    assert span.event("exception")


def test_an_error_marked_on_purpose_is_not_turned_ok_when_the_call_returns(captured: CapturedSpans) -> None:
    @tracesim.trace
    def degraded() -> str:
        tracesim.current_span().record_exception(AgentError("fallback used"))
        return "cached answer"

    assert degraded() == "cached answer"
    span = captured.by_name("degraded")
    assert span.status_code == "ERROR"
    assert span.status_message == "AgentError: fallback used"


class BrokenTracer:
    """Stands in for a bug inside tracesim: starting a span fails."""

    def start_span(self, *args: object, **kwargs: object) -> None:
        raise RuntimeError("tracer bug")


def _break_tracer(monkeypatch: pytest.MonkeyPatch) -> None:
    runtime = tracesim._runtime.current
    assert runtime is not None
    monkeypatch.setattr(runtime, "tracer", BrokenTracer())


def test_an_internal_failure_is_logged_once_and_the_call_still_runs(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """Outside tracesim's own tests, a bug in tracesim degrades to an untraced call."""
    with capture_spans(internal_errors="log") as captured:
        _break_tracer(monkeypatch)
        calls = []

        @tracesim.trace
        def work(x: int) -> int:
            calls.append(x)
            return x * 2

        with caplog.at_level(logging.ERROR, logger="tracesim"):
            assert [work(1), work(2)] == [2, 4]
    assert calls == [1, 2]  # called exactly once each
    assert captured.spans == []
    records = [r for r in caplog.records if "internal error" in r.getMessage()]
    assert len(records) == 1  # logged once, not per call
    assert _internal_errors.counts["trace: start"] >= 2


def test_internal_failures_raise_under_tracesims_own_tests(monkeypatch: pytest.MonkeyPatch) -> None:
    with capture_spans():
        _break_tracer(monkeypatch)

        @tracesim.trace
        def work() -> int:
            return 1

        with pytest.raises(RuntimeError, match="tracer bug"):
            work()


def test_a_config_error_never_shows_a_secret_given_as_a_value() -> None:
    """The message is printed and logged by whoever catches it: the value is shown redacted
    (``.value`` keeps what was given, for code that inspects it)."""
    key = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"
    with pytest.raises(tracesim.ConfigError) as caught:
        tracesim.configure(exporters=[key])
    assert "Abc123Def456Ghi789" not in str(caught.value)
    assert "[REDACTED:api_key]" in str(caught.value)
    assert caught.value.value == [key]
