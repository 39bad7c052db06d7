"""LangGraph through tracesim.instrument_langchain(): agents and graphs as spans, runs and scores.

An agent made by ``langchain.agents.create_agent`` (LangGraph underneath) and plain
``StateGraph``\\ s run over real HTTP against the scripted model server (tests/llm_server.py):
the model asks for ``get_weather`` first, then answers in text. OpenTelemetry's LangChain
instrumentation turns the agent into ``invoke_agent weather_agent`` (its LLM calls and tool
call inside) and a graph into ``invoke_workflow <its name>``, which rules select by
``gen_ai.agent.name`` / ``gen_ai.workflow.name``.
"""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypedDict

import pytest
from llm_server import CHAT, LLMServer, Reply
from pydantic import SecretStr
from secret_kinds import KINDS, leaked
from span_checks import one, report, results_of

import tracesim
from tracesim.cli import main
from tracesim.testing import capture_spans
from tracesim.tracefile import load_spans

pytest.importorskip(
    "opentelemetry.instrumentation.genai.langchain",
    reason="the 'langchain' extra (opentelemetry-instrumentation-genai-langchain) is not installed",
)
pytest.importorskip("langchain_openai", reason="langchain-openai (the 'test' extra) is missing")
pytest.importorskip("langchain.agents", reason="langchain (the 'langgraph' extra) is missing")
pytest.importorskip("langgraph.graph", reason="langgraph (the 'langgraph' extra) is missing")
from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph

QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."
ARGUMENTS = '{"city": "Paris"}'
GOLDEN_CALLS = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
# what the server counts (words) for the two calls: the question (6) and the arguments (2) first,
# then the question and the tool's result (6 + 3) and the answer (5)
TOKENS = {"input": 6 + 9, "output": 2 + 5}


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


class Question(TypedDict):
    """A graph state of plain fields, no messages."""

    question: str
    answer: str


def _shout(state: Question) -> dict[str, str]:
    return {"answer": state["question"].upper()}


def _reply(state: MessagesState) -> dict[str, list[AIMessage]]:
    return {"messages": [AIMessage("Sunny.")]}


def fields_graph() -> StateGraph[Any]:
    graph: StateGraph[Any] = StateGraph(Question)
    graph.add_node("shout", _shout)
    graph.add_edge(START, "shout")
    graph.add_edge("shout", END)
    return graph


def messages_graph() -> StateGraph[Any]:
    graph: StateGraph[Any] = StateGraph(MessagesState)
    graph.add_node("reply", _reply)
    graph.add_edge(START, "reply")
    graph.add_edge("reply", END)
    return graph


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(model="gpt-4o-mini") as running:  # a priced model: the runs have a cost
        yield running


@pytest.fixture(autouse=True)
def _instrumented(server: LLMServer) -> Iterator[None]:
    server.reset()
    server.script(CHAT, Reply.tool_call("get_weather", ARGUMENTS), Reply.content(ANSWER))
    assert tracesim.instrument_langchain() is True
    yield
    tracesim.uninstrument_langchain()
    tracesim.uninstrument_openai()


def weather_agent(server: LLMServer, *, tools: tuple[Any, ...] = (get_weather,), **model: Any) -> Any:
    chat_model = ChatOpenAI(
        model="gpt-4o-mini", base_url=server.base_url, api_key=SecretStr("test"), max_retries=0, **model
    )
    return create_agent(model=chat_model, tools=list(tools), name="weather_agent")


def ask(agent: Any, question: str = QUESTION) -> str:
    """The agent's answer to one user message."""
    state = agent.invoke({"messages": [{"role": "user", "content": question}]})
    return str(state["messages"][-1].content)


def test_an_agent_nests_under_the_traced_function_and_is_a_run_of_agent_llm_and_tool_steps(
    server: LLMServer,
) -> None:
    agent = weather_agent(server)

    @tracesim.trace(kind="agent")
    def assistant(question: str) -> str:
        return ask(agent, question)

    with capture_spans() as captured, tracesim.record_run("check") as recorded:
        recorded.span.set_output(assistant(QUESTION))
    spans = captured.spans
    invoked = one(spans, "invoke_agent")
    assert invoked.name == "invoke_agent weather_agent"
    assert invoked.parent_span_id == one(spans, "assistant").span_id
    steps = [s for s in spans if s.name.startswith(("chat", "execute_tool"))]
    assert len(steps) == 3
    assert {s.parent_span_id for s in steps} == {invoked.span_id}

    run = recorded.run
    assert [(step.kind, step.name) for step in run.steps] == [
        ("agent", "assistant"),
        ("agent", "weather_agent"),
        ("llm", "chat gpt-4o-mini"),
        ("tool", "get_weather"),
        ("llm", "chat gpt-4o-mini"),
    ]
    _, agent_step, asked, used, answered = run.steps
    assert (agent_step.input, agent_step.output) == (QUESTION, ANSWER)
    assert asked.input == QUESTION
    assert [call.as_dict() for call in asked.requested] == GOLDEN_CALLS
    assert (answered.output, answered.model) == (ANSWER, "gpt-4o-mini")
    assert (asked.input_tokens, asked.output_tokens) == (6, 2)
    assert (answered.input_tokens, answered.output_tokens) == (9, 5)
    assert answered.cost_usd is not None
    assert used.tool_call is not None
    assert (used.tool_call.arguments, used.tool_call.output) == ({"city": "Paris"}, "sunny in Paris")
    assert [call.name for call in run.tool_calls] == ["get_weather"]  # requested and executed: one call
    assert (run.llm_calls, run.tokens, run.output) == (2, sum(TOKENS.values()), ANSWER)


def test_a_kind_agent_rule_by_the_agents_name_scores_its_answer_and_its_tool_calls(server: LLMServer) -> None:
    rule = {
        "match": "weather_agent",
        "kind": "agent",
        "evaluators": ["exact", "tool_call_accuracy", "trajectory_match"],
        "expected": {"output": ANSWER, "tool_calls": GOLDEN_CALLS},
    }
    with capture_spans(evaluators=[rule]) as captured:
        assert ask(weather_agent(server)) == ANSWER
        spans = captured.spans
    results = results_of(one(spans, "invoke_agent"))
    assert sorted(results) == ["exact", "tool_call_accuracy", "trajectory_match"]
    for name, result in results.items():
        assert result["tracesim.evaluation.status"] == "ok", name
        assert result["gen_ai.evaluation.score.value"] == 1.0, name
    assert results["tool_call_accuracy"]["tracesim.evaluation.run"] is True  # scored the run, not a text
    assert not any(results_of(s) for s in spans if not s.name.startswith("invoke_agent"))

    server.script(CHAT, Reply.tool_call("get_weather", '{"city": "Lyon"}'), Reply.content(ANSWER))
    with capture_spans(evaluators=[rule]) as captured:
        ask(weather_agent(server))
        results = results_of(one(captured.spans, "invoke_agent"))
    assert results["exact"]["gen_ai.evaluation.score.value"] == 1.0
    assert results["tool_call_accuracy"]["gen_ai.evaluation.score.value"] == 0.0  # the wrong city
    assert results["trajectory_match"]["gen_ai.evaluation.score.value"] == 0.0


@pytest.mark.parametrize(("name", "match"), [(None, "LangGraph"), ("forecast", "forecast")])
def test_a_rule_selects_a_message_graph_by_its_name_and_scores_its_last_message(
    name: str | None, match: str
) -> None:
    rule = {"match": match, "evaluators": ["exact"], "expected": "Sunny."}
    graph = messages_graph().compile(name=name) if name else messages_graph().compile()
    with capture_spans(evaluators=[rule]) as captured:
        graph.invoke({"messages": [{"role": "user", "content": "Weather?"}]})
        (span,) = captured.spans
    assert span.name == f"invoke_workflow {match}"
    assert span.attributes["gen_ai.workflow.name"] == match
    result = results_of(span)["exact"]
    assert (result["tracesim.evaluation.status"], result["gen_ai.evaluation.score.value"]) == ("ok", 1.0)


def test_a_graph_of_plain_fields_records_its_input_but_no_output_so_score_a_traced_function(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """OpenTelemetry's instrumentation reads a graph's output from its ``messages`` alone (its
    input falls back to the other fields): a rule on such a graph is skipped, saying why."""
    rules = [
        {"match": "shouter", "evaluators": ["exact"], "expected": {"value": {"answer": "HI"}}},
        {"match": "answer", "kind": "agent", "evaluators": ["exact"], "expected": "HI"},
    ]
    graph = fields_graph().compile(name="shouter")

    @tracesim.trace(kind="agent")
    def answer(question: str) -> str:
        return str(graph.invoke({"question": question})["answer"])

    with capture_spans(evaluators=rules) as captured:
        assert answer("hi") == "HI"
        spans = captured.spans
    workflow = one(spans, "invoke_workflow")
    assert workflow.name == "invoke_workflow shouter"
    assert json.loads(workflow.attributes["gen_ai.input.messages"])[0]["parts"][0]["content"] == (
        '{"question": "hi"}'
    )
    assert "gen_ai.output.messages" not in workflow.attributes
    skipped = results_of(workflow)["exact"]
    assert skipped["tracesim.evaluation.status"] == "skipped"
    assert "carries no output" in skipped["gen_ai.evaluation.explanation"]
    assert results_of(one(spans, "answer"))["exact"]["gen_ai.evaluation.score.value"] == 1.0


def test_with_the_openai_integration_on_too_each_model_call_is_counted_once(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracesim.instrument_openai()
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)
    with tracesim.record_run("check") as recorded:
        assert ask(weather_agent(server)) == ANSWER
    assert tracesim.force_flush()
    assert server.count(CHAT) == 2
    # util-genai folds the client's call into LangChain's chat span: two chat spans, not four
    assert [s.name for s in load_spans(path)].count("chat gpt-4o-mini") == 2
    assert (recorded.run.llm_calls, recorded.run.tokens) == (2, sum(TOKENS.values()))
    totals = report(path, capsys)["llm_usage"]["totals"]
    assert (totals["calls"], totals["input_tokens"], totals["output_tokens"]) == (2, *TOKENS.values())


@pytest.fixture
def openinference_alongside() -> Iterator[None]:
    """OpenInference's LangChain instrumentation on tracesim's provider, as well as tracesim's."""
    instrumentation = pytest.importorskip("openinference.instrumentation.langchain")
    from tracesim.instrumentation import CurrentProvider

    instrumentor = instrumentation.LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=CurrentProvider())
    yield
    instrumentor.uninstrument()


@pytest.mark.usefixtures("openinference_alongside")
def test_with_openinference_alongside_the_agents_own_run_counts_each_call_once(server: LLMServer) -> None:
    tracesim.instrument_openai()
    # by the span's whole name: "weather_agent" would select OpenInference's agent span as well
    rule = {
        "match": "invoke_agent weather_agent",
        "evaluators": ["tool_call_accuracy"],
        "expected": {"tool_calls": GOLDEN_CALLS},
    }
    with capture_spans(evaluators=[rule]) as captured:
        assert ask(weather_agent(server)) == ANSWER
        spans = captured.spans
    assert server.count(CHAT) == 2
    assert {s.name for s in spans} >= {"weather_agent", "ChatOpenAI", "invoke_agent weather_agent"}
    # OpenInference's spans are a tree of their own beside the GenAI one: the agent's run (its
    # subtree) holds each call once, and its tool call once
    result = results_of(one(spans, "invoke_agent"))["tool_call_accuracy"]
    assert result["gen_ai.evaluation.score.value"] == 1.0
    assert [s.name for s in spans].count("chat gpt-4o-mini") == 2


@pytest.mark.usefixtures("openinference_alongside")
def test_with_openinference_alongside_the_trace_counts_each_call_once(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)
    # Each instrumentation makes its own tree of spans for the same calls; under a traced
    # function both are in its trace, where a call seen twice (same tokens, same time, another
    # instrumentation) is counted once. (Without a common parent each makes a trace of its own.)
    assert tracesim.trace(kind="agent", name="support")(ask)(weather_agent(server)) == ANSWER
    assert tracesim.force_flush()
    totals = report(path, capsys)["llm_usage"]["totals"]
    assert (totals["calls"], totals["input_tokens"], totals["output_tokens"]) == (2, *TOKENS.values())


@pytest.mark.parametrize("how", ["stream", "astream"])
def test_a_streamed_agent_keeps_its_token_usage(server: LLMServer, how: str) -> None:
    # ChatOpenAI asks for usage in a stream by default only from OpenAI's own endpoint
    agent = weather_agent(server, stream_usage=True)
    message = {"messages": [{"role": "user", "content": QUESTION}]}

    async def consume() -> list[Any]:
        return [chunk async for chunk in agent.astream(message, stream_mode="messages")]

    with capture_spans(), tracesim.record_run("check") as recorded:
        if how == "stream":
            chunks = list(agent.stream(message, stream_mode="messages"))
        else:
            chunks = asyncio.run(consume())
    assert len(chunks) > 2
    assert all(request.body and request.body["stream"] is True for request in server.requests)
    run = recorded.run
    assert [step.kind for step in run.steps] == ["agent", "llm", "tool", "llm"]
    assert [(s.input_tokens, s.output_tokens) for s in run.steps if s.kind == "llm"] == [(6, 2), (9, 5)]
    assert run.steps[0].output == ANSWER
    assert [call.as_dict()["arguments"] for call in run.tool_calls] == [{"city": "Paris"}]


def test_secrets_in_the_prompt_the_tool_arguments_and_its_result_reach_no_output(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    key, bearer, mail, url = (KINDS[kind][0] for kind in ("openai", "bearer", "email", "url_password"))

    @tool
    def send_report(city: str, to: str) -> str:
        """Send the weather report of a city to someone."""
        return f"sent {city} to {to} through {url} with {bearer}"

    looked_up: list[str] = []
    resolve = socket.getaddrinfo

    def loopback_only(host: Any, *args: Any, **kwargs: Any) -> Any:
        looked_up.append(str(host))
        if str(host) not in ("127.0.0.1", "localhost", "::1"):
            raise OSError(f"this test reaches no network: {host}")
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", loopback_only)
    server.reset()
    server.script(
        CHAT, Reply.tool_call("send_report", json.dumps({"city": "Paris", "to": mail})), Reply.content(ANSWER)
    )
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)
    agent = weather_agent(server, tools=(send_report,))

    @tracesim.trace(kind="agent")
    def assistant(question: str) -> str:
        return ask(agent, question)

    assert assistant(f"Send Paris's weather to {mail}; my key is {key}.") == ANSWER
    assert tracesim.force_flush()
    assert server.count(CHAT) == 2
    text = path.read_text(encoding="utf-8")
    assert leaked(text) == []
    spans = load_spans(path)
    prompt = one(spans, "invoke_agent").attributes["gen_ai.input.messages"]
    assert "[REDACTED:api_key]" in prompt  # redacted, not dropped
    assert "[REDACTED:email]" in prompt
    used = one(spans, "execute_tool")
    assert "[REDACTED:email]" in used.attributes["gen_ai.tool.call.arguments"]
    assert "[REDACTED:" in used.attributes["gen_ai.tool.call.result"]
    capsys.readouterr()
    for command in (["show", str(path)], ["report", str(path)], ["report", "--json", str(path)]):
        assert main(command) == 0
        out = capsys.readouterr().out
        assert "send_report" in out
        assert leaked(out) == [], command
    assert set(looked_up) <= {"127.0.0.1", "localhost", "::1"}


@pytest.mark.parametrize("off", ["configure", "instrument"])
def test_with_capture_off_no_span_carries_content(server: LLMServer, off: str) -> None:
    if off == "instrument":
        tracesim.instrument_langchain(capture=False)  # off for this integration only
    with capture_spans(**({"capture": False} if off == "configure" else {})) as captured:

        @tracesim.trace(kind="agent")
        def assistant(question: str) -> str:
            return ask(weather_agent(server), question)

        assert assistant(QUESTION) == ANSWER
        messages_graph().compile().invoke({"messages": [{"role": "user", "content": "Weather?"}]})
        fields_graph().compile().invoke({"question": "hi"})
        spans = captured.spans
    operations = ("invoke_agent", "invoke_workflow", "chat", "execute_tool")
    framework = [s for s in spans if s.name.split()[0] in operations]
    assert len(framework) == 6
    content = ("messages", "tool.call.arguments", "tool.call.result", "instructions", "definitions")
    for span in framework:
        assert not [key for key in span.attributes if key.endswith(content)], span.name
        assert not [key for key in span.attributes if key in ("input.value", "output.value")], span.name
    chats = [s for s in framework if s.name.startswith("chat")]
    assert [s.attributes["gen_ai.usage.output_tokens"] for s in chats] == [2, 5]  # the rest is recorded
    if off == "instrument":  # tracesim's own span follows the configuration, still on
        assert one(spans, "assistant").attributes["output.value"] == ANSWER


@pytest.mark.parametrize("first", ["tracesim", "openinference"])
def test_with_openinference_in_either_order_each_tree_keeps_its_calls_and_the_trace_counts_them_once(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], first: str
) -> None:
    instrumentation = pytest.importorskip("openinference.instrumentation.langchain")
    from tracesim.instrumentation import CurrentProvider

    # The handler added first ends each model call's span first: the other is its twin.
    openinference = instrumentation.LangChainInstrumentor()
    if first == "openinference":
        tracesim.uninstrument_langchain()
        openinference.instrument(tracer_provider=CurrentProvider())
        tracesim.instrument_langchain()
    else:
        openinference.instrument(tracer_provider=CurrentProvider())
    # each agent span's run (tracesim's tree and OpenInference's): its two model calls, whichever is the twin
    budget = {"type": "run_budget", "max_llm_calls": 2, "max_tokens": sum(TOKENS.values())}
    path = tmp_path / "traces.jsonl"
    try:
        tracesim.configure(
            exporters=["jsonl"],
            jsonl_path=path,
            scoring_mode="inline",
            evaluators=[{"match": "weather_agent", "kind": "agent", "evaluators": [budget]}],
        )
        assert tracesim.trace(kind="agent", name="support")(ask)(weather_agent(server)) == ANSWER
        assert tracesim.force_flush()
    finally:
        openinference.uninstrument()
    spans = load_spans(path)
    agents = [s for s in spans if s.name in ("invoke_agent weather_agent", "weather_agent")]
    assert len(agents) == 2
    for agent in agents:
        result = results_of(agent)["run_budget"]
        details = json.loads(str(result["tracesim.evaluation.details"]))
        used = {option: check["actual"] for option, check in details["limits"].items()}
        assert used == {"max_llm_calls": 2, "max_tokens": sum(TOKENS.values())}, agent.name
    twins = [s for s in spans if "tracesim.llm.twin_of" in s.attributes]
    assert len(twins) == 2  # one per call, in the tree whose handler came second
    totals = report(path, capsys)["llm_usage"]["totals"]
    assert (totals["calls"], totals["input_tokens"], totals["output_tokens"]) == (2, *TOKENS.values())
