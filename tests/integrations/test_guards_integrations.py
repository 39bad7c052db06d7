"""Guards: OpenTelemetry's suppression key silences the integrations' spans (issue 23, item 8).

OpenTelemetry's own exporters, and any code that must not be traced, set the suppression key
(``opentelemetry.instrumentation.utils.suppress_instrumentation()``); instrumentations are
expected to record nothing under it. The GenAI instrumentations tracesim builds on do not check
it themselves: tracesim's provider does (``integrations/_provider.py``). These tests fail when
that check is removed. The real clients talk to the scripted server (tests/llm_server.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from llm_server import LLMServer
from opentelemetry import context as otel_context
from opentelemetry.instrumentation.utils import suppress_instrumentation

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
    for stop in (
        tracesim.uninstrument_openai,
        tracesim.uninstrument_anthropic,
        tracesim.uninstrument_langchain,
    ):
        stop()


class _Attached:
    """A context value set by hand for the block, as code without OpenTelemetry's helper does."""

    def __init__(self, key: str) -> None:
        self._key = key

    def __enter__(self) -> None:
        self._token = otel_context.attach(otel_context.set_value(self._key, True))

    def __exit__(self, *exc_info: object) -> None:
        otel_context.detach(self._token)


# The API's own name for the key every instrumentation checks.
SUPPRESS_KEY: str = otel_context._SUPPRESS_INSTRUMENTATION_KEY


SUPPRESSIONS: dict[str, Callable[[], Any]] = {
    "suppress_instrumentation": suppress_instrumentation,
    "context_key": lambda: _Attached(SUPPRESS_KEY),
}


def _names_when_suppressed(
    server: LLMServer, suppression: Callable[[], Any], call: Callable[[str], str]
) -> list[str]:
    """Span names after one call under ``suppression`` and one after it; the model answered both."""
    with capture_spans() as captured:
        with suppression():
            assert call("suppressed?") == "Warsaw."
        assert call("traced?") == "Warsaw."
        names = [s.name for s in captured.spans]
    assert server.count() == 2  # both calls reached the model: only the first went untraced
    return names


@pytest.mark.parametrize("suppression", sorted(SUPPRESSIONS))
def test_an_openai_call_under_suppression_is_no_span(server: LLMServer, suppression: str) -> None:
    """Guard: ``integrations/_provider.py`` _suppressed reading only tracesim's model-call marker
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

    assert _names_when_suppressed(server, SUPPRESSIONS[suppression], call) == ["chat gpt-4o-mini"]


def test_an_async_openai_call_under_suppression_is_no_span(server: LLMServer) -> None:
    """The same guard on the async client: the key is read from the context of the task."""
    import asyncio

    openai = pytest.importorskip("openai")
    pytest.importorskip("opentelemetry.instrumentation.genai.openai")
    tracesim.instrument_openai()

    async def ask(question: str) -> str:
        async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            reply = await client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
            )
        return str(reply.choices[0].message.content)

    assert _names_when_suppressed(server, suppress_instrumentation, lambda q: asyncio.run(ask(q))) == [
        "chat gpt-4o-mini"
    ]


@pytest.mark.parametrize("suppression", sorted(SUPPRESSIONS))
def test_an_anthropic_call_under_suppression_is_no_span(server: LLMServer, suppression: str) -> None:
    """Guard: the same check, for the Anthropic integration."""
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

    assert _names_when_suppressed(server, SUPPRESSIONS[suppression], call) == ["chat claude-x"]


@pytest.mark.parametrize("suppression", sorted(SUPPRESSIONS))
def test_a_langchain_chain_under_suppression_is_no_span(server: LLMServer, suppression: str) -> None:
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
        with SUPPRESSIONS[suppression]():
            assert call("suppressed?") == "Warsaw."
        assert not captured.spans
        assert call("traced?") == "Warsaw."
        assert captured.spans  # the same chain, unsuppressed, is traced: the check is what silenced it
    assert server.count() == 2


def test_tracesims_own_spans_under_suppression_are_not_exported() -> None:
    @tracesim.trace
    def traced() -> str:
        return "ok"

    with capture_spans() as captured:
        with suppress_instrumentation():
            traced()
            with tracesim.span("block"):
                pass
        traced()
        names = [s.name for s in captured.spans]
    assert names == ["traced"]
