"""The @trace decorator and the span() context manager on every kind of callable."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Iterator

import pytest

import tracesim
from tracesim.testing import CapturedSpans, capture_spans


@pytest.fixture
def captured() -> Iterator[CapturedSpans]:
    with capture_spans(service_name="tests") as spans:
        yield spans


@tracesim.trace(kind="agent")
def answer(question: str) -> str:
    return f"answer to {question}"


def test_a_function_call_becomes_a_span_with_its_input_and_output(captured: CapturedSpans) -> None:
    assert answer("Where was Marie Curie born?") == "answer to Where was Marie Curie born?"
    span = captured.by_name("answer")
    assert span.attributes["input.value"] == "Where was Marie Curie born?"
    assert span.attributes["input.mime_type"] == "text/plain"
    assert span.attributes["output.value"] == "answer to Where was Marie Curie born?"
    assert span.attributes["output.mime_type"] == "text/plain"
    assert span.attributes["openinference.span.kind"] == "AGENT"
    assert span.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert span.attributes["gen_ai.agent.name"] == "answer"
    assert span.status_code == "OK"  # as OpenInference instrumentations mark a call that returned
    assert span.resource["service.name"] == "tests"


def test_several_arguments_are_bound_to_names_with_defaults_as_json(captured: CapturedSpans) -> None:
    @tracesim.trace(kind="tool")
    def search(query: str, top_k: int = 3, *, lang: str = "en") -> list[str]:
        return [query] * top_k

    search("curie", lang="pl")
    span = captured.by_name("search")
    assert json.loads(span.attributes["input.value"]) == {"query": "curie", "top_k": 3, "lang": "pl"}
    assert span.attributes["input.mime_type"] == "application/json"
    assert json.loads(span.attributes["output.value"]) == ["curie", "curie", "curie"]
    assert span.attributes["gen_ai.tool.name"] == "search"
    assert span.attributes["gen_ai.operation.name"] == "execute_tool"


def test_var_args_and_keyword_arguments_are_recorded(captured: CapturedSpans) -> None:
    @tracesim.trace
    def merge(*parts: str, **options: int) -> str:
        return "".join(parts)

    merge("a", "b", width=3)
    assert json.loads(captured.by_name("merge").attributes["input.value"]) == {
        "parts": ["a", "b"],
        "options": {"width": 3},
    }


def test_methods_drop_self_and_cls_and_are_named_after_the_class(captured: CapturedSpans) -> None:
    class Agent:
        prefix = "A:"

        @tracesim.trace
        def run(self, question: str) -> str:
            return self.prefix + question

        @classmethod
        @tracesim.trace
        def build(cls, name: str) -> str:
            return cls.prefix + name

        @tracesim.trace
        @classmethod
        def build_outer(cls, name: str) -> str:
            return cls.prefix + name

        @tracesim.trace
        @staticmethod
        def helper(x: int, y: int) -> int:
            return x + y

    agent = Agent()
    assert agent.run("q") == "A:q"
    assert Agent.build("n") == "A:n"
    assert Agent.build_outer("m") == "A:m"
    assert agent.helper(1, 2) == 3
    assert captured.by_name("Agent.run").attributes["input.value"] == "q"
    assert captured.by_name("Agent.build").attributes["input.value"] == "n"
    assert captured.by_name("Agent.build_outer").attributes["input.value"] == "m"
    assert json.loads(captured.by_name("Agent.helper").attributes["input.value"]) == {"x": 1, "y": 2}


def test_name_and_attributes_arguments(captured: CapturedSpans) -> None:
    @tracesim.trace(name="custom", attributes={"team": "search", "version": 2})
    def f() -> None:
        return None

    f()
    span = captured.by_name("custom")
    assert span.attributes["team"] == "search"
    assert span.attributes["version"] == 2
    assert "input.value" not in span.attributes  # no arguments, nothing to record


def test_capture_can_be_turned_off_per_function(captured: CapturedSpans) -> None:
    @tracesim.trace(capture_input=False, capture_output=False)
    def secret(password: str) -> str:
        return password[::-1]

    secret("hunter2")
    attributes = captured.by_name("secret").attributes
    assert "input.value" not in attributes
    assert "output.value" not in attributes


def test_capture_can_be_turned_off_globally() -> None:
    with capture_spans(capture=False) as captured:
        answer("q")
        with tracesim.span("block", input="x") as s:
            s.set_output("y")
    for span in captured.spans:
        assert not any(k.startswith(("input.", "output.")) for k in span.attributes)


def test_async_functions_are_traced(captured: CapturedSpans) -> None:
    @tracesim.trace
    async def fetch(url: str) -> dict[str, str]:
        await asyncio.sleep(0)
        return {"url": url}

    assert asyncio.run(fetch("https://example.org")) == {"url": "https://example.org"}
    assert json.loads(captured.by_name("fetch").attributes["output.value"]) == {"url": "https://example.org"}


def test_a_generator_span_covers_the_whole_iteration_and_records_the_items(captured: CapturedSpans) -> None:
    @tracesim.trace(kind="llm")
    def stream(n: int) -> Iterator[str]:
        for i in range(n):
            with tracesim.span(f"chunk-{i}"):
                pass
            yield f"t{i} "

    chunks = stream(3)
    assert captured.spans == []  # nothing runs before the first step
    assert list(chunks) == ["t0 ", "t1 ", "t2 "]
    span = captured.by_name("stream")
    assert span.attributes["output.value"] == "t0 t1 t2 "
    assert span.attributes["tracesim.output.items"] == 3
    for i in range(3):
        assert captured.by_name(f"chunk-{i}").parent_span_id == span.span_id
    assert span.end_time_unix_nano >= max(s.end_time_unix_nano for s in captured.named("chunk-2"))


def test_non_text_items_are_recorded_as_a_json_list(captured: CapturedSpans) -> None:
    @tracesim.trace
    def numbers() -> Iterator[int]:
        yield from (1, 2, 3)

    assert sum(numbers()) == 6
    assert json.loads(captured.by_name("numbers").attributes["output.value"]) == [1, 2, 3]


def test_generator_output_is_bounded() -> None:
    @tracesim.trace
    def many() -> Iterator[int]:
        yield from range(50)

    with capture_spans(max_generator_items=10) as captured:
        assert len(list(many())) == 50
    span = captured.by_name("many")
    assert json.loads(span.attributes["output.value"]) == list(range(10))
    assert span.attributes["tracesim.output.items"] == 50


def test_closing_a_generator_early_ends_its_span_with_the_items_so_far(captured: CapturedSpans) -> None:
    cleaned_up = []

    @tracesim.trace
    def stream() -> Iterator[str]:
        try:
            yield from ["a", "b", "c", "d"]
        finally:
            cleaned_up.append(tracesim.current_span().otel_span.get_span_context().span_id)

    gen = stream()
    assert next(gen) == "a"
    assert next(gen) == "b"
    gen.close()
    span = captured.by_name("stream")
    assert span.attributes["output.value"] == "ab"
    assert span.attributes["tracesim.generator.closed_early"] is True
    assert span.status_code == "OK"
    # the generator's own clean-up ran inside its span
    assert cleaned_up == [int(span.span_id, 16)]


def test_send_and_throw_reach_the_wrapped_generator(captured: CapturedSpans) -> None:
    @tracesim.trace
    def echo() -> Iterator[str]:
        received = yield "ready"
        while True:
            try:
                received = yield f"got {received}"
            except KeyError:
                received = "recovered"

    gen = echo()
    assert next(gen) == "ready"
    assert gen.send("x") == "got x"
    assert gen.throw(KeyError("k")) == "got recovered"
    gen.close()
    assert captured.by_name("echo").attributes["output.value"] == "readygot xgot recovered"


def test_generator_return_value_is_kept(captured: CapturedSpans) -> None:
    @tracesim.trace
    def inner() -> Iterator[int]:
        yield 1
        return 42

    def outer() -> Iterator[int]:
        result = yield from inner()
        yield result

    assert list(outer()) == [1, 42]


def test_an_abandoned_generator_still_ends_its_span(captured: CapturedSpans) -> None:
    @tracesim.trace
    def stream() -> Iterator[int]:
        yield from range(10)

    gen = stream()
    next(gen)
    del gen  # garbage collection closes it
    assert captured.by_name("stream").attributes["tracesim.generator.closed_early"] is True


def test_async_generators_are_traced_and_closable(captured: CapturedSpans) -> None:
    @tracesim.trace
    async def tokens(n: int) -> AsyncIterator[str]:
        for i in range(n):
            await asyncio.sleep(0)
            with tracesim.span("inner"):
                pass
            yield str(i)

    async def main() -> list[str]:
        full = [t async for t in tokens(3)]
        partial = tokens(5)
        first = await partial.__anext__()
        await partial.aclose()
        return [*full, first]

    assert asyncio.run(main()) == ["0", "1", "2", "0"]
    complete, closed = sorted(captured.named("tokens"), key=lambda s: s.start_time_unix_nano)
    assert complete.attributes["output.value"] == "012"
    assert closed.attributes["output.value"] == "0"
    assert closed.attributes["tracesim.generator.closed_early"] is True
    parents = {s.parent_span_id for s in captured.named("inner")}
    assert parents == {complete.span_id, closed.span_id}


def test_nested_calls_and_span_blocks_form_a_tree(captured: CapturedSpans) -> None:
    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return city.upper()

    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        with tracesim.span("retrieve", kind="retriever", input=question) as s:
            s.set_output(["doc"])
            assert tracesim.current_span() is s
        return lookup("warsaw")

    agent("q")
    root = captured.by_name("agent")
    assert root.parent_span_id is None
    assert [c.name for c in captured.children(root)] == ["retrieve", "lookup"]
    assert {s.trace_id for s in captured.spans} == {root.trace_id}
    retrieve = captured.by_name("retrieve")
    assert retrieve.attributes["openinference.span.kind"] == "RETRIEVER"
    assert retrieve.attributes["input.value"] == "q"
    assert json.loads(retrieve.attributes["output.value"]) == ["doc"]


def test_set_output_inside_a_traced_function_wins_over_the_return_value(captured: CapturedSpans) -> None:
    @tracesim.trace
    def f() -> dict[str, str]:
        tracesim.current_span().set_output("the visible answer")
        tracesim.current_span().set_attribute("retrieval.hits", 3)
        return {"internal": "state"}

    f()
    span = captured.by_name("f")
    assert span.attributes["output.value"] == "the visible answer"
    assert span.attributes["retrieval.hits"] == 3


def test_span_attributes_of_any_type_are_kept(captured: CapturedSpans) -> None:
    with tracesim.span("s", attributes={"tags": ["a", "b"]}) as s:
        s.set_attribute("doc", {"id": 1})
        s.set_attribute("ratio", 0.5)
        s.set_attribute("ids", [1, 2])
        s.set_attribute("mixed", [1, "a"])
    attributes = captured.by_name("s").attributes
    assert attributes["tags"] == ["a", "b"]
    assert attributes["doc"] == '{"id":1}'
    assert attributes["ratio"] == 0.5
    assert attributes["ids"] == [1, 2]
    assert attributes["mixed"] == '[1,"a"]'


def test_recursion_nests_each_call_under_its_caller(captured: CapturedSpans) -> None:
    @tracesim.trace
    def factorial(n: int) -> int:
        return 1 if n <= 1 else n * factorial(n - 1)

    assert factorial(6) == 720
    spans = {int(s.attributes["input.value"]): s for s in captured.named("factorial")}
    assert spans[6].parent_span_id is None
    for n in range(1, 6):
        assert spans[n].parent_span_id == spans[n + 1].span_id


def test_asyncio_tasks_keep_their_parents(captured: CapturedSpans) -> None:
    @tracesim.trace
    async def leaf(i: int) -> int:
        await asyncio.sleep(0)
        return i

    @tracesim.trace
    async def branch(i: int) -> int:
        results = await asyncio.gather(leaf(i * 10), leaf(i * 10 + 1))
        return sum(results)

    @tracesim.trace
    async def root() -> int:
        return sum(await asyncio.gather(*(branch(i) for i in range(5))))

    assert asyncio.run(root()) == sum(range(0, 50, 10)) * 2 + 5
    branches = {s.span_id: int(s.attributes["input.value"]) for s in captured.named("branch")}
    root_span = captured.by_name("root")
    assert all(s.parent_span_id == root_span.span_id for s in captured.named("branch"))
    for leaf_span in captured.named("leaf"):
        assert int(leaf_span.attributes["input.value"]) // 10 == branches[leaf_span.parent_span_id]


def test_span_context_manager_works_with_async_with(captured: CapturedSpans) -> None:
    async def main() -> None:
        async with tracesim.span("outer", kind="chain") as s:
            s.set_output("done")
            with tracesim.span("inner"):
                pass

    asyncio.run(main())
    assert captured.by_name("inner").parent_span_id == captured.by_name("outer").span_id


def test_current_span_outside_any_span_records_nothing(captured: CapturedSpans) -> None:
    s = tracesim.current_span()
    assert not s.is_recording()
    s.set_output("ignored")
    s.set_attribute("x", 1)
    assert captured.spans == []


def test_a_bad_kind_is_rejected_at_decoration_time() -> None:
    with pytest.raises(tracesim.ConfigError, match="kind") as info:

        @tracesim.trace(kind="robot")
        def f() -> None:
            return None

    assert "agent" in str(info.value)
    with pytest.raises(tracesim.ConfigError):
        tracesim.span("x", kind="nope")


def test_disabled_tracesim_runs_functions_untouched() -> None:
    with capture_spans(enabled=False) as captured:
        assert answer("q") == "answer to q"
        with tracesim.span("s") as s:
            s.set_output("x")
    assert captured.spans == []


def test_decorated_functions_keep_their_metadata() -> None:
    import inspect

    @tracesim.trace
    def documented(a: int, b: str = "x") -> str:
        """Docstring."""
        return b * a

    @tracesim.trace
    def gen() -> Iterator[int]:
        yield 1

    @tracesim.trace
    async def coro() -> int:
        return 1

    @tracesim.trace
    async def agen() -> AsyncIterator[int]:
        yield 1

    assert documented.__name__ == "documented"
    assert documented.__doc__ == "Docstring."
    assert list(inspect.signature(documented).parameters) == ["a", "b"]
    assert inspect.signature(documented).parameters["b"].default == "x"
    assert inspect.isgeneratorfunction(gen)
    assert inspect.iscoroutinefunction(coro)
    assert inspect.isasyncgenfunction(agen)


def test_a_span_around_a_yield_survives_steps_taken_in_different_threads(captured: CapturedSpans) -> None:
    import threading

    @tracesim.trace
    def stream() -> Iterator[int]:
        with tracesim.span("around-yield"):
            yield 1
            yield 2
        yield 3

    gen = stream()
    seen: list[int] = [next(gen)]  # step 1 in this thread
    assert not tracesim.current_span().is_recording()  # nothing leaked into the consumer
    thread = threading.Thread(target=lambda: seen.extend(gen))  # the rest in another thread
    thread.start()
    thread.join()
    assert seen == [1, 2, 3]
    around = captured.by_name("around-yield")
    assert around.parent_span_id == captured.by_name("stream").span_id


def test_a_span_the_user_ended_inside_its_block_is_not_changed_afterwards(captured: CapturedSpans) -> None:
    from opentelemetry.trace import StatusCode

    with tracesim.span("early") as handle:
        handle.otel_span.end()  # the user ends it: what was exported is final
    assert captured.by_name("early").status_code == "UNSET"
    assert handle.otel_span.status.status_code is StatusCode.UNSET  # as set_status after end() would leave it
