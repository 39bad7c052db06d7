"""tracesim-mcp's example: an agent whose tool runs on an MCP server, the tool call a span of its run.

Needs ``pip install 'tracesim[mcp,openai]'`` and OPENAI_API_KEY (OPENAI_BASE_URL for another
endpoint). ``python example.py`` starts this same file as the MCP server over stdio
(``python example.py serve``), asks the model, runs the tool it asks for on the server and
prints the answer. The trace goes to .tracesim/traces.jsonl; ``tracesim show`` prints it: the
agent, its two model calls and the ``execute_tool get_weather`` span with its arguments and
result between them.
"""

import asyncio
import json
import sys

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.server.mcpserver import MCPServer
from openai import AsyncOpenAI

import tracesim

server = MCPServer("weather")


@server.tool()
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}."


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


@tracesim.trace(kind="agent")
async def weather_agent(question: str, session: ClientSession) -> str:
    """Ask the model; run each tool it asks for on the MCP server; ask again with the results."""
    messages = [{"role": "user", "content": question}]
    async with AsyncOpenAI() as model:
        for _ in range(5):
            reply = await model.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                result = await session.call_tool(call.function.name, json.loads(call.function.arguments))
                text = "\n".join(block.text for block in result.content if block.type == "text")
                messages.append({"role": "tool", "tool_call_id": call.id, "content": text})
    return "no answer after 5 model calls"


async def main(question: str) -> str:
    params = StdioServerParameters(command=sys.executable, args=[__file__, "serve"])
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        return await weather_agent(question, session)


if __name__ == "__main__":
    if sys.argv[1:] == ["serve"]:
        server.run("stdio")
    else:
        tracesim.configure(service_name="mcp-example")
        tracesim.instrument_mcp()  # or configure(instrument=["mcp", "openai"])
        tracesim.instrument_openai()
        print(asyncio.run(main("What is the weather in Paris?")))
        tracesim.shutdown()
