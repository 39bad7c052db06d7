"""tracesim.instrument_openai_agents(): real OpenAI Agents SDK runs, over real HTTP, as runs in our traces.

The agent uses the SDK's own OpenAI models, ``OpenAIResponsesModel`` (the SDK's default) or
``OpenAIChatCompletionsModel``, on the real ``openai`` client talking to the scripted model
server (tests/llm_server.py), which asks for the ``get_weather`` tool first and answers in text
once the request carries the tool's result. Nothing of the SDK is replaced.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from llm_formats import RESPONSES
from llm_server import CHAT, LLMServer, Reply
from secret_kinds import KINDS, leaked
from span_checks import assert_content_free, one, report, results_of

import tracesim
from tracesim.cli import main
from tracesim.instrumentation import CurrentProvider
from tracesim.testing import capture_spans
from tracesim.tracefile import SpanRecord, load_spans

pytest.importorskip("agents", reason="openai-agents (the 'openai_agents' extra) is not installed")
pytest.importorskip("opentelemetry.instrumentation.genai.openai_agents", reason="the 'openai_agents' extra")
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    RunConfig,
    Runner,
    function_tool,
)
from agents.tracing import TracingProcessor, add_trace_processor, set_trace_processors
from openai import AsyncOpenAI
from tracesim_openai_agents import _processors

QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."
PROMPT_SECRET, ARGUMENT_SECRET, RESULT_SECRET = (KINDS[k][0] for k in ("openai", "email", "url_password"))
WORDS = ("Paris", "sunny", "Sunny", "one sentence")  # content of the run, anywhere
CONTENT_KEYS = (
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)
APIS = {"responses": (RESPONSES, OpenAIResponsesModel), "chat": (CHAT, OpenAIChatCompletionsModel)}


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(model="gpt-4o-mini") as running:
        yield running
    assert not running.errors, running.errors


@pytest.fixture(autouse=True)
def _instrumented(server: LLMServer) -> Iterator[None]:
    server.reset()
    before = _processors()
    yield
    tracesim.uninstrument_openai_agents()
    tracesim.uninstrument_openai()
    assert _processors() == before  # the SDK's processors are back as they were


@function_tool
def get_weather(city: str, note: str = "") -> str:
    """The weather in a city."""
    return f"Sunny in {city}; {RESULT_SECRET}" if note else f"Sunny in {city}"


def script_run(server: LLMServer, api: str = "responses", arguments: dict[str, str] | None = None) -> None:
    """The model's two answers of one run: call ``get_weather``, then say `ANSWER`."""
    call = Reply.tool_call("get_weather", json.dumps(arguments or {"city": "Paris"}))
    server.script(APIS[api][0], call, Reply.content(ANSWER))


def run_agent(
    server: LLMServer,
    question: str = QUESTION,
    *,
    api: str = "responses",
    name: str = "weather_agent",
    stream: bool = False,
    run_config: RunConfig | None = None,
) -> str:
    """One run of the weather agent on a client of its own (closed when the run ends)."""

    async def run() -> str:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            model = APIS[api][1](model="gpt-4o-mini", openai_client=client)
            agent = Agent(name=name, instructions="Answer in one sentence.", tools=[get_weather], model=model)
            if not stream:
                return str((await Runner.run(agent, question, run_config=run_config)).final_output)
            streamed = Runner.run_streamed(agent, question, run_config=run_config)
            async for _ in streamed.stream_events():
                pass
            return str(streamed.final_output)

    return asyncio.run(run())


def traced(server: LLMServer, api: str = "responses") -> Any:
    @tracesim.trace(kind="agent")
    def assistant(question: str) -> str:
        return run_agent(server, question, api=api)

    return assistant


def _messages_text(span: SpanRecord, key: str) -> str:
    (message,) = json.loads(str(span.attributes[key]))
    (part,) = message["parts"]
    return str(part["content"])


@pytest.mark.parametrize("api", sorted(APIS))
def test_a_run_nests_under_a_traced_agent_with_its_agent_model_and_tool_spans(
    server: LLMServer, api: str
) -> None:
    assert tracesim.instrument_openai_agents() is True
    assert tracesim.instrument_openai_agents() is False  # once is enough
    script_run(server, api)
    with capture_spans() as captured:
        assert traced(server, api)(QUESTION) == ANSWER
        spans = captured.spans
    outer, workflow = one(spans, "assistant"), one(spans, "invoke_workflow")
    agent, tool = one(spans, "invoke_agent"), one(spans, "execute_tool")
    chats = [s for s in spans if s.name == "chat gpt-4o-mini"]
    assert (workflow.name, agent.name, tool.name) == (
        "invoke_workflow Agent workflow",
        "invoke_agent weather_agent",
        "execute_tool get_weather",
    )
    assert workflow.parent_span_id == outer.span_id
    assert agent.parent_span_id == workflow.span_id
    assert len(chats) == 2  # one span per model call: the openai client's
    assert {tool.parent_span_id, *(c.parent_span_id for c in chats)} == {agent.span_id}
    assert agent.attributes["gen_ai.agent.name"] == "weather_agent"
    assert _messages_text(agent, "gen_ai.input.messages") == QUESTION
    assert _messages_text(agent, "gen_ai.output.messages") == ANSWER
    assert _messages_text(workflow, "gen_ai.input.messages") == QUESTION  # the run's, from its agent
    assert _messages_text(workflow, "gen_ai.output.messages") == ANSWER
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"city": "Paris"}
    assert tool.attributes["gen_ai.tool.call.result"] == "Sunny in Paris"
    for chat in chats:
        assert chat.attributes["gen_ai.request.model"] == "gpt-4o-mini"
        assert chat.attributes["gen_ai.usage.input_tokens"] > 0
        assert chat.attributes["gen_ai.usage.output_tokens"] > 0
    assert ANSWER in str(chats[-1].attributes["gen_ai.output.messages"])
    assert server.count(APIS[api][0]) == 2


@pytest.mark.parametrize("api", sorted(APIS))
def test_record_run_gives_the_agent_llm_and_tool_steps_with_input_output_model_and_tokens(
    server: LLMServer, api: str
) -> None:
    tracesim.instrument_openai_agents()
    script_run(server, api)
    with capture_spans(), tracesim.record_run("check") as recorded:
        recorded.span.set_output(run_agent(server, api=api))
    run = recorded.run
    assert [(s.kind, s.name, s.depth) for s in run.steps] == [
        ("chain", "invoke_workflow Agent workflow", 1),
        ("agent", "weather_agent", 2),
        ("llm", "chat gpt-4o-mini", 3),
        ("tool", "get_weather", 3),
        ("llm", "chat gpt-4o-mini", 3),
    ]
    _, agent_step, asked, tool, answered = run.steps
    assert (agent_step.input, agent_step.output) == (QUESTION, ANSWER)
    assert asked.input == QUESTION
    assert [(c.name, c.arguments) for c in asked.requested] == [("get_weather", {"city": "Paris"})]
    assert tool.tool_call is not None
    assert (tool.tool_call.arguments, tool.tool_call.output) == ({"city": "Paris"}, "Sunny in Paris")
    assert answered.output == ANSWER
    for step in (asked, answered):
        assert step.model == "gpt-4o-mini"
        assert step.input_tokens is not None
        assert step.input_tokens > 0
        assert step.output_tokens is not None
        assert step.output_tokens > 0
        assert step.cost_usd is not None  # gpt-4o-mini has a price
    assert run.llm_calls == 2
    assert run.tokens == sum((s.input_tokens or 0) + (s.output_tokens or 0) for s in (asked, answered))
    assert [call.name for call in run.tool_calls] == ["get_weather"]
    assert run.output == ANSWER


def test_a_streamed_run_is_traced_with_its_output_and_tokens(server: LLMServer) -> None:
    tracesim.instrument_openai_agents()
    script_run(server)
    with capture_spans() as captured:
        assert run_agent(server, stream=True) == ANSWER
    assert [r.body is not None and r.body.get("stream") for r in server.requests] == [True, True]
    agent = captured.by_name("invoke_agent weather_agent")
    assert _messages_text(agent, "gen_ai.output.messages") == ANSWER
    chats = captured.named("chat gpt-4o-mini")
    assert len(chats) == 2
    assert all(chat.attributes["gen_ai.request.stream"] is True for chat in chats)
    assert all(chat.attributes["gen_ai.usage.output_tokens"] > 0 for chat in chats)
    assert {c.parent_span_id for c in chats} == {agent.span_id}
    assert captured.by_name("execute_tool get_weather").parent_span_id == agent.span_id


def test_no_secret_reaches_the_file_show_or_report(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracesim.instrument_openai_agents()
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)
    script_run(server, arguments={"city": "Paris", "note": ARGUMENT_SECRET})

    assert traced(server)(f"{QUESTION} My key is {PROMPT_SECRET}") == ANSWER

    assert tracesim.force_flush()
    text = path.read_text(encoding="utf-8")
    assert leaked(text) == []
    spans = load_spans(path)
    agent, tool = one(spans, "invoke_agent"), one(spans, "execute_tool")
    first, second = (s for s in spans if s.name == "chat gpt-4o-mini")
    # every place content is written was written, and redacted on its way out
    assert "[REDACTED:api_key]" in _messages_text(agent, "gen_ai.input.messages")
    assert "[REDACTED:api_key]" in str(first.attributes["gen_ai.input.messages"])
    assert "[REDACTED:email]" in str(tool.attributes["gen_ai.tool.call.arguments"])
    assert "[REDACTED:" in str(tool.attributes["gen_ai.tool.call.result"])
    assert "[REDACTED:email]" in str(second.attributes["gen_ai.input.messages"])  # the call, replayed

    for command in (["show", str(path)], ["show", "-v", str(path)], ["report", str(path)]):
        assert main(command) == 0
        out = capsys.readouterr().out
        assert leaked(out) == [], command
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "execute_tool get_weather" in shown
    assert "LLM total: 2 calls" in shown


def test_a_kind_agent_rule_selects_the_agent_by_its_name_and_scores_it_against_a_golden_answer(
    server: LLMServer, tmp_path: Path
) -> None:
    golden = tmp_path / "golden.jsonl"
    rows = [{"input": QUESTION, "expected": ANSWER}, {"input": "Weather in Oslo?", "expected": "Snow."}]
    golden.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    rule = {
        "match": "weather_agent",
        "kind": "agent",
        "evaluators": ["exact", {"type": "levenshtein", "threshold": 0.9}],
        "expected": {"golden": str(golden), "key": "input"},
    }
    tracesim.instrument_openai_agents()
    script_run(server)
    with capture_spans(evaluators=[rule]) as captured:
        assert traced(server)(QUESTION) == ANSWER
    results = results_of(captured.by_name("invoke_agent weather_agent"))
    assert results["exact"]["gen_ai.evaluation.score.value"] == 1.0
    assert results["exact"]["tracesim.evaluation.passed"] is True
    assert results["levenshtein"]["gen_ai.evaluation.score.value"] == 1.0
    assert results_of(captured.by_name("assistant")) == {}  # the rule named the SDK's agent only


def test_run_evaluators_score_the_agents_tool_calls(server: LLMServer) -> None:
    expected = {"output": ANSWER, "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    rule = {
        "kind": "agent",
        "match": "weather_agent",
        "evaluators": ["tool_call_accuracy", "trajectory_match"],
    }
    tracesim.instrument_openai_agents()
    with capture_spans(evaluators=[{**rule, "expected": expected}]) as captured:
        script_run(server)
        run_agent(server)
        script_run(server, arguments={"city": "Lyon"})  # the wrong city
        run_agent(server)
    right, wrong = (results_of(s) for s in captured.named("invoke_agent weather_agent"))
    assert right["tool_call_accuracy"]["gen_ai.evaluation.score.value"] == 1.0
    assert right["trajectory_match"]["gen_ai.evaluation.score.value"] == 1.0
    assert wrong["tool_call_accuracy"]["gen_ai.evaluation.score.value"] == 0.0
    assert wrong["trajectory_match"]["tracesim.evaluation.passed"] is False


def _call_tokens(spans: list[SpanRecord]) -> tuple[int, int]:
    """Input and output tokens of the openai client's spans: one per model call."""
    chats = [s for s in spans if s.name == "chat gpt-4o-mini"]
    assert len(chats) == 2
    return (
        sum(int(s.attributes["gen_ai.usage.input_tokens"]) for s in chats),
        sum(int(s.attributes["gen_ai.usage.output_tokens"]) for s in chats),
    )


def _counted(spans: list[SpanRecord]) -> str:
    """What ``tracesim report`` says of the trace when each model call is counted once."""
    tokens = _call_tokens(spans)
    return f"2 LLM calls in 1 trace: {tokens[0]} input tokens, {tokens[1]} output tokens"


def test_each_model_call_is_counted_once_with_openinference_on_too(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's double count: OpenInference's processor makes an LLM span per model call and
    the openai client's span is inside it. tracesim counts the call once, with its tokens."""
    openinference = pytest.importorskip("openinference.instrumentation.openai_agents")
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)
    instrumentor = openinference.OpenAIAgentsInstrumentor()
    instrumentor.instrument(tracer_provider=CurrentProvider())  # replaces the SDK's processors
    try:
        tracesim.instrument_openai()
        script_run(server)
        assert traced(server)(QUESTION) == ANSWER
        assert tracesim.force_flush()
        spans = load_spans(path)
        llm = [s for s in spans if s.attributes.get("openinference.span.kind") == "LLM"]
        assert len(llm) == 4  # two spans per call: OpenInference's and the client's inside it
        inner = [s for s in llm if s.attributes.get("tracesim.llm.counted_in_parent") is True]
        assert sorted(s.name for s in inner) == ["chat gpt-4o-mini"] * 2
        assert _counted(spans) in report(path, capsys, as_json=False)

        # tracesim's Agents SDK integration beside OpenInference's (added, not replacing it)
        instrumentor.uninstrument()
        instrumentor.instrument(tracer_provider=CurrentProvider(), exclusive_processor=False)
        tracesim.instrument_openai_agents()
        path.unlink()
        script_run(server)
        assert traced(server)(QUESTION) == ANSWER
        assert tracesim.force_flush()
        spans = load_spans(path)
        assert one(spans, "invoke_agent weather_agent")  # tracesim's processor ran too
        assert _counted(spans) in report(path, capsys, as_json=False)
    finally:
        tracesim.uninstrument_openai_agents()  # then OpenInference's: each restores what it found
        instrumentor.uninstrument()


def test_tracesims_integration_alone_counts_two_calls_with_their_tokens(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracesim.instrument_openai_agents()
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)
    script_run(server)
    with tracesim.record_run("check") as recorded:
        recorded.span.set_output(run_agent(server))
    assert tracesim.force_flush()
    spans = load_spans(path)
    assert not any(s.attributes.get("tracesim.llm.counted_in_parent") for s in spans)
    assert recorded.run.llm_calls == 2
    assert recorded.run.tokens == sum(_call_tokens(spans))
    assert _counted(spans) in report(path, capsys, as_json=False)


def test_content_follows_capture_set_after_instrumenting_and_the_integrations_own_override(
    server: LLMServer,
) -> None:
    tracesim.instrument_openai_agents()
    with capture_spans(capture=False) as captured:  # configured after instrumenting
        script_run(server)
        assert run_agent(server) == ANSWER
    assert_content_free(captured.spans, WORDS, keys=CONTENT_KEYS)

    tracesim.instrument_openai_agents(capture=False)  # off for this integration (and its model calls)
    with capture_spans() as captured:
        script_run(server, "chat")
        run_agent(server, api="chat")
    assert_content_free(captured.spans, WORDS, keys=CONTENT_KEYS)

    tracesim.instrument_openai_agents()  # following tracesim's capture again, from the next run
    with capture_spans() as captured:
        script_run(server)
        run_agent(server)
    assert _messages_text(captured.by_name("invoke_agent weather_agent"), "gen_ai.output.messages") == ANSWER


def test_util_genais_environment_variable_does_not_bring_content_back_under_capture_off(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """util-genai writes a tool's arguments on its span when this variable asks, whatever
    tracesim's capture says; tracesim never hands them to it."""
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "SPAN_ONLY")
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "gen_ai_latest_experimental")
    tracesim.instrument_openai_agents()
    with capture_spans(capture=False) as captured:
        script_run(server)
        assert run_agent(server) == ANSWER
    for span in captured.spans:
        if span.scope == "tracesim_openai_agents":
            text = json.dumps(dict(span.attributes), default=str)
            assert "Paris" not in text, span.name


def test_the_sdks_sensitive_data_switch_leaves_no_content_to_write(server: LLMServer) -> None:
    tracesim.instrument_openai_agents()
    with capture_spans() as captured:
        script_run(server)
        assert run_agent(server, run_config=RunConfig(trace_include_sensitive_data=False)) == ANSWER
    for name in ("invoke_agent weather_agent", "execute_tool get_weather"):
        attributes = captured.by_name(name).attributes
        assert not [key for key in CONTENT_KEYS if key in attributes], name


@function_tool
def get_forecast(city: str) -> str:
    """The forecast for a city."""
    raise ValueError(f"no forecast for {city}")


def test_a_failing_tool_is_an_error_span_and_the_run_goes_on(server: LLMServer) -> None:
    tracesim.instrument_openai_agents()
    server.script(RESPONSES, Reply.tool_call("get_forecast", '{"city": "Paris"}'), Reply.content(ANSWER))

    async def run() -> str:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
            agent = Agent(name="forecaster", instructions="Answer.", tools=[get_forecast], model=model)
            return str((await Runner.run(agent, QUESTION)).final_output)

    with capture_spans() as captured:
        assert asyncio.run(run()) == ANSWER  # the SDK hands the error to the model, which answers
        tool = captured.by_name("execute_tool get_forecast")
        agent = captured.by_name("invoke_agent forecaster")
    assert tool.status_code == "ERROR"
    assert tool.status_message.startswith("Error running tool")  # the SDK's message,
    assert '"tool_name":"get_forecast"' in tool.status_message  # and its details (it may quote content)
    assert agent.status_code != "ERROR"
    with capture_spans(capture=False) as captured:
        server.script(RESPONSES, Reply.tool_call("get_forecast", '{"city": "Paris"}'), Reply.content(ANSWER))
        asyncio.run(run())
        tool = captured.by_name("execute_tool get_forecast")
    assert tool.status_code == "ERROR"
    assert tool.status_message == "Error running tool (non-fatal)"  # without content: the message alone


def test_a_handoff_is_a_span_and_each_agent_has_its_own_input_and_answer(server: LLMServer) -> None:
    tracesim.instrument_openai_agents()
    server.script(RESPONSES, Reply.tool_call("transfer_to_weather_agent", "{}"), Reply.content(ANSWER))

    async def run() -> str:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
            weather = Agent(name="weather_agent", instructions="Answer.", tools=[get_weather], model=model)
            triage = Agent(name="triage", instructions="Route.", handoffs=[weather], model=model)
            return str((await Runner.run(triage, QUESTION)).final_output)

    with capture_spans() as captured:
        assert asyncio.run(run()) == ANSWER
        triage, weather = (
            captured.by_name("invoke_agent triage"),
            captured.by_name("invoke_agent weather_agent"),
        )
        handoff = captured.by_name("handoff weather_agent")
    assert handoff.parent_span_id == triage.span_id
    assert handoff.attributes["tracesim.handoff.from"] == "triage"
    assert handoff.attributes["tracesim.handoff.to"] == "weather_agent"
    assert _messages_text(triage, "gen_ai.input.messages") == QUESTION
    assert "gen_ai.output.messages" not in triage.attributes  # it only handed off
    assert _messages_text(weather, "gen_ai.input.messages") == QUESTION
    assert _messages_text(weather, "gen_ai.output.messages") == ANSWER


def test_uninstrument_restores_the_sdks_processors_and_instrument_again_adds_tracesims_back(
    server: LLMServer,
) -> None:
    previous = _processors()
    tracesim.instrument_openai_agents()
    (ours,) = _processors()
    assert ours not in previous  # tracesim's replaced the SDK's exporter

    set_trace_processors([])  # the application replaces the processors: tracesim's is gone
    with capture_spans() as captured:
        script_run(server)
        run_agent(server)
        assert [s.name for s in captured.spans] == ["chat gpt-4o-mini"] * 2  # the client is still traced
    assert tracesim.instrument_openai_agents() is False  # on already, and
    assert _processors() == [ours]  # tracesim's is added back
    with capture_spans() as captured:
        script_run(server)
        run_agent(server)
        assert captured.by_name("invoke_agent weather_agent")

    tracesim.uninstrument_openai_agents()
    # the application chose its processors (none): the SDK's exporter to OpenAI is not put back
    assert _processors() == []
    set_trace_processors(previous)  # as the test found them
    tracesim.uninstrument_openai_agents()  # off already: nothing to do
    with capture_spans() as captured:
        script_run(server)
        traced(server)(QUESTION)
        assert [s.name for s in captured.spans] == ["assistant"]  # nor the model calls (openai off too)


def test_uninstrument_without_the_application_touching_processors_puts_the_sdks_back() -> None:
    previous = _processors()
    tracesim.instrument_openai_agents()
    assert _processors() != previous
    tracesim.uninstrument_openai_agents()
    assert _processors() == previous


def test_the_openai_integration_the_application_turned_on_keeps_its_own_capture(server: LLMServer) -> None:
    tracesim.instrument_openai(capture=False)  # the application's choice for every client call
    tracesim.instrument_openai_agents()  # content on for the runs
    for _ in range(2):  # with the agents integration on, then off again
        with capture_spans() as captured:
            server.script(CHAT, Reply.content(ANSWER))
            question: Any = [{"role": "user", "content": QUESTION}]
            with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
                client.chat.completions.create(model="gpt-4o-mini", messages=question)
            (call,) = captured.spans
        assert "gen_ai.input.messages" not in call.attributes
        assert call.attributes["gen_ai.usage.input_tokens"] > 0  # traced, without content
        tracesim.uninstrument_openai_agents()  # openai stays on: the application turned it on


class _Counting(TracingProcessor):
    """A processor of the application's own: counts the SDK spans it is shown."""

    def __init__(self) -> None:
        self.ended = 0

    def on_trace_start(self, trace: Any) -> None:
        pass

    def on_trace_end(self, trace: Any) -> None:
        pass

    def on_span_start(self, span: Any) -> None:
        pass

    def on_span_end(self, span: Any) -> None:
        self.ended += 1

    def shutdown(self) -> None:
        pass

    def force_flush(self) -> None:
        pass


def test_uninstrument_keeps_what_the_application_added_and_its_openai_integration(server: LLMServer) -> None:
    tracesim.instrument_openai()  # the application's own choice
    tracesim.instrument_openai_agents()
    (ours,) = _processors()
    theirs = _Counting()
    add_trace_processor(theirs)  # the application adds a processor while tracesim's is in
    tracesim.uninstrument_openai_agents()
    assert ours not in _processors()
    assert theirs in _processors()  # what the application added stays
    try:
        with capture_spans() as captured:
            script_run(server)
            run_agent(server)
            assert [s.name for s in captured.spans] == ["chat gpt-4o-mini"] * 2  # openai stays on
        assert theirs.ended > 0
    finally:
        set_trace_processors([p for p in _processors() if p is not theirs])


def test_configure_instrument_turns_it_on_by_name(server: LLMServer) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    memory = InMemorySpanExporter()
    tracesim.configure(exporters=[memory], batch_export=False, instrument=["openai_agents"])
    script_run(server)
    run_agent(server, name="by_name")
    names = [span.name for span in memory.get_finished_spans()]
    assert "invoke_agent by_name" in names
    assert "execute_tool get_weather" in names
    assert names.count("chat gpt-4o-mini") == 2


def test_the_missing_extra_is_named(run_python: Any, tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['agents'] = None\n"
        "import tracesim\n"
        "try:\n    tracesim.instrument_openai_agents()\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = run_python(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "MissingIntegrationError" in done.stdout
    assert "pip install 'tracesim[openai_agents]'" in done.stdout
