"""With the OpenAI Agents SDK's MCP tools (``MCPServerStdio``), an MCP tool call is one tool span.

The SDK opens its own ``execute_tool <name>`` span (through tracesim's openai_agents
integration) before it calls ``ClientSession.call_tool``: the MCP integration adds the MCP
details to that span instead of a second one, so the run counts one tool call. Real SDK, real
MCP server over stdio, the real ``openai`` client against the scripted model server.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import CHAT, LLMServer, Reply
from mcp_harness import SERVER

import tracesim
from tracesim.testing import capture_spans

pytest.importorskip("agents", reason="openai-agents is not installed")
pytest.importorskip("tracesim_openai_agents", reason="the 'openai_agents' extra is not installed")


@pytest.fixture(autouse=True)
def _off() -> Iterator[None]:
    yield
    tracesim.uninstrument_mcp()
    tracesim.uninstrument_openai_agents()
    tracesim.uninstrument_openai()


def run_agent(server: LLMServer, script: Path, question: str) -> str:
    from agents import Agent, OpenAIChatCompletionsModel, Runner
    from agents.mcp import MCPServerStdio
    from openai import AsyncOpenAI

    @tracesim.trace(kind="agent")
    async def assistant(question: str) -> str:
        params = {"command": sys.executable, "args": [str(script)]}
        async with (
            MCPServerStdio(params=params) as weather,  # type: ignore[arg-type]
            AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client,
        ):
            model = OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client)
            agent = Agent(
                name="weather_agent", instructions="Use the tools.", model=model, mcp_servers=[weather]
            )
            result = await Runner.run(agent, question)
            return str(result.final_output)

    return asyncio.run(assistant(question))


def test_the_sdks_tool_span_gets_the_mcp_details_and_the_run_counts_one_tool_call(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    script = tmp_path / "weather_server.py"
    script.write_text(SERVER, encoding="utf-8")
    tracesim.instrument_openai_agents()
    tracesim.instrument_mcp()
    llm_server.script(
        CHAT, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content("Sunny in Paris.")
    )
    with capture_spans() as captured, tracesim.record_run("check") as recorded:
        assert run_agent(llm_server, script, "Weather in Paris?") == "Sunny in Paris."
        spans = captured.spans
    (tool,) = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert tool.scope == "tracesim_openai_agents"  # the SDK's span, not a second one of ours
    assert tool.attributes["mcp.method.name"] == "tools/call"
    assert tool.attributes["network.transport"] == "pipe"
    assert tool.attributes["jsonrpc.request.id"].isdigit()
    assert not [s for s in spans if s.scope == "tracesim_mcp" and s.name.startswith("execute_tool")]
    run = recorded.run
    assert [(call.name, call.arguments) for call in run.tool_calls] == [("get_weather", {"city": "Paris"})]
    assert run.llm_calls == 2


def test_the_sdks_tool_span_keeps_its_content_out_when_its_integration_says_so(
    llm_server: LLMServer, tmp_path: Path
) -> None:
    script = tmp_path / "weather_server.py"
    script.write_text(SERVER, encoding="utf-8")
    tracesim.instrument_openai_agents(capture=False)  # the agents' content out
    tracesim.instrument_mcp()  # MCP's own spans with theirs
    llm_server.script(
        CHAT, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content("Sunny in Paris.")
    )
    with capture_spans() as captured:
        assert run_agent(llm_server, script, "Weather in Paris?") == "Sunny in Paris."
        spans = captured.spans
    (tool,) = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "execute_tool"]
    assert tool.attributes["mcp.method.name"] == "tools/call"  # the MCP details, merged
    assert "gen_ai.tool.call.arguments" not in tool.attributes
    assert "gen_ai.tool.call.result" not in tool.attributes
