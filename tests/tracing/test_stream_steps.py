"""What generator wrappers keep per item and where each step runs: output, caps, context."""

from __future__ import annotations

import asyncio
import contextvars
import json
from collections.abc import AsyncGenerator, AsyncIterator, Iterator

import pytest

import tracesim
from tracesim.evaluators import ExactMatch
from tracesim.testing import CapturedSpans, capture_spans

TEXT_CAP = 10_000_000  # characters of streamed text kept as the output (the rest is counted)


@pytest.fixture
def captured() -> Iterator[CapturedSpans]:
    with capture_spans(service_name="tests", max_value_chars=64) as spans:
        yield spans


def test_a_long_text_stream_keeps_chunks_until_the_one_that_reaches_the_cap(captured: CapturedSpans) -> None:
    chunk = "a" * 300_007  # 34 chunks reach the cap: the 34th is kept whole, the rest only counted

    @tracesim.trace
    def stream() -> Iterator[str]:
        for _ in range(80):
            yield chunk

    assert sum(len(c) for c in stream()) == 80 * len(chunk)
    span = captured.by_name("stream")
    assert span.attributes["tracesim.output.items"] == 80
    assert span.attributes["tracesim.output.original_chars"] == 34 * len(chunk)


def test_many_small_chunks_are_all_counted_and_kept(captured: CapturedSpans) -> None:
    @tracesim.trace(capture_output=False, evaluators=[ExactMatch()], expected="x" * 1001)
    def stream() -> Iterator[str]:
        yield from ["x"] * 1001

    assert "".join(stream()) == "x" * 1001
    span = captured.by_name("stream")
    assert span.attributes["tracesim.output.items"] == 1001
    assert "output.value" not in span.attributes
    assert span.attributes["tracesim.eval.exact.passed"] is True  # scored on the whole text


@pytest.mark.parametrize(
    ("items", "limit", "kept"),
    [
        (["a", "b", 1, "c", 2], 3, ["a", "b", 1]),
        (["a", "b", "c", 1], 2, ["a", "b"]),
        ([*"x" * 150, 7, "y"], 1000, [*"x" * 150, 7, "y"]),
        ([*"x" * 150, 7, "y"], 100, ["x"] * 100),
    ],
)
def test_a_text_stream_that_turns_mixed_keeps_items_up_to_the_limit(
    items: list[object], limit: int, kept: list[object]
) -> None:
    @tracesim.trace
    def stream() -> Iterator[object]:
        yield from items

    with capture_spans(max_generator_items=limit) as captured:
        assert list(stream()) == items
    span = captured.by_name("stream")
    assert span.attributes["tracesim.output.items"] == len(items)
    assert json.loads(span.attributes["output.value"]) == kept


class Shouting(str):
    def __len__(self) -> int:
        raise RuntimeError("hostile __len__")

    def __str__(self) -> str:
        return "HOSTILE"


def test_str_subclasses_are_kept_as_their_plain_text(captured: CapturedSpans) -> None:
    @tracesim.trace
    def stream() -> Iterator[str]:
        yield "a"
        yield Shouting("b")
        yield "c"

    assert [str.__str__(c) for c in stream()] == ["a", "b", "c"]
    assert captured.by_name("stream").attributes["output.value"] == "abc"


_STEP_VAR: contextvars.ContextVar[str] = contextvars.ContextVar("step_var", default="unset")


def test_an_async_generator_runs_every_step_in_its_own_context(captured: CapturedSpans) -> None:
    seen_by_generator: list[tuple[str, bool]] = []
    seen_by_consumer: list[tuple[str, str]] = []

    @tracesim.trace
    async def tokens() -> AsyncIterator[str]:
        async def child() -> None:
            with tracesim.span("in-task"):
                await asyncio.sleep(0)

        for i in range(3):
            seen_by_generator.append((_STEP_VAR.get(), tracesim.current_span().is_recording()))
            _STEP_VAR.set(f"step {i}")  # carries to the next step, not to the consumer
            await asyncio.sleep(0.001)  # a real suspension in the middle of a step
            await asyncio.create_task(child())  # a task started in a step is under the stream's span
            yield str(i)

    async def main() -> tuple[str, str]:
        with tracesim.span("consumer") as consumer:
            parts = []
            async for token in tokens():
                seen_by_consumer.append((_STEP_VAR.get(), tracesim.current_span().span_id))
                parts.append(token)
            return "".join(parts), consumer.span_id

    text, consumer_id = asyncio.run(main())
    assert text == "012"
    assert seen_by_generator == [("unset", True), ("step 0", True), ("step 1", True)]
    # between steps the consumer sees its own context: the stream's span and values never leak out
    assert seen_by_consumer == [("unset", consumer_id)] * 3
    span = captured.by_name("tokens")
    assert span.parent_span_id == consumer_id
    assert span.attributes["output.value"] == "012"
    assert {s.parent_span_id for s in captured.named("in-task")} == {span.span_id}


def test_a_cancelled_async_generator_step_ends_the_span_with_the_error(captured: CapturedSpans) -> None:
    started = asyncio.Event()

    @tracesim.trace
    async def slow() -> AsyncIterator[str]:
        yield "first"
        started.set()
        await asyncio.sleep(60)
        yield "never"

    async def main() -> None:
        async def consume() -> None:
            async for _ in slow():
                pass

        task = asyncio.create_task(consume())
        await started.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(main())
    span = captured.by_name("slow")
    assert span.status_code == "ERROR"
    assert span.attributes["error.type"] == "asyncio.exceptions.CancelledError"
    assert span.attributes["output.value"] == "first"


def test_an_enclosing_expect_goes_to_the_stream_not_to_the_calls_it_makes(captured: CapturedSpans) -> None:
    @tracesim.trace(evaluators=[ExactMatch()])
    def lookup(city: str) -> str:
        return city

    @tracesim.trace(evaluators=[ExactMatch()])
    def stream() -> Iterator[str]:
        yield lookup("Warsaw")

    with tracesim.expect("Warsaw"):
        assert list(stream()) == ["Warsaw"]
    assert captured.by_name("stream").attributes["tracesim.expected.value"] == "Warsaw"
    assert "tracesim.expected.value" not in captured.by_name("lookup").attributes


def test_an_async_stream_closed_while_suspended_ends_its_span(captured: CapturedSpans) -> None:
    cleaned_in: list[bool] = []

    @tracesim.trace
    async def tokens() -> AsyncGenerator[str, None]:
        try:
            for i in range(10):
                await asyncio.sleep(0)
                yield str(i)
        finally:
            cleaned_in.append(tracesim.current_span().is_recording())

    async def main() -> None:
        stream = tokens()
        assert await stream.__anext__() == "0"
        assert await stream.__anext__() == "1"
        await stream.aclose()

    asyncio.run(main())
    span = captured.by_name("tokens")
    assert span.attributes["tracesim.generator.closed_early"] is True
    assert span.attributes["output.value"] == "01"
    assert cleaned_in == [True]
