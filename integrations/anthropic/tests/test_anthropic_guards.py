"""Guards: OpenTelemetry's suppression key silences the Anthropic integration's spans (issue 23, item 8).

The GenAI instrumentations tracesim builds on do not check the key themselves: tracesim's
provider does (``CurrentProvider`` in ``tracesim/instrumentation.py``). This test fails when
that check is removed. The real client talks to the scripted server (tests/llm_server.py);
``suppression`` and ``names_when_suppressed`` come from integrations/conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_server import LLMServer

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
    tracesim.uninstrument_anthropic()


def test_an_anthropic_call_under_suppression_is_no_span(
    server: LLMServer, suppression: Callable[[], Any], names_when_suppressed: NamesWhenSuppressed
) -> None:
    """Guard: the same check as for OpenAI, for the Anthropic integration."""
    anthropic = pytest.importorskip("anthropic")
    pytest.importorskip("opentelemetry.instrumentation.genai.anthropic")
    tracesim.instrument_anthropic()

    def call(question: str) -> str:
        with anthropic.Anthropic(
            base_url=server.root_url, api_key="test", max_retries=0, open_telemetry=False
        ) as client:
            reply = client.messages.create(
                model="claude-x", max_tokens=16, messages=[{"role": "user", "content": question}]
            )
        return str(reply.content[0].text)

    assert names_when_suppressed(server, suppression, call) == ["chat claude-x"]
