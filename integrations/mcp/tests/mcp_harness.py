"""A real MCP server over stdio for the tests, and one client session kept open on a loop of its own.

`SERVER` is the server's source (mcp 2.x ``MCPServer``): the test writes it to a file and
starts it with ``sys.executable``, as a user's application would. Starting it costs about a
second, so a test module opens one `Session` and submits each test's coroutines to its event
loop (a thread of its own): ``asyncio.run_coroutine_threadsafe`` runs them in a copy of the
caller's context, so a span current in the test is current in the coroutine, and the tool span
nests under it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["RESULT_SECRET", "SERVER", "Session"]

T = TypeVar("T")

# planted in a tool's result by the server (a GitHub token: tests/secret_kinds.py)
RESULT_SECRET = "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRS"

SERVER = f'''
import anyio
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("weather")


@server.tool()
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {{city}}."


@server.tool()
def forecast(city: str, days: int = 2) -> dict:
    """A forecast, as structured content."""
    return {{"city": city, "days": days, "high": 21}}


@server.tool()
def store_note(note: str) -> str:
    """Store a note; the answer carries a token (a secret planted in the result)."""
    return f"stored {{len(note)}} characters, receipt {RESULT_SECRET!r}"


@server.tool()
def broken(city: str) -> str:
    """A tool that fails: the result is marked isError."""
    raise ToolError(f"no station in {{city}}")


@server.tool()
async def hang() -> str:
    """Never answers: a caller's timeout turns it into a JSON-RPC error."""
    await anyio.sleep_forever()
    return "never"


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["http"]:  # streamable HTTP on the port given
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("stdio")
'''


class Session:
    """An MCP ``ClientSession`` to the server in ``folder``, open until `close`.

    Example:
        >>> session = Session(Path("/tmp"))  # doctest: +SKIP
        >>> session.run(session.client.call_tool("get_weather", {"city": "Paris"}))  # doctest: +SKIP
        CallToolResult(...)
    """

    def __init__(self, folder: Path) -> None:
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        script = folder / "weather_server.py"
        script.write_text(SERVER, encoding="utf-8")
        self.log_path = folder / "server.log"
        self._log = self.log_path.open("w", encoding="utf-8")  # the server's own log, not ours
        self._params = StdioServerParameters(command=sys.executable, args=[str(script)])
        self._client_type = ClientSession
        self._open = stdio_client
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="mcp-session", daemon=True)
        self._thread.start()
        self._ready: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._stop: asyncio.Event | None = None
        self._served = asyncio.run_coroutine_threadsafe(self._serve(), self._loop)
        self.client: Any = self._ready.result(timeout=60)

    async def _serve(self) -> None:
        try:
            async with (
                self._open(self._params, errlog=self._log) as (read, write),
                self._client_type(read, write) as client,
            ):
                await client.initialize()
                self._stop = asyncio.Event()
                self._ready.set_result(client)
                await self._stop.wait()
        except BaseException as exc:
            if not self._ready.done():
                self._ready.set_exception(exc)
            raise

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        """Run ``coroutine`` on the session's loop, in a copy of the caller's context."""
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=120)

    def close(self) -> None:
        """End the session and the server process, then the loop."""
        if self._stop is not None:
            self._loop.call_soon_threadsafe(self._stop.set)
        try:
            self._served.result(timeout=60)
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=60)
            self._loop.close()
            self._log.close()
