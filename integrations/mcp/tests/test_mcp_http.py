"""An MCP server over streamable HTTP: the tool span says where it is and which MCP session it is.

The server is the tests' weather server (mcp_harness.py) in a process of its own, serving
streamable HTTP on a free local port; the client is the SDK's ``streamable_http_client``.
"""

from __future__ import annotations

import asyncio
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from mcp_harness import SERVER

import tracesim
from tracesim.testing import capture_spans

pytest.importorskip("mcp", reason="the 'mcp' extra (the mcp SDK) is not installed")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _listening(port: int) -> bool:
    with socket.socket() as probe:
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def http_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("mcp-http")
    script = folder / "weather_server.py"
    script.write_text(SERVER, encoding="utf-8")
    port = _free_port()
    with (folder / "server.log").open("w", encoding="utf-8") as log:
        process = subprocess.Popen([sys.executable, str(script), "http", str(port)], stdout=log, stderr=log)
        try:
            deadline = time.monotonic() + 60  # a bound on the start, not a timed assertion
            while not _listening(port):
                assert process.poll() is None, (folder / "server.log").read_text(encoding="utf-8")
                assert time.monotonic() < deadline, "the MCP server did not start listening"
                time.sleep(0.05)
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()
            process.wait(timeout=30)


@pytest.fixture(autouse=True)
def _off() -> Iterator[None]:
    yield
    tracesim.uninstrument_mcp()


def test_a_tool_call_over_http_names_the_server_and_the_mcp_session(http_server: str) -> None:
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    tracesim.instrument_mcp()

    async def call() -> Any:
        async with (
            streamable_http_client(http_server) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            return await session.call_tool("get_weather", {"city": "Paris"})

    with capture_spans() as captured:
        assert asyncio.run(call()).content[0].text == "Sunny in Paris."
        tool = captured.by_name("execute_tool get_weather")
    attributes = tool.attributes
    assert attributes["network.transport"] == "tcp"
    assert attributes["network.protocol.name"] == "http"
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == urlsplit(http_server).port
    assert len(str(attributes["mcp.session.id"])) >= 16  # the server's session id, from its header
    assert attributes["gen_ai.tool.call.result"] == "Sunny in Paris."
