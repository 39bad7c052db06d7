"""The scripted model server the run tests share, and the OpenAI integration turned on over it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_server import LLMServer

import tracesim


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture
def instrumented(server: LLMServer) -> Iterator[LLMServer]:
    """The server, reset, with tracesim's OpenAI integration on (skipped without its extra)."""
    pytest.importorskip(
        "opentelemetry.instrumentation.genai.openai",
        reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
    )
    from tracesim.integrations import uninstrument_openai

    server.reset()
    tracesim.instrument_openai()
    yield server
    uninstrument_openai()
