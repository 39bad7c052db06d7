"""Guards: OpenTelemetry's suppression key silences the MCP integration's spans (issue 23, item 8).

The tool span goes through tracesim's provider (``CurrentProvider``), which checks the key:
this test fails when that check, or the integration's use of that provider, is removed.
``suppression`` comes from integrations/conftest.py; the server is a real one over stdio.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp_harness import Session

import tracesim
from tracesim.testing import capture_spans

pytest.importorskip("mcp", reason="the 'mcp' extra (the mcp SDK) is not installed")


@pytest.fixture(scope="module")
def mcp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Session]:
    session = Session(tmp_path_factory.mktemp("mcp-guards"))
    yield session
    session.close()


@pytest.fixture(autouse=True)
def _off() -> Iterator[None]:
    yield
    tracesim.uninstrument_mcp()


def test_an_mcp_tool_call_under_suppression_is_no_tool_span(
    mcp: Session, suppression: Callable[[], Any], tmp_path: Path
) -> None:
    tracesim.instrument_mcp()

    def call() -> str:
        result = mcp.run(mcp.client.call_tool("get_weather", {"city": "Paris"}))
        return str(result.content[0].text)

    with capture_spans() as captured:
        with suppression():
            assert call() == "Sunny in Paris."
        assert not [s for s in captured.spans if s.name.startswith("execute_tool")]
        assert call() == "Sunny in Paris."
        # the same call, unsuppressed, is traced: the check is what silenced it
        assert [s.name for s in captured.spans if s.name.startswith("execute_tool")] == [
            "execute_tool get_weather"
        ]
