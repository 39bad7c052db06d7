"""Context set once (session, user, tags, metadata) reaches every span inside; finished calls are found."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

from opentelemetry import trace as otel_trace

import tracesim
from tracesim.testing import capture_spans


def test_attributes_reach_every_span_inside_nested_blocks_adding_up() -> None:
    with capture_spans() as captured:

        @tracesim.trace
        def answer(question: str) -> str:
            with tracesim.span("retrieve", kind="retriever"):
                pass
            return "Warsaw"

        with tracesim.attributes(session_id="s-42", user_id="u-7", tags=["beta"], metadata={"plan": "pro"}):
            with tracesim.attributes(tags=["eu"], metadata={"region": "eu-west"}, deployment="blue"):
                answer("q")
            answer("q2")
        answer("outside")
        spans = captured.spans
    for span in spans[:2]:
        assert span.attributes["session.id"] == "s-42"
        assert span.attributes["user.id"] == "u-7"
        assert list(span.attributes["tag.tags"]) == ["beta", "eu"]
        assert json.loads(str(span.attributes["metadata"])) == {"plan": "pro", "region": "eu-west"}
        assert span.attributes["deployment"] == "blue"
    second = spans[3]  # answer("q2"): the inner block's additions are gone
    assert list(second.attributes["tag.tags"]) == ["beta"]
    assert "deployment" not in second.attributes
    assert "session.id" not in spans[-1].attributes


def test_attributes_reach_spans_of_other_instrumentation() -> None:
    with capture_spans() as captured:
        tracer = otel_trace.get_tracer("an-instrumentation")
        with tracesim.attributes(session_id="s-1"), tracer.start_as_current_span("POST /v1/chat/completions"):
            pass
        (span,) = captured.spans
    assert span.attributes["session.id"] == "s-1"


def test_attributes_follow_asyncio_tasks_and_threads_handed_the_context() -> None:
    with capture_spans() as captured:

        @tracesim.trace
        async def fetch(i: int) -> int:
            await asyncio.sleep(0)
            return i

        @tracesim.trace
        def work(i: int) -> int:
            return i

        async def main() -> None:
            await asyncio.gather(*(asyncio.create_task(fetch(i)) for i in range(3)))

        with tracesim.attributes(session_id="s-async"):
            asyncio.run(main())
        with tracesim.attributes(session_id="s-thread"), tracesim.ContextThreadPoolExecutor(2) as pool:
            list(pool.map(work, range(3)))
        with tracesim.attributes(session_id="s-plain"), ThreadPoolExecutor(2) as plain:
            list(plain.map(work, range(2)))  # a plain pool is not handed the context
        spans = captured.spans
    assert [s.attributes.get("session.id") for s in spans if s.name == "fetch"] == ["s-async"] * 3
    sessions = [s.attributes.get("session.id") for s in spans if s.name == "work"]
    assert sessions == ["s-thread"] * 3 + [None] * 2


def test_bad_values_are_written_as_text_never_raised() -> None:
    with capture_spans() as captured:
        odd = {"session_id": 42, "tags": "solo", "metadata": {"when": object()}, "extra": [1, "a"]}
        with tracesim.attributes(**odd), tracesim.span("block"):  # type: ignore[arg-type]
            pass
        (span,) = captured.spans
    assert span.attributes["session.id"] == "42"
    assert list(span.attributes["tag.tags"]) == ["solo"]
    assert "object object" in str(span.attributes["metadata"])
    assert span.attributes["extra"] == '[1,"a"]'


def test_last_span_is_the_finished_call_with_hex_ids() -> None:
    with capture_spans() as captured:

        @tracesim.trace
        def answer(question: str) -> str:
            return "Warsaw"

        answer("q")
        last = tracesim.last_span()
        assert last is not None
        tracesim.score(last, name="thumbs_up", value=1.0)
        (exported, carrier) = captured.spans
    assert last.trace_id == exported.trace_id
    assert last.span_id == exported.span_id
    assert len(last.trace_id) == 32
    assert len(last.span_id) == 16
    assert carrier.trace_id == exported.trace_id


def test_last_span_is_per_task() -> None:
    with capture_spans():

        @tracesim.trace
        async def step(name: str) -> str:
            await asyncio.sleep(0)
            return name

        async def run(name: str) -> str | None:
            await step(name)
            last = tracesim.last_span()
            return None if last is None else last.span_id

        async def main() -> list[str | None]:
            return list(await asyncio.gather(run("a"), run("b")))

        ids = asyncio.run(main())
    assert None not in ids
    assert len(set(ids)) == 2
