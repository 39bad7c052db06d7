"""What tracing costs one agent run whose tool is on an MCP server: tracesim's MCP integration vs the SDK's.

The agent is a loop on the ``openai`` client (``AsyncOpenAI``) against the scripted model
server, its tool ``get_weather`` served by an MCP server over stdio (mcp 2.x ``MCPServer``,
started once per process; its process's CPU is not counted, as the model server's is not):
one run is two model calls and one ``ClientSession.call_tool`` (the harness, ``_frameworks.py``,
plays the model). The session lives on an event loop in a thread of its own; each run is
submitted to it. Variants, each in processes of its own:

* ``bare``: the agent, untraced (the mcp SDK's own spans go to OpenTelemetry's default no-op
  provider);
* ``tracesim``: ``tracesim.instrument_mcp()`` and ``instrument_openai()``, the agent a
  ``@tracesim.trace(kind="agent")`` function, content capture on, spans to an exporter that
  discards (tracesim's provider not global: the SDK's own spans stay no-ops);
* ``tracesim-global``: the same, tracesim's provider also the global one (the default of
  ``configure()``), so the SDK's ``MCP send ...`` spans are recorded too;
* ``tracesim-mcp-only``: ``tracesim.instrument_mcp()`` alone, the agent untraced: the tool span
  only, what the SDK's own spans cover (the like-for-like comparison with ``mcp-builtin``);
* ``mcp-builtin``: the SDK's own OpenTelemetry spans (``MCP send tools/call get_weather``:
  method and request id, no arguments or result, no model calls) on a global SDK provider that
  discards in batches (`discard_provider`): the only alternative that makes spans for mcp 2.x.

    python benchmarks/bench_framework_mcp.py [--rounds 5] [--runs 40]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _frameworks import QUESTION, configure_tracesim, discard_provider, run_benchmark

SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("weather")


@server.tool()
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


if __name__ == "__main__":
    server.run("stdio")
'''

TOOLS: Any = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Today's weather in a city.",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


class _Session:
    """An MCP session to the weather server, open on a loop in a thread of its own."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        threading.Thread(target=self.loop.run_forever, daemon=True).start()
        folder = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
        (folder / "server.py").write_text(SERVER, encoding="utf-8")
        self._script = folder / "server.py"
        self._log = (folder / "server.log").open("w", encoding="utf-8")
        self.client = asyncio.run_coroutine_threadsafe(self._open(), self.loop).result(timeout=60)

    async def _open(self) -> Any:
        from contextlib import AsyncExitStack

        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        self._stack = AsyncExitStack()  # left open: the process ends with the benchmark's child
        params = StdioServerParameters(command=sys.executable, args=[str(self._script)])
        read, write = await self._stack.enter_async_context(stdio_client(params, errlog=self._log))
        client = await self._stack.enter_async_context(ClientSession(read, write))
        await client.initialize()
        await client.list_tools()  # the session validates results against the listed tools
        return client

    def run(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop).result(timeout=60)


def _agent(url: str, traced: bool) -> Callable[[], object]:
    """One agent run: ask, call the MCP tool the model asks for, ask again with its result."""
    from openai import AsyncOpenAI

    session = _Session()
    model = AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)

    async def weather_agent(question: str) -> str:
        messages: list[Any] = [{"role": "user", "content": question}]
        for _ in range(3):
            reply = await model.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            if not message.tool_calls:
                return str(message.content)
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                function: Any = call.function  # type: ignore[union-attr]
                result = await session.client.call_tool(function.name, json.loads(function.arguments))
                text = "\n".join(block.text for block in result.content if hasattr(block, "text"))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
        raise RuntimeError("the scripted model never answered")

    if traced:
        import tracesim

        weather_agent = tracesim.trace(kind="agent")(weather_agent)
    return lambda: session.run(weather_agent(QUESTION))


def bare(url: str) -> Callable[[], object]:
    return _agent(url, traced=False)


def with_tracesim(url: str) -> Callable[[], object]:
    import tracesim

    configure_tracesim()
    tracesim.instrument_mcp()
    tracesim.instrument_openai()
    return _agent(url, traced=True)


def with_tracesim_global(url: str) -> Callable[[], object]:
    from _common import Discard

    import tracesim

    tracesim.configure(exporters=[Discard()])  # the global provider too: the SDK's spans recorded
    tracesim.instrument_mcp()
    tracesim.instrument_openai()
    return _agent(url, traced=True)


def with_tracesim_mcp_only(url: str) -> Callable[[], object]:
    import tracesim

    configure_tracesim()
    tracesim.instrument_mcp()
    return _agent(url, traced=False)


def with_mcp_builtin(url: str) -> Callable[[], object]:
    from opentelemetry import trace

    trace.set_tracer_provider(discard_provider())
    return _agent(url, traced=False)


if __name__ == "__main__":
    run_benchmark(
        __doc__,
        {
            "bare": bare,
            "tracesim": with_tracesim,
            "tracesim-global": with_tracesim_global,
            "tracesim-mcp-only": with_tracesim_mcp_only,
            "mcp-builtin": with_mcp_builtin,
        },
    )
