"""tracesim.instrument_mcp(): an agent's MCP tool calls, to a real server over stdio, as steps of its run.

The agent is a loop with the real ``openai`` client against the scripted model server
(tests/llm_server.py): the model asks for a tool, the agent calls it on the MCP server through
``ClientSession.call_tool``, the model answers. One server process and one session serve the
module (mcp_harness.py).
"""

from __future__ import annotations

import asyncio
import doctest
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import CHAT, LLMServer, Reply
from mcp_harness import RESULT_SECRET, SERVER, Session
from secret_kinds import leaked
from span_checks import one

import tracesim
from tracesim.cli import main
from tracesim.instrumentation import CurrentProvider
from tracesim.testing import capture_spans
from tracesim.tracefile import load_spans

pytest.importorskip("mcp", reason="the 'mcp' extra (the mcp SDK) is not installed")
import tracesim_mcp
from tracesim_mcp import _client

PROMPT_SECRET = "marie.curie@sorbonne.fr"  # an e-mail address in the user's question
ARGUMENT_SECRET = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"  # an API key the model passes to a tool
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The MCP tool {name}.",
            "parameters": {"type": "object", "properties": {key: {"type": "string"}}},
        },
    }
    for name, key in (("get_weather", "city"), ("store_note", "note"), ("broken", "city"))
]


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    # on while the session opens, so the session knows its transport (stdio: a pipe)
    tracesim_mcp.integration.instrument(None)
    session = Session(tmp_path_factory.mktemp("mcp"))
    tracesim_mcp.integration.uninstrument()
    yield session
    session.close()


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _reset(server: LLMServer) -> Iterator[None]:
    server.reset()
    yield
    tracesim.uninstrument_mcp()
    tracesim.uninstrument_openai()


def make_agent(server: LLMServer, mcp: Session) -> Any:
    """An agent loop: ask the model, run each tool it asks for on the MCP server, ask again."""
    from openai import AsyncOpenAI

    @tracesim.trace(kind="agent")
    async def weather_agent(question: str) -> str:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as model:
            return await loop(model, question)

    async def loop(model: Any, question: str) -> str:
        messages: list[Any] = [{"role": "user", "content": question}]
        for _ in range(3):
            reply = await model.chat.completions.create(
                model="gpt-4o-mini",
                messages=messages,
                tools=TOOLS,  # type: ignore[arg-type]
            )
            message = reply.choices[0].message
            if not message.tool_calls:
                return str(message.content)
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = await mcp.client.call_tool(call.function.name, json.loads(call.function.arguments))
                text = "\n".join(block.text for block in result.content if hasattr(block, "text"))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        return "no answer"

    return weather_agent


def ask(server: LLMServer, mcp: Session, question: str) -> str:
    return mcp.run(make_agent(server, mcp)(question))


def test_an_agent_run_has_its_model_calls_and_the_mcp_tool_call_with_arguments_and_result(
    server: LLMServer, mcp: Session
) -> None:
    assert tracesim.instrument_mcp() is True
    assert tracesim.instrument_mcp() is False  # once is enough
    tracesim.instrument_openai()
    server.script(CHAT, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content("Sunny in Paris."))
    with capture_spans() as captured, tracesim.record_run("check") as recorded:
        recorded.span.set_output(ask(server, mcp, "Weather in Paris?"))
        spans = captured.spans
    run = recorded.run
    assert [step.kind for step in run.steps if step.kind != "span"] == ["agent", "llm", "tool", "llm"]
    assert run.llm_calls == 2
    (call,) = run.tool_calls
    assert (call.name, call.arguments, call.output, call.error) == (
        "get_weather",
        {"city": "Paris"},
        "Sunny in Paris.",
        None,
    )
    assert run.output == "Sunny in Paris."
    tool = one(spans, "execute_tool")
    assert tool.name == "execute_tool get_weather"
    assert tool.parent_span_id == one(spans, "weather_agent").span_id
    assert tool.kind == "CLIENT"
    assert tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert tool.attributes["mcp.method.name"] == "tools/call"
    assert tool.attributes["network.transport"] == "pipe"
    assert tool.attributes["jsonrpc.request.id"].isdigit()
    # the SDK's own transport span (global provider) nests under it and is no tool step
    sent = one(spans, "MCP send tools/call")
    assert sent.parent_span_id == tool.span_id
    assert sent.attributes["jsonrpc.request.id"] == tool.attributes["jsonrpc.request.id"]
    assert "gen_ai.operation.name" not in sent.attributes


def test_the_run_and_its_tool_calls_are_scored_by_rules(server: LLMServer, mcp: Session) -> None:
    tracesim.instrument_mcp()
    tracesim.instrument_openai()
    server.script(CHAT, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content("Sunny in Paris."))
    rule = {
        "match": "weather_agent",
        "kind": "agent",
        "evaluators": ["exact", "tool_call_accuracy", "trajectory_match"],
        "expected": {
            "output": "Sunny in Paris.",
            "tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}],
        },
    }
    with capture_spans(evaluators=[rule]) as captured:
        assert ask(server, mcp, "Weather in Paris?") == "Sunny in Paris."
    agent = captured.by_name("weather_agent")
    assert agent.attributes["tracesim.eval.exact.score"] == 1.0
    assert agent.attributes["tracesim.eval.tool_call_accuracy.score"] == 1.0
    assert agent.attributes["tracesim.eval.trajectory_match.score"] == 1.0


def test_a_wrong_tool_call_scores_below_one(server: LLMServer, mcp: Session) -> None:
    tracesim.instrument_mcp()
    tracesim.instrument_openai()
    server.script(CHAT, Reply.tool_call("get_weather", '{"city": "Lyon"}'), Reply.content("Sunny in Lyon."))
    rule = {
        "kind": "agent",
        "evaluators": ["trajectory_match"],
        "expected": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
    }
    with capture_spans(evaluators=[rule]) as captured:
        ask(server, mcp, "Weather in Paris?")
    assert captured.by_name("weather_agent").attributes["tracesim.eval.trajectory_match.score"] == 0.0


def test_secrets_in_the_prompt_the_arguments_and_the_result_reach_no_output(
    server: LLMServer, mcp: Session, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tracesim.instrument_mcp()
    tracesim.instrument_openai()
    arguments = json.dumps({"note": f"key {ARGUMENT_SECRET}"})
    server.script(CHAT, Reply.tool_call("store_note", arguments), Reply.content("Stored."))
    path = tmp_path / "traces.jsonl"
    with capture_spans(exporters=["jsonl"], jsonl_path=str(path)) as captured:
        assert ask(server, mcp, f"Store my key, then mail {PROMPT_SECRET}") == "Stored."
        tool = captured.by_name("execute_tool store_note")
        assert "[REDACTED:" in tool.attributes["gen_ai.tool.call.arguments"]
        assert "[REDACTED:" in tool.attributes["gen_ai.tool.call.result"]
        assert "stored" in tool.attributes["gen_ai.tool.call.result"]  # the rest of the result is there
    written = path.read_text(encoding="utf-8")
    assert main(["show", str(path), "-v", "--width", "400"]) == 0
    assert main(["report", str(path)]) == 0
    printed = capsys.readouterr().out
    assert "execute_tool store_note" in printed
    for output in (written, printed):
        assert leaked(output) == []
        for secret in (PROMPT_SECRET, ARGUMENT_SECRET, RESULT_SECRET):
            assert secret not in output


def test_show_and_report_count_the_mcp_call_as_one_tool_call(
    server: LLMServer, mcp: Session, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracesim._runs._records import RunIndex

    tracesim.instrument_mcp()
    tracesim.instrument_openai()
    server.script(CHAT, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content("Sunny in Paris."))
    path = tmp_path / "traces.jsonl"
    with capture_spans(exporters=["jsonl"], jsonl_path=str(path)):
        ask(server, mcp, "Weather in Paris?")
    records = load_spans(path)
    assert any(record.name.startswith("MCP send tools/call") for record in records)  # the SDK's span
    run = RunIndex(records).run(one(records, "weather_agent"))
    assert [call.name for call in run.tool_calls] == ["get_weather"]
    assert main(["report", str(path), "--json"]) == 0
    (agent,) = json.loads(capsys.readouterr().out)["agents"]
    assert (agent["name"], agent["tool_calls"], agent["llm_calls_mean"]) == ("weather_agent", 1, 2.0)
    assert [(tool["name"], tool["calls"]) for tool in agent["tools"]] == [("get_weather", 1)]
    kinds = {step["name"]: step["kind"] for step in agent["worst_runs"][0]["steps"]}
    assert kinds["MCP send tools/call get_weather"] == "span"  # the SDK's transport span: no tool


def test_a_tool_error_marks_the_span_and_the_run_and_reaches_the_caller_as_the_sdk_returns_it(
    server: LLMServer, mcp: Session
) -> None:
    tracesim.instrument_mcp()
    with capture_spans() as captured, tracesim.record_run("check") as recorded:
        result = mcp.run(mcp.client.call_tool("broken", {"city": "Atlantis"}))
    assert result.is_error  # what the SDK returns, unchanged
    tool = captured.by_name("execute_tool broken")
    assert tool.attributes["error.type"] == "tool_error"
    assert tool.status_code == "ERROR"
    assert "no station in Atlantis" in tool.attributes["gen_ai.tool.call.result"]
    assert "Atlantis" not in (tool.status_message or "")  # the result is content: not in the status
    (call,) = recorded.run.tool_calls
    assert call.error is not None


def test_a_json_rpc_error_is_on_the_span_and_the_exception_reaches_the_caller_untouched(mcp: Session) -> None:
    from mcp.shared.exceptions import MCPError

    tracesim.instrument_mcp()
    with capture_spans() as captured:
        with pytest.raises(MCPError) as raised:  # the caller's own timeout: a JSON-RPC error code
            mcp.run(mcp.client.call_tool("hang", {}, read_timeout_seconds=0.2))
        tool = captured.by_name("execute_tool hang")
    assert tool.attributes["error.type"] == str(raised.value.code)
    assert tool.attributes["rpc.response.status_code"] == str(raised.value.code)
    assert tool.status_code == "ERROR"
    assert [event.name for event in tool.events] == ["exception"]


def test_structured_content_and_list_tools(mcp: Session) -> None:
    tracesim.instrument_mcp()
    with capture_spans() as captured:
        listed = mcp.run(mcp.client.list_tools())
        mcp.run(mcp.client.call_tool("forecast", {"city": "Paris", "days": 3}))
        spans = captured.spans
    assert "forecast" in [tool.name for tool in listed.tools]
    listing = one(spans, "tools/list")
    assert listing.attributes["mcp.method.name"] == "tools/list"
    assert "gen_ai.operation.name" not in listing.attributes  # a listing is no tool call
    result = json.loads(one(spans, "execute_tool forecast").attributes["gen_ai.tool.call.result"])
    assert result == {"city": "Paris", "days": 3, "high": 21}


def test_capture_off_keeps_arguments_and_results_out_either_way(server: LLMServer, mcp: Session) -> None:
    tracesim.instrument_openai()
    for settings, capture in (({"capture": False}, None), ({}, False)):
        tracesim.instrument_mcp(capture=capture)
        server.script(
            CHAT, Reply.tool_call("store_note", '{"note": "private"}'), Reply.content("Stored privately.")
        )
        with capture_spans(**settings) as captured, tracesim.record_run("check") as recorded:
            ask(server, mcp, "Store a note")
            spans = captured.spans
        tool = one(spans, "execute_tool store_note")
        assert tool.attributes["gen_ai.tool.name"] == "store_note"
        assert "gen_ai.tool.call.arguments" not in tool.attributes
        assert "gen_ai.tool.call.result" not in tool.attributes
        assert [call.name for call in recorded.run.tool_calls] == ["store_note"]  # still counted once
        if settings:  # tracesim's capture off: nothing anywhere
            assert not any("private" in json.dumps(dict(span.attributes), default=str) for span in spans)
        tracesim.uninstrument_mcp()


def test_a_framework_tool_span_gets_the_mcp_details_instead_of_a_second_span(mcp: Session) -> None:
    tracesim.instrument_mcp()
    with capture_spans() as captured, tracesim.record_run("check") as recorded:
        framework = CurrentProvider().get_tracer("a.framework")

        async def framework_runs_the_tool() -> Any:
            attributes = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "get_weather"}
            with framework.start_as_current_span("execute_tool get_weather", attributes=attributes):
                return await mcp.client.call_tool("get_weather", {"city": "Paris"})

        mcp.run(framework_runs_the_tool())
        spans = captured.spans
    (tool,) = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert tool.scope == "a.framework"
    assert tool.attributes["mcp.method.name"] == "tools/call"
    assert tool.attributes["network.transport"] == "pipe"
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    assert tool.attributes["gen_ai.tool.call.result"] == "Sunny in Paris."
    assert [call.name for call in recorded.run.tool_calls] == ["get_weather"]


def test_a_traced_tool_function_of_the_same_name_is_the_tool_span(mcp: Session) -> None:
    tracesim.instrument_mcp()

    @tracesim.trace(kind="tool")
    async def get_weather(city: str) -> str:
        result = await mcp.client.call_tool("get_weather", {"city": city})
        return str(result.content[0].text)

    with capture_spans() as captured, tracesim.record_run("check") as recorded:
        assert mcp.run(get_weather("Paris")) == "Sunny in Paris."
        spans = captured.spans
    assert [s.name for s in spans if "get_weather" in s.name] == [
        "MCP send tools/call get_weather",
        "get_weather",
    ]
    assert captured.by_name("get_weather").attributes["mcp.method.name"] == "tools/call"
    assert len(recorded.run.tool_calls) == 1


def test_another_tools_span_is_not_taken_for_this_call(mcp: Session) -> None:
    tracesim.instrument_mcp()

    @tracesim.trace(kind="tool")
    async def plan_trip(city: str) -> str:
        result = await mcp.client.call_tool("get_weather", {"city": city})
        return str(result.content[0].text)

    with capture_spans() as captured:
        mcp.run(plan_trip("Paris"))
    tool = captured.by_name("execute_tool get_weather")
    assert tool.parent_span_id == captured.by_name("plan_trip").span_id
    assert "mcp.method.name" not in captured.by_name("plan_trip").attributes


def test_the_high_level_client_makes_one_span_per_call(tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    script = tmp_path / "weather_server.py"
    script.write_text(SERVER, encoding="utf-8")
    tracesim.instrument_mcp()

    async def call() -> Any:
        async with Client(StdioServerParameters(command=sys.executable, args=[str(script)])) as client:
            return await client.call_tool("get_weather", {"city": "Paris"})

    with capture_spans() as captured:
        assert asyncio.run(call()).content[0].text == "Sunny in Paris."
        spans = captured.spans
    (tool,) = [s for s in spans if s.name.startswith("execute_tool")]
    assert tool.attributes["gen_ai.tool.call.result"] == "Sunny in Paris."
    assert tool.attributes["jsonrpc.request.id"].isdigit()  # from the session's call, on the one span


def test_configure_instrument_turns_it_on(mcp: Session, tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    tracesim.configure(instrument=["mcp"], exporters=["jsonl"], jsonl_path=str(path))
    mcp.run(mcp.client.call_tool("get_weather", {"city": "Paris"}))
    assert tracesim.force_flush()
    assert one(load_spans(path), "execute_tool").attributes["gen_ai.tool.name"] == "get_weather"


def test_after_uninstrument_the_session_is_the_sdks_own_again(mcp: Session) -> None:
    from mcp.client.session import ClientSession

    original = ClientSession.__dict__["call_tool"]
    tracesim.instrument_mcp()
    assert ClientSession.__dict__["call_tool"] is not original
    tracesim.uninstrument_mcp()
    assert ClientSession.__dict__["call_tool"] is original
    with capture_spans() as captured:
        mcp.run(mcp.client.call_tool("get_weather", {"city": "Paris"}))
    assert not [s for s in captured.spans if s.name.startswith("execute_tool")]


def test_without_tracesim_configured_the_call_goes_through_unrecorded(mcp: Session) -> None:
    tracesim.instrument_mcp()
    result = mcp.run(mcp.client.call_tool("get_weather", {"city": "Paris"}))
    assert result.content[0].text == "Sunny in Paris."


def test_the_missing_extra_is_named(run_python: Any, tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['mcp'] = None\nsys.modules['mcp.client.session'] = None\n"
        "import tracesim\n"
        "try:\n    tracesim.instrument_mcp()\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = run_python(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "MissingIntegrationError" in done.stdout
    assert "pip install 'tracesim[mcp]'" in done.stdout


@pytest.mark.parametrize("module", [tracesim_mcp, _client])
def test_the_docstring_examples_run(module: Any) -> None:
    outcome = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert outcome.failed == 0
