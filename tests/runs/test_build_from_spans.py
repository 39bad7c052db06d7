"""A run built from the spans under a scored span, as real instrumentations write them.

The spans come from the real ``openai`` client over HTTP to the scripted server (traced by
tracesim's OpenAI integration under ``@tracesim.trace`` agent and tool functions) and from a
real pydantic-ai agent with a tool, traced by pydantic-ai's own instrumentation into
tracesim's tracer provider. Conventions no installed library emits (OpenInference, OpenLLMetry)
are written with a plain OpenTelemetry tracer, as those instrumentations write them.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import openai
import pytest
from llm_server import CHAT, LLMServer, Reply
from opentelemetry.sdk.trace import ReadableSpan
from scripted_agent import LOOKUP, weather_agent

import tracesim
from tracesim import _runtime
from tracesim._runs import build_run
from tracesim.runs import Run, ToolCall
from tracesim.testing import capture_spans

pytest.importorskip(
    "opentelemetry.instrumentation.genai.openai",
    reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
)


def named(spans: tuple[ReadableSpan, ...], name: str) -> ReadableSpan:
    matches = [span for span in spans if span.name == name]
    assert len(matches) == 1, [span.name for span in spans]
    return matches[0]


def test_an_openai_agent_run_has_its_llm_calls_and_each_tool_call_once(instrumented: LLMServer) -> None:
    server = instrumented
    server.script(
        CHAT,
        Reply.tool_call("lookup", '{"city": "Warsaw"}'),
        Reply.tool_call("lookup", '{"city": "Paris"}'),
        Reply.content("Warsaw 12 C, Paris 15 C"),
    )
    agent = weather_agent(server)
    with capture_spans() as captured:
        assert agent("Weather in Warsaw and Paris?") == "Warsaw 12 C, Paris 15 C"
    spans = captured.otel_spans
    run = build_run(named(spans, "agent"), spans)

    assert [(step.kind, step.name) for step in run.steps] == [
        ("llm", "chat gpt-4o-mini"),
        ("tool", "lookup"),
        ("llm", "chat gpt-4o-mini"),
        ("tool", "lookup"),
        ("llm", "chat gpt-4o-mini"),
    ]
    assert all(step.depth == 1 for step in run.steps)
    assert [step.start_ns for step in run.steps] == sorted(step.start_ns for step in run.steps)
    first, tool = run.steps[0], run.steps[1]
    assert first.requested == (ToolCall("lookup", {"city": "Warsaw"}),)
    call_id = first.requested[0].id
    assert call_id is not None
    assert call_id.startswith("call_")
    assert first.model == "scripted-model"
    assert first.input_tokens == 5
    assert first.output_tokens
    assert first.cost_usd is not None
    assert first.cost_usd > 0
    # tracesim's tool span records the function's input ("Warsaw"); it takes the request's id
    # and arguments, so the call counts once
    assert tool.tool_call is not None
    assert (tool.tool_call.id, tool.tool_call.arguments, tool.tool_call.output) == (
        call_id,
        {"city": "Warsaw"},
        "12 C",
    )
    assert tool.duration_s is not None
    assert tool.duration_s >= 0

    assert [call.as_dict() for call in run.tool_calls] == [
        {"name": "lookup", "arguments": {"city": "Warsaw"}, "output": "12 C"},
        {"name": "lookup", "arguments": {"city": "Paris"}, "output": "15 C"},
    ]
    assert run.llm_calls == 3
    assert run.tokens == sum((s.input_tokens or 0) + (s.output_tokens or 0) for s in run.steps) > 0
    assert run.cost_usd == pytest.approx(sum(s.cost_usd or 0 for s in run.steps))
    assert run.output == "Warsaw 12 C, Paris 15 C"
    assert not run.truncated
    assert run.truncated_reason is None
    assert run.duration_s is not None
    assert run.duration_s >= max(s.duration_s or 0 for s in run.steps)


def test_a_requested_call_no_tool_ran_is_still_a_tool_call_of_the_run(instrumented: LLMServer) -> None:
    server = instrumented

    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}], tools=[LOOKUP]
            )
        return "stopped before running the tool" if reply.choices[0].message.tool_calls else "?"

    server.script(CHAT, Reply.tool_call("lookup", '{"city": "Warsaw"}'))
    with capture_spans() as captured:
        agent("Weather?")
    spans = captured.otel_spans
    run = build_run(named(spans, "agent"), spans)
    assert [step.kind for step in run.steps] == ["llm"]
    assert run.tool_calls == (ToolCall("lookup", {"city": "Warsaw"}),)
    assert run.tool_calls[0].id == run.steps[0].requested[0].id is not None


def test_steps_beyond_the_limit_are_left_out_and_the_run_says_so(instrumented: LLMServer) -> None:
    server = instrumented
    server.script(CHAT, Reply.tool_call("lookup", '{"city": "Warsaw"}'), Reply.content("12 C"))
    agent = weather_agent(server)
    with capture_spans() as captured:
        agent("Weather in Warsaw?")
    spans = captured.otel_spans
    run = build_run(named(spans, "agent"), spans, max_steps=2)
    assert [step.kind for step in run.steps] == ["llm", "tool"]
    assert run.truncated
    assert run.truncated_reason == "step limit: kept the first 2 of 3 steps"


def test_a_child_still_running_marks_the_run_truncated_and_is_named(instrumented: LLMServer) -> None:
    with capture_spans() as captured:
        provider = _runtime.active().provider  # type: ignore[union-attr]
        tracer = provider.get_tracer("test")  # type: ignore[union-attr]
        with tracer.start_as_current_span("agent") as root:
            with tracer.start_as_current_span("done"):
                pass
            unended = tracer.start_span("slow tool", attributes={"gen_ai.operation.name": "execute_tool"})
        spans = captured.otel_spans
        assert isinstance(root, ReadableSpan)
        assert isinstance(unended, ReadableSpan)
        run = build_run(root, spans, running=[unended])
        unended.end()
    assert run.truncated
    assert run.truncated_reason == "1 step(s) had not ended: 'slow tool'"
    assert [(step.name, step.duration_s is None) for step in run.steps] == [
        ("done", False),
        ("slow tool", True),
    ]
    assert not build_run(root, spans).truncated  # without being told of it, the run is what finished


def test_the_value_limit_cuts_inputs_outputs_and_arguments(instrumented: LLMServer) -> None:
    server = instrumented
    long_city = "W" * 500
    server.script(CHAT, Reply.tool_call("lookup", json.dumps({"city": long_city})), Reply.content("x" * 500))
    agent = weather_agent(server)
    with capture_spans() as captured:
        agent("Weather?")
    spans = captured.otel_spans
    run = build_run(named(spans, "agent"), spans, max_value_chars=100)
    for step in run.steps:
        for value in (step.input, step.output):
            assert value is None or len(value) <= 100
    requested = run.steps[0].requested[0]
    # the OpenAI integration records them as a mapping: too long, it is cut as JSON text
    assert requested.arguments_text
    assert len(requested.arguments) <= 100
    assert requested.arguments.startswith('{"city": "WWW')
    assert isinstance(run.output, str)
    assert len(run.output) <= 100
    assert "[truncated: 500 chars]" in run.output


# -- pydantic-ai, traced by its own instrumentation ---------------------------------------------


@pytest.fixture
def pydantic_server(server: LLMServer) -> LLMServer:
    """The server, for a pydantic-ai test: skipped without pydantic-ai (it needs Python 3.11+)."""
    pytest.importorskip("pydantic_ai", reason="pydantic-ai-slim[openai] is not installed")
    server.reset()
    return server


def pydantic_agent(client: openai.AsyncOpenAI) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    runtime = _runtime.active()
    assert runtime is not None
    assert runtime.provider is not None
    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
    settings = InstrumentationSettings(tracer_provider=runtime.provider)
    agent = Agent(model, name="weather", capabilities=[Instrumentation(settings)])

    @agent.tool_plain
    def lookup(city: str) -> str:
        return {"Warsaw": "12 C"}.get(city, "unknown")

    return agent


def run_pydantic_agent(server: LLMServer, question: str) -> str:
    """Run the agent on its own event loop, with a client closed before the loop ends."""

    async def main() -> str:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            result = await pydantic_agent(client).run(question)
        return str(result.output)

    return asyncio.run(main())


def pydantic_run(server: LLMServer) -> tuple[Run, tuple[ReadableSpan, ...]]:
    server.script(CHAT, Reply.tool_call("lookup", '{"city": "Warsaw"}'), Reply.content("It is 12 C"))
    with capture_spans() as captured:
        assert run_pydantic_agent(server, "Weather in Warsaw?") == "It is 12 C"
    spans = captured.otel_spans
    return build_run(named(spans, "invoke_agent weather"), spans), spans


def test_a_pydantic_ai_agent_run_is_built_from_its_own_spans(pydantic_server: LLMServer) -> None:
    run, _ = pydantic_run(pydantic_server)
    assert [(step.kind, step.name) for step in run.steps] == [
        ("llm", "chat gpt-4o-mini"),
        ("tool", "lookup"),
        ("llm", "chat gpt-4o-mini"),
    ]
    tool = run.steps[1].tool_call
    assert tool is not None
    assert (tool.id, tool.arguments, tool.output) == (
        run.steps[0].requested[0].id,
        {"city": "Warsaw"},
        "12 C",
    )
    assert tool.id is not None
    assert run.steps[1].input == '{"city":"Warsaw"}'
    assert run.steps[1].output == "12 C"
    assert run.tool_calls == (ToolCall("lookup", {"city": "Warsaw"}),)
    assert run.llm_calls == 2
    assert run.tokens > 0
    assert run.cost_usd is not None
    assert run.output == "It is 12 C"  # final_result
    assert run.steps[0].input == "Weather in Warsaw?"
    # the second model call's last "user" message holds only the tool's result: its input is
    # still the question (show prints it as the span's in: line)
    assert run.steps[2].input == "Weather in Warsaw?"


def test_a_pydantic_ai_agent_also_traced_by_the_openai_integration_counts_each_call_once(
    pydantic_server: LLMServer, instrumented: LLMServer
) -> None:
    run, spans = pydantic_run(instrumented)
    chats = [span for span in spans if (span.attributes or {}).get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 4  # pydantic-ai's span and the OpenAI integration's inside it, for each call
    assert run.llm_calls == 2
    assert len(run.tool_calls) == 1
    assert run.tokens == sum((s.input_tokens or 0) + (s.output_tokens or 0) for s in run.steps)


def test_a_rule_scores_a_pydantic_ai_agent_span_by_its_final_result(pydantic_server: LLMServer) -> None:
    server = pydantic_server
    server.script(CHAT, Reply.tool_call("lookup", '{"city": "Warsaw"}'), Reply.content("It is 12 C"))
    rule = {"kind": "agent", "evaluators": ["exact"], "expected": "It is 12 C"}
    with capture_spans(evaluators=[rule]) as captured:
        run_pydantic_agent(server, "Weather in Warsaw?")
    agent_span = named(captured.otel_spans, "invoke_agent weather")
    results = {
        str(event.attributes["gen_ai.evaluation.name"]): dict(event.attributes)
        for event in agent_span.events
        if event.name == "gen_ai.evaluation.result" and event.attributes
    }
    assert results["exact"]["gen_ai.evaluation.score.value"] == 1.0


def test_a_rule_scores_a_pydantic_ai_agent_run_by_its_tool_calls(pydantic_server: LLMServer) -> None:
    server = pydantic_server
    server.script(CHAT, Reply.tool_call("lookup", '{"city": "Warsaw"}'), Reply.content("It is 12 C"))
    rule = {
        "kind": "agent",
        "evaluators": ["trajectory_match", {"type": "run_budget", "max_llm_calls": 1}],
        "expected": {
            "output": "It is 12 C",
            "tool_calls": [{"name": "lookup", "arguments": {"city": "Warsaw"}}],
        },
    }
    with capture_spans(evaluators=[rule]) as captured:
        run_pydantic_agent(server, "Weather in Warsaw?")
        runtime = _runtime.active()
        assert runtime is not None
        assert runtime.runs is not None
        assert runtime.runs.record_all  # the rule may select spans known only at their end
        assert runtime.runs.traces == {}  # the trace is let go once its run is scored
    agent_span = named(captured.otel_spans, "invoke_agent weather")
    results = {
        str(event.attributes["gen_ai.evaluation.name"]): dict(event.attributes)
        for event in agent_span.events
        if event.name == "gen_ai.evaluation.result" and event.attributes
    }
    assert results["trajectory_match"]["gen_ai.evaluation.score.value"] == 1.0
    budget = results["run_budget"]
    assert budget["tracesim.evaluation.passed"] is False  # two model calls, one allowed
    assert json.loads(str(budget["tracesim.evaluation.details"]))["exceeded"]["max_llm_calls"]["actual"] == 2


# -- LangChain, traced by tracesim's LangChain integration --------------------------------------


@pytest.fixture
def langchain_server(server: LLMServer) -> Iterator[LLMServer]:
    pytest.importorskip("langchain_openai", reason="langchain-openai is not installed")
    pytest.importorskip(
        "opentelemetry.instrumentation.genai.langchain", reason="the 'langchain' extra is not installed"
    )
    from tracesim.integrations import uninstrument_langchain

    server.reset()
    tracesim.instrument_langchain()
    yield server
    uninstrument_langchain()


def test_a_langchain_tool_loop_run_takes_each_calls_arguments_from_its_request(
    langchain_server: LLMServer,
) -> None:
    from langchain_core.messages import BaseMessage, HumanMessage
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI

    server = langchain_server

    @tool
    def lookup(city: str) -> str:
        """The weather in a city."""
        return "12 C"

    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        llm = ChatOpenAI(model="gpt-4o-mini", base_url=server.base_url, api_key="test", max_retries=0)  # type: ignore[arg-type]
        model = llm.bind_tools([lookup])
        messages: list[BaseMessage] = [HumanMessage(question)]
        for _ in range(3):
            answer = model.invoke(messages)
            messages.append(answer)
            if not answer.tool_calls:
                return str(answer.content)
            messages.extend(lookup.invoke(call) for call in answer.tool_calls)
        return "gave up"

    server.script(CHAT, Reply.tool_call("lookup", '{"city": "Warsaw"}'), Reply.content("It is 12 C"))
    with capture_spans() as captured:
        assert agent("Weather in Warsaw?") == "It is 12 C"
    spans = captured.otel_spans
    run = build_run(named(spans, "agent"), spans)
    assert [(step.kind, step.name) for step in run.steps] == [
        ("llm", "chat gpt-4o-mini"),
        ("tool", "lookup"),
        ("llm", "chat gpt-4o-mini"),
    ]
    # LangChain's tool span has the call's id, and its arguments as tracesim captured them
    tool_step = run.steps[1].tool_call
    assert tool_step is not None
    assert tool_step.id == run.steps[0].requested[0].id
    assert run.tool_calls == (ToolCall("lookup", {"city": "Warsaw"}),)
    assert run.llm_calls == 2
    assert run.output == "It is 12 C"
