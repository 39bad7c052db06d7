"""tracesim.instrument_langchain(): a chain with ChatOpenAI, over real HTTP, as spans in our traces."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import CHAT, LLMServer
from pydantic import SecretStr

import tracesim
from tracesim.testing import capture_spans
from tracesim.tracefile import SpanRecord, load_spans

pytest.importorskip(
    "opentelemetry.instrumentation.genai.langchain",
    reason="the 'langchain' extra (opentelemetry-instrumentation-genai-langchain) is not installed",
)
langchain_openai = pytest.importorskip(
    "langchain_openai", reason="langchain-openai (the 'test' extra) is missing"
)
from langchain_core.output_parsers import StrOutputParser  # noqa: E402  (after the skip above)
from langchain_core.prompts import ChatPromptTemplate  # noqa: E402
from langchain_core.tools import tool  # noqa: E402
from langchain_openai import ChatOpenAI  # noqa: E402

SECRET = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"
MAIL = "marie.curie@sorbonne.fr"
PROMPT = ChatPromptTemplate.from_messages([("system", "Answer in one word."), ("user", "{question}")])


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _instrumented(server: LLMServer) -> Iterator[None]:
    server.reset()
    server.judge = lambda request: "Warsaw."
    yield
    tracesim.uninstrument_langchain()
    tracesim.uninstrument_openai()


def chat_model(server: LLMServer) -> Any:
    return ChatOpenAI(
        model="gpt-4o-mini", base_url=server.base_url, api_key=SecretStr("test"), max_retries=0, temperature=0
    )


def traced_agent(server: LLMServer) -> Any:
    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        chain = PROMPT | chat_model(server) | StrOutputParser()
        return str(chain.invoke({"question": question}))

    return agent


def _one(spans: list[SpanRecord], prefix: str) -> SpanRecord:
    (found,) = [s for s in spans if s.name.startswith(prefix)]
    return found


def test_a_chain_in_a_traced_agent_nests_its_spans_with_model_and_tokens_and_no_secret(
    server: LLMServer, tmp_path: Path
) -> None:
    assert tracesim.instrument_langchain() is True
    assert tracesim.instrument_langchain() is False  # once is enough
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)

    answer = traced_agent(server)(f"Where was Marie Curie born? My key is {SECRET}, mail {MAIL}.")

    assert answer == "Warsaw."
    assert tracesim.force_flush()
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert MAIL not in text
    spans = load_spans(path)
    agent, chain, llm = _one(spans, "agent"), _one(spans, "invoke_workflow"), _one(spans, "chat")
    assert chain.parent_span_id == agent.span_id
    assert llm.parent_span_id == chain.span_id
    assert llm.name == "chat gpt-4o-mini"
    assert llm.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert llm.attributes["gen_ai.response.model"] == "scripted-model"
    assert llm.attributes["openinference.span.kind"] == "LLM"
    assert (llm.attributes["gen_ai.usage.input_tokens"], llm.attributes["gen_ai.usage.output_tokens"]) == (
        20,
        1,
    )
    sent = json.loads(str(llm.attributes["gen_ai.input.messages"]))
    assert [m["role"] for m in sent] == ["system", "user"]
    assert "[REDACTED:api_key]" in json.dumps(sent)
    assert "[REDACTED:email]" in json.dumps(sent)
    assert "Warsaw." in str(llm.attributes["gen_ai.output.messages"])
    assert "[REDACTED:" in str(chain.attributes["gen_ai.input.messages"])  # the chain's input, redacted too
    assert "server.port" not in llm.attributes  # LangChain alone does not know where the model is


def test_with_the_openai_integration_on_too_a_call_is_still_one_span(server: LLMServer) -> None:
    tracesim.instrument_langchain()
    tracesim.instrument_openai()
    with capture_spans() as captured:
        assert traced_agent(server)("Where was Marie Curie born?") == "Warsaw."
        spans = captured.spans
    assert server.count(CHAT) == 1
    (llm,) = [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]
    # util-genai folds the client's call into LangChain's span instead of opening a second one:
    # the server's address, which only the openai instrumentation sees, is on LangChain's span
    assert llm.attributes["server.port"] == int(server.base_url.split(":")[-1].split("/")[0])
    assert llm.attributes["gen_ai.usage.input_tokens"] == 4 + 5
    assert llm.parent_span_id == _one(spans, "invoke_workflow").span_id


def test_a_tool_is_a_tool_span_under_the_agent(server: LLMServer) -> None:
    @tool
    def capital(country: str) -> str:
        """The capital city of a country."""
        return {"Poland": "Warsaw"}.get(country, "unknown")

    tracesim.instrument_langchain()
    with capture_spans() as captured:

        @tracesim.trace(kind="agent")
        def agent(country: str) -> str:
            return str(capital.invoke({"country": country}))

        assert agent("Poland") == "Warsaw"
        spans = captured.spans
    used = _one(spans, "execute_tool")
    assert used.name == "execute_tool capital"
    assert used.parent_span_id == _one(spans, "agent").span_id
    assert used.attributes["gen_ai.tool.name"] == "capital"
    assert used.attributes["openinference.span.kind"] == "TOOL"
    # its arguments and result follow tracesim's capture (not the instrumentation's env variable)
    assert json.loads(used.attributes["gen_ai.tool.call.arguments"]) == {"country": "Poland"}
    assert used.attributes["gen_ai.tool.call.result"] == "Warsaw"


def test_a_tools_arguments_and_result_are_bounded_redacted_and_follow_capture(server: LLMServer) -> None:
    secret = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"

    @tool
    def call_api(key: str, note: str) -> str:
        """Call an API with a key."""
        return f"called with {key}"

    tracesim.instrument_langchain()
    with capture_spans(max_value_chars=200) as captured:
        call_api.invoke({"key": secret, "note": "x" * 1000})
    used = _one(captured.spans, "execute_tool")
    arguments, result = (
        used.attributes["gen_ai.tool.call.arguments"],
        used.attributes["gen_ai.tool.call.result"],
    )
    assert "Abc123Def456" not in arguments + result
    assert "[REDACTED:" in result
    assert len(arguments) <= 200 + 64  # cut to max_value_chars, with its marker
    for capture_off in ({"capture": False}, {}):
        if not capture_off:
            tracesim.instrument_langchain(capture=False)  # off for this integration only
        with capture_spans(**capture_off) as captured:
            call_api.invoke({"key": secret, "note": "n"})
        attributes = _one(captured.spans, "execute_tool").attributes
        assert "gen_ai.tool.call.arguments" not in attributes
        assert "gen_ai.tool.call.result" not in attributes


def test_message_content_follows_the_capture_setting(server: LLMServer) -> None:
    tracesim.instrument_langchain()
    with capture_spans(capture=False) as captured:
        traced_agent(server)("Where was Marie Curie born?")
        spans = captured.spans
    assert not any("gen_ai.input.messages" in s.attributes for s in spans)
    assert _one(spans, "chat").attributes["gen_ai.usage.output_tokens"] == 1  # the rest is recorded
    tracesim.instrument_langchain(capture=False)  # off for this integration only
    with capture_spans() as captured:
        traced_agent(server)("Where was Marie Curie born?")
        spans = captured.spans
    assert not any("gen_ai.output.messages" in s.attributes for s in spans)


def test_after_uninstrument_only_tracesims_own_span_is_left(server: LLMServer) -> None:
    tracesim.instrument_langchain()
    tracesim.uninstrument_langchain()
    with capture_spans() as captured:
        traced_agent(server)("Where was Marie Curie born?")
        assert [s.name for s in captured.spans] == ["agent"]


def test_the_missing_extra_is_named(run_python: object, tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['langchain_core'] = None\n"
        "import tracesim\n"
        "try:\n    tracesim.instrument_langchain()\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = run_python(code, cwd=tmp_path)  # type: ignore[operator]
    assert done.returncode == 0, done.stderr
    assert "MissingIntegrationError" in done.stdout
    assert "pip install 'tracesim[langchain]'" in done.stdout
