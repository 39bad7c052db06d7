"""tracesim.instrument_pydantic_ai(): a real pydantic-ai agent, over real HTTP, as a run in our traces.

The agent is pydantic-ai's ``OpenAIChatModel`` talking to the scripted model server
(tests/llm_server.py), which asks for the ``get_weather`` tool first and answers in text once
the request carries the tool's result. Nothing of pydantic-ai is replaced.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import CHAT, LLMServer, Reply
from secret_kinds import KINDS, leaked
from span_checks import assert_content_free, one, results_of

import tracesim
from tracesim.cli import main
from tracesim.testing import capture_spans
from tracesim.tracefile import load_spans

pytest.importorskip("pydantic_ai", reason="pydantic-ai (the 'pydantic_ai' extra) needs Python 3.11 or later")
openai = pytest.importorskip("openai", reason="pydantic-ai-slim[openai] (the 'test' extra) is missing")
# the openai client's HTTP library: httpx2 from openai 3, httpx before
http = pytest.importorskip("httpx2" if int(openai.__version__.split(".")[0]) >= 3 else "httpx")
from pydantic_ai import Agent, InstrumentationSettings  # noqa: E402  (after the skips above)
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402

QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."
PROMPT_SECRET, ARGUMENT_SECRET, RESULT_SECRET = (KINDS[k][0] for k in ("openai", "email", "url_password"))
WORDS = ("Paris", "sunny", "Sunny", "one sentence")  # content of the run, anywhere
CONTENT_KEYS = (
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
    "final_result",
    "gen_ai.system_instructions",
)


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(model="gpt-4o-mini") as running:
        yield running
    assert not running.errors, running.errors


@pytest.fixture(autouse=True)
def _instrumented(server: LLMServer) -> Iterator[None]:
    server.reset()
    # run_sync runs on the thread's event loop, making one if there is none, and never closes
    # it: each test gets one, closed after it (an event loop left open warns when collected)
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()
    tracesim.uninstrument_pydantic_ai()
    tracesim.uninstrument_openai()
    assert Agent._instrument_default is False  # pydantic-ai's own default is back


def script_run(server: LLMServer, arguments: dict[str, str] | None = None) -> None:
    """The model's two answers of one run: call ``get_weather``, then say `ANSWER`."""
    server.script(
        CHAT,
        Reply.tool_call("get_weather", json.dumps(arguments or {"city": "Paris"})),
        Reply.content(ANSWER),
    )


def provider(server: LLMServer) -> OpenAIProvider:
    """pydantic-ai's OpenAI provider for the server, keeping no connection open between requests:
    ``run_sync`` runs on a loop of its own, and a kept-alive connection would outlive it (unclosed)."""
    client = openai.DefaultAsyncHttpxClient(limits=http.Limits(max_keepalive_connections=0))
    return OpenAIProvider(base_url=server.base_url, api_key="test", http_client=client)


def weather_agent(server: LLMServer, name: str = "weather_agent") -> Agent[None, str]:
    model = OpenAIChatModel("gpt-4o-mini", provider=provider(server))
    agent = Agent(model, name=name, instructions="Answer in one sentence.")

    @agent.tool_plain
    def get_weather(city: str, note: str = "") -> str:
        """The weather in a city."""
        return f"Sunny in {city}; {RESULT_SECRET}" if note else f"Sunny in {city}"

    return agent


def traced(agent: Agent[None, str]) -> Any:
    @tracesim.trace(kind="agent")
    def assistant(question: str) -> str:
        return agent.run_sync(question).output

    return assistant


def test_a_run_nests_under_a_traced_agent_and_no_secret_reaches_the_file_show_or_report(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert tracesim.instrument_pydantic_ai() is True
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)
    script_run(server, {"city": "Paris", "note": ARGUMENT_SECRET})

    assert traced(weather_agent(server))(f"{QUESTION} My key is {PROMPT_SECRET}") == ANSWER

    assert tracesim.force_flush()
    text = path.read_text(encoding="utf-8")
    assert leaked(text) == []
    spans = load_spans(path)
    outer, run = one(spans, "assistant"), one(spans, "invoke_agent")
    first, second = (s for s in spans if s.name == "chat gpt-4o-mini")
    tool = one(spans, "execute_tool")
    assert run.name == "invoke_agent weather_agent"
    assert run.parent_span_id == outer.span_id
    assert {first.parent_span_id, tool.parent_span_id, second.parent_span_id} == {run.span_id}
    # every place pydantic-ai writes content was written, and redacted on its way out
    assert "[REDACTED:api_key]" in str(run.attributes["pydantic_ai.all_messages"])
    assert "[REDACTED:api_key]" in str(first.attributes["gen_ai.input.messages"])
    assert "[REDACTED:email]" in str(tool.attributes["gen_ai.tool.call.arguments"])
    assert "[REDACTED:" in str(tool.attributes["gen_ai.tool.call.result"])
    assert "[REDACTED:email]" in str(second.attributes["gen_ai.input.messages"])  # the tool call, replayed
    assert run.attributes["final_result"] == ANSWER
    # format version 6: the tool's result is the tool speaking, not the user
    roles = [m["role"] for m in json.loads(str(second.attributes["gen_ai.input.messages"]))]
    assert roles == ["user", "assistant", "tool"]

    for command in (["show", str(path)], ["show", "-v", str(path)], ["report", str(path)]):
        assert main(command) == 0
        out = capsys.readouterr().out
        assert leaked(out) == [], command
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert "execute_tool get_weather" in shown
    assert "LLM total: 2 calls" in shown


def test_record_run_gives_the_agent_llm_and_tool_steps_with_input_output_model_and_tokens(
    server: LLMServer,
) -> None:
    tracesim.instrument_pydantic_ai()
    script_run(server)
    agent = weather_agent(server)
    with capture_spans(), tracesim.record_run("check") as recorded:
        recorded.span.set_output(agent.run_sync(QUESTION).output)
    run = recorded.run
    assert [(s.kind, s.name, s.depth) for s in run.steps] == [
        ("agent", "weather_agent", 1),
        ("llm", "chat gpt-4o-mini", 2),
        ("tool", "get_weather", 2),
        ("llm", "chat gpt-4o-mini", 2),
    ]
    agent_step, asked, tool, answered = run.steps
    assert (agent_step.input, agent_step.output) == (QUESTION, ANSWER)
    assert asked.input == QUESTION
    assert [(c.name, c.arguments) for c in asked.requested] == [("get_weather", {"city": "Paris"})]
    assert tool.tool_call is not None
    assert (tool.tool_call.arguments, tool.tool_call.output) == ({"city": "Paris"}, "Sunny in Paris")
    assert (answered.input, answered.output) == (QUESTION, ANSWER)
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
    tracesim.instrument_pydantic_ai()
    script_run(server)
    with capture_spans(evaluators=[rule]) as captured:
        assert traced(weather_agent(server))(QUESTION) == ANSWER
    results = results_of(captured.by_name("invoke_agent weather_agent"))
    assert results["exact"]["gen_ai.evaluation.score.value"] == 1.0
    assert results["exact"]["tracesim.evaluation.passed"] is True
    assert results["levenshtein"]["gen_ai.evaluation.score.value"] == 1.0
    assert results_of(captured.by_name("assistant")) == {}  # the rule named pydantic-ai's agent only


def test_run_evaluators_score_the_agents_tool_calls(server: LLMServer) -> None:
    expected = {"output": ANSWER, "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]}
    evaluators = ["tool_call_accuracy", "trajectory_match"]
    rule = {"kind": "agent", "match": "weather_agent", "evaluators": evaluators}
    tracesim.instrument_pydantic_ai()
    with capture_spans(evaluators=[{**rule, "expected": expected}]) as captured:
        script_run(server)
        weather_agent(server).run_sync(QUESTION)
        script_run(server, {"city": "Lyon"})  # the wrong city
        weather_agent(server).run_sync(QUESTION)
    right, wrong = (results_of(s) for s in captured.named("invoke_agent weather_agent"))
    assert right["tool_call_accuracy"]["gen_ai.evaluation.score.value"] == 1.0
    assert right["trajectory_match"]["gen_ai.evaluation.score.value"] == 1.0
    assert wrong["tool_call_accuracy"]["gen_ai.evaluation.score.value"] == 0.0
    assert wrong["trajectory_match"]["tracesim.evaluation.passed"] is False


def test_with_the_openai_integration_on_too_each_model_call_is_counted_once(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracesim.instrument_pydantic_ai()
    tracesim.instrument_openai()
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)
    script_run(server)
    with tracesim.record_run("check") as recorded:
        recorded.span.set_output(weather_agent(server).run_sync(QUESTION).output)
    assert tracesim.force_flush()

    spans = load_spans(path)
    chats = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    assert len(chats) == 4  # pydantic-ai's span, and the openai client's inside it, per request
    inner = [s for s in chats if s.attributes.get("tracesim.llm.counted_in_parent")]
    outer = [s for s in chats if s not in inner]
    assert len(inner) == 2
    assert {s.parent_span_id for s in inner} == {s.span_id for s in outer}
    input_tokens = sum(int(s.attributes["gen_ai.usage.input_tokens"]) for s in outer)
    output_tokens = sum(int(s.attributes["gen_ai.usage.output_tokens"]) for s in outer)
    # the same two calls, seen twice
    assert input_tokens == sum(int(s.attributes["gen_ai.usage.input_tokens"]) for s in inner)

    run = recorded.run
    assert run.llm_calls == 2
    assert run.tokens == input_tokens + output_tokens
    assert main(["report", str(path)]) == 0
    report = capsys.readouterr().out
    assert f"2 LLM calls in 1 trace: {input_tokens} input tokens, {output_tokens} output tokens" in report


def test_content_follows_capture_set_after_instrumenting_and_the_integrations_own_override(
    server: LLMServer,
) -> None:
    tracesim.instrument_pydantic_ai()
    agent = weather_agent(server)
    with capture_spans(capture=False) as captured:  # configured after instrumenting
        script_run(server)
        assert agent.run_sync(QUESTION).output == ANSWER
    assert_content_free(captured.spans, WORDS, keys=CONTENT_KEYS)

    tracesim.instrument_pydantic_ai(capture=False)  # off for this integration only
    with capture_spans() as captured:
        script_run(server)
        agent.run_sync(QUESTION)
    assert_content_free(captured.spans, WORDS, keys=CONTENT_KEYS)

    tracesim.instrument_pydantic_ai()  # following tracesim's capture again, on from the next run
    with capture_spans() as captured:
        script_run(server)
        agent.run_sync(QUESTION)
    assert captured.by_name("invoke_agent weather_agent").attributes["final_result"] == ANSWER


def test_a_streamed_run_is_traced_with_its_output_and_tokens(server: LLMServer) -> None:
    tracesim.instrument_pydantic_ai()
    agent = weather_agent(server)

    async def stream() -> str:
        async with agent.run_stream(QUESTION) as result:
            return "".join([chunk async for chunk in result.stream_text(delta=True)])

    with capture_spans() as captured:
        script_run(server)
        assert asyncio.run(stream()) == ANSWER
    assert all(r.body is not None and r.body.get("stream") for r in server.requests)
    run = captured.by_name("invoke_agent weather_agent")
    assert run.attributes["final_result"] == ANSWER
    chats = captured.named("chat gpt-4o-mini")
    assert len(chats) == 2
    assert all(chat.attributes["gen_ai.usage.output_tokens"] > 0 for chat in chats)
    assert ANSWER in chats[-1].attributes["gen_ai.output.messages"]
    assert captured.by_name("execute_tool get_weather").parent_span_id == run.span_id


def test_instrument_is_idempotent_and_uninstrument_restores_the_default_set_before(server: LLMServer) -> None:
    own = InstrumentationSettings(include_content=False)
    Agent.instrument_all(own)
    try:
        assert tracesim.instrument_pydantic_ai() is True
        assert tracesim.instrument_pydantic_ai() is False  # once is enough
        assert Agent._instrument_default is not own
        tracesim.uninstrument_pydantic_ai()
        assert Agent._instrument_default is own
        tracesim.uninstrument_pydantic_ai()  # off already: nothing to do
        assert Agent._instrument_default is own
    finally:
        Agent.instrument_all(False)

    tracesim.instrument_pydantic_ai()
    mine = InstrumentationSettings()
    Agent.instrument_all(mine)  # the application's choice, made after tracesim's
    tracesim.uninstrument_pydantic_ai()
    assert Agent._instrument_default is mine  # left alone
    assert tracesim.instrument_pydantic_ai() is True  # tracesim's again, as asked
    tracesim.uninstrument_pydantic_ai()
    assert Agent._instrument_default is mine
    Agent.instrument_all(False)

    tracesim.instrument_pydantic_ai()
    tracesim.uninstrument_pydantic_ai()
    with capture_spans() as captured:
        script_run(server)
        traced(weather_agent(server))(QUESTION)
        assert [s.name for s in captured.spans] == ["assistant"]


def test_configure_instrument_turns_it_on_by_name(server: LLMServer, tmp_path: Path) -> None:
    agent = traced(weather_agent(server, name="by_name"))  # made before: an agent's default is read per run
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, instrument=["pydantic_ai"])
    script_run(server)
    agent(QUESTION)
    assert tracesim.force_flush()
    names = [s.name for s in load_spans(path)]
    assert "invoke_agent by_name" in names
    assert "execute_tool get_weather" in names


def test_the_missing_extra_is_named(run_python: Any, tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['pydantic_ai'] = None\n"
        "import tracesim\n"
        "try:\n    tracesim.instrument_pydantic_ai()\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = run_python(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "MissingIntegrationError" in done.stdout
    assert "pip install 'tracesim[pydantic_ai]'" in done.stdout


def test_nothing_goes_to_the_applications_meter_provider(
    server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    """pydantic-ai records token and cost histograms on the global meter provider unless given one."""
    code = f"""
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from pydantic_ai import Agent, InstrumentationSettings
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
import tracesim

reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
provider = OpenAIProvider(base_url={server.base_url!r}, api_key="t")
agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=provider))

def scopes():
    data = reader.get_metrics_data()
    return sorted({{s.scope.name for r in (data.resource_metrics if data else ()) for s in r.scope_metrics}})

tracesim.configure(exporters=[])
tracesim.instrument_pydantic_ai()
agent.run_sync("hello")
print("tracesim", scopes())
Agent.instrument_all(InstrumentationSettings())  # pydantic-ai's own defaults, for comparison
agent.run_sync("hello")
print("pydantic-ai", scopes())
"""
    done = run_python(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["tracesim []", "pydantic-ai ['pydantic-ai']"]
