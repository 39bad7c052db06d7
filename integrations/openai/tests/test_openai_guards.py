"""Guards: OpenTelemetry's suppression key silences the OpenAI integration's spans (issue 23, item 8).

OpenTelemetry's own exporters, and any code that must not be traced, set the suppression key
(``opentelemetry.instrumentation.utils.suppress_instrumentation()``); instrumentations are
expected to record nothing under it. The GenAI instrumentations tracesim builds on do not check
it themselves: tracesim's provider does (``CurrentProvider`` in ``tracesim/instrumentation.py``).
These tests fail when that check is removed. The real client talks to the scripted server
(tests/llm_server.py); ``suppression`` and ``names_when_suppressed`` come from
integrations/conftest.py.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_server import LLMServer
from opentelemetry.instrumentation.utils import suppress_instrumentation

import tracesim

NamesWhenSuppressed = Callable[[LLMServer, Callable[[], Any], Callable[[str], str]], list[str]]


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _reset(server: LLMServer) -> Iterator[None]:
    server.reset()
    server.judge = lambda request: "Warsaw."
    yield
    tracesim.uninstrument_openai()


def test_an_openai_call_under_suppression_is_no_span(
    server: LLMServer, suppression: Callable[[], Any], names_when_suppressed: NamesWhenSuppressed
) -> None:
    """Guard: ``CurrentProvider``'s _suppressed reading only tracesim's model-call marker
    (the suppression key's ``get_value`` dropped)."""
    openai = pytest.importorskip("openai")
    pytest.importorskip("opentelemetry.instrumentation.genai.openai")
    tracesim.instrument_openai()

    def call(question: str) -> str:
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
            )
        return str(reply.choices[0].message.content)

    assert names_when_suppressed(server, suppression, call) == ["chat gpt-4o-mini"]


def test_an_async_openai_call_under_suppression_is_no_span(
    server: LLMServer, names_when_suppressed: NamesWhenSuppressed
) -> None:
    """The same guard on the async client: the key is read from the context of the task."""
    openai = pytest.importorskip("openai")
    pytest.importorskip("opentelemetry.instrumentation.genai.openai")
    tracesim.instrument_openai()

    async def ask(question: str) -> str:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
            )
        return str(reply.choices[0].message.content)

    assert names_when_suppressed(server, suppress_instrumentation, lambda q: asyncio.run(ask(q))) == [
        "chat gpt-4o-mini"
    ]
