"""Guards: OpenTelemetry's suppression key silences the pydantic-ai integration's spans (issue 23, item 8).

pydantic-ai does not check the key itself: tracesim's provider does (``CurrentProvider`` in
``tracesim/instrumentation.py``), as for every integration. This test fails when that check is
removed. The agent talks to the scripted server (tests/llm_server.py); ``suppression`` comes
from integrations/conftest.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_server import LLMServer

import tracesim
from tracesim.testing import capture_spans

pytest.importorskip("pydantic_ai", reason="pydantic-ai (the 'pydantic_ai' extra) needs Python 3.11 or later")
openai = pytest.importorskip("openai", reason="pydantic-ai-slim[openai] (the 'test' extra) is missing")
# the openai client's HTTP library: httpx2 from openai 3, httpx before
http = pytest.importorskip("httpx2" if int(openai.__version__.split(".")[0]) >= 3 else "httpx")
from pydantic_ai import Agent  # noqa: E402  (after the skips above)
from pydantic_ai.models.openai import OpenAIChatModel  # noqa: E402
from pydantic_ai.providers.openai import OpenAIProvider  # noqa: E402


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _reset(server: LLMServer) -> Iterator[None]:
    server.reset()
    server.judge = lambda request: "Warsaw."
    loop = asyncio.new_event_loop()  # run_sync's, closed after the test (pydantic-ai leaves it open)
    asyncio.set_event_loop(loop)
    yield
    asyncio.set_event_loop(None)
    loop.close()
    tracesim.uninstrument_pydantic_ai()


def test_a_pydantic_ai_run_under_suppression_is_no_span(
    server: LLMServer, suppression: Callable[[], Any]
) -> None:
    """Guard: the same check, for the pydantic-ai integration."""
    client = openai.DefaultAsyncHttpxClient(limits=http.Limits(max_keepalive_connections=0))
    provider = OpenAIProvider(base_url=server.base_url, api_key="test", http_client=client)
    agent = Agent(OpenAIChatModel("gpt-4o-mini", provider=provider), name="capitals")
    tracesim.instrument_pydantic_ai()

    def call(question: str) -> str:
        return agent.run_sync(question).output

    with capture_spans() as captured:
        with suppression():
            assert call("suppressed?") == "Warsaw."
        assert not captured.spans
        assert call("traced?") == "Warsaw."
        assert captured.spans  # the same agent, unsuppressed, is traced: the check is what silenced it
    assert server.count() == 2
