"""Guards: OpenTelemetry's suppression key silences the LangChain integration's spans (issue 23, item 8).

The GenAI instrumentations tracesim builds on do not check the key themselves: tracesim's
provider does (``CurrentProvider`` in ``tracesim/instrumentation.py``). This test fails when
that check is removed. ChatOpenAI talks to the scripted server (tests/llm_server.py);
``suppression`` comes from integrations/conftest.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_server import LLMServer

import tracesim
from tracesim.testing import capture_spans


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _reset(server: LLMServer) -> Iterator[None]:
    server.reset()
    server.judge = lambda request: "Warsaw."
    yield
    tracesim.uninstrument_langchain()
    tracesim.uninstrument_openai()


def test_a_langchain_chain_under_suppression_is_no_span(
    server: LLMServer, suppression: Callable[[], Any]
) -> None:
    """Guard: the same check, for the LangChain integration (and the OpenAI one beneath it)."""
    pytest.importorskip("opentelemetry.instrumentation.genai.langchain")
    langchain_openai = pytest.importorskip("langchain_openai")
    from langchain_core.output_parsers import StrOutputParser
    from langchain_core.prompts import ChatPromptTemplate
    from pydantic import SecretStr

    tracesim.instrument_langchain()
    prompt = ChatPromptTemplate.from_messages([("user", "{question}")])
    model = langchain_openai.ChatOpenAI(
        model="gpt-4o-mini", base_url=server.base_url, api_key=SecretStr("test"), max_retries=0
    )
    chain = prompt | model | StrOutputParser()

    def call(question: str) -> str:
        return str(chain.invoke({"question": question}))

    with capture_spans() as captured:
        with suppression():
            assert call("suppressed?") == "Warsaw."
        assert not captured.spans
        assert call("traced?") == "Warsaw."
        assert captured.spans  # the same chain, unsuppressed, is traced: the check is what silenced it
    assert server.count() == 2
