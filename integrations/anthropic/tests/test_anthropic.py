"""tracesim.instrument_anthropic(): the real anthropic client over real HTTP, its calls as spans."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import MESSAGES, LLMServer, Reply

import tracesim
from tracesim.testing import capture_spans
from tracesim.tracefile import load_spans

pytest.importorskip("anthropic", reason="the 'anthropic' extra is not installed")
pytest.importorskip(
    "opentelemetry.instrumentation.genai.anthropic",
    reason="the 'anthropic' extra (opentelemetry-instrumentation-genai-anthropic) is not installed",
)
import anthropic

SECRET = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"
MAIL = "marie.curie@sorbonne.fr"
SDK_SPAN = "anthropic.messages.create"  # the client's own span (anthropic 2.x traces itself)
MAIL_TOOL: anthropic.types.ToolParam = {
    "name": "send_mail",
    "description": "Send a short e-mail.",
    "input_schema": {"type": "object", "properties": {"to": {"type": "string"}, "body": {"type": "string"}}},
}


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _instrumented(server: LLMServer) -> Iterator[None]:
    server.reset()
    yield
    tracesim.uninstrument_anthropic()


@pytest.fixture
def claude(server: LLMServer) -> Iterator[anthropic.Anthropic]:
    # open_telemetry=False: the client's own span is left out, one span per call (see the layering test)
    with anthropic.Anthropic(
        base_url=server.root_url, api_key="test", max_retries=0, open_telemetry=False
    ) as client:
        yield client


def test_a_messages_call_is_a_span_under_the_agent_with_model_tokens_and_messages(
    server: LLMServer, claude: anthropic.Anthropic
) -> None:
    server.judge = lambda request: "Warsaw."
    assert tracesim.instrument_anthropic() is True
    assert tracesim.instrument_anthropic() is False  # once is enough
    with capture_spans() as captured:

        @tracesim.trace(kind="agent")
        def agent(question: str) -> str:
            reply = claude.messages.create(
                model="claude-x",
                max_tokens=64,
                system="Answer in one word.",
                messages=[{"role": "user", "content": question}],
            )
            block = reply.content[0]
            return block.text if block.type == "text" else ""

        assert agent("Where was Marie Curie born?") == "Warsaw."
        llm, top = captured.spans
    assert (llm.name, top.name) == ("chat claude-x", "agent")
    assert llm.parent_span_id == top.span_id
    assert llm.attributes["gen_ai.provider.name"] == "anthropic"
    assert llm.attributes["gen_ai.request.model"] == "claude-x"
    assert llm.attributes["gen_ai.response.model"] == "scripted-model"
    assert llm.attributes["openinference.span.kind"] == "LLM"
    assert (llm.attributes["gen_ai.usage.input_tokens"], llm.attributes["gen_ai.usage.output_tokens"]) == (
        9,
        1,
    )
    sent = json.loads(str(llm.attributes["gen_ai.input.messages"]))
    assert sent[0]["role"] == "user"
    assert "Marie Curie" in json.dumps(sent)
    assert "one word" in str(llm.attributes["gen_ai.system_instructions"])
    assert "Warsaw." in str(llm.attributes["gen_ai.output.messages"])


def test_the_clients_own_span_nests_under_the_instrumentations(server: LLMServer) -> None:
    # anthropic 2.x emits a CLIENT span per API call through the global provider (metadata only):
    # with the instrumentation on, it sits under the GenAI span, as an HTTP client's span would.
    tracesim.instrument_anthropic()
    with (
        capture_spans() as captured,
        anthropic.Anthropic(base_url=server.root_url, api_key="test", max_retries=0) as client,
    ):
        client.messages.create(model="claude-x", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        spans = {span.name: span for span in captured.spans}
    assert set(spans) == {"chat claude-x", SDK_SPAN}
    assert spans[SDK_SPAN].parent_span_id == spans["chat claude-x"].span_id
    assert "gen_ai.input.messages" not in spans[SDK_SPAN].attributes


def test_streams_and_the_async_client_are_spans_too(server: LLMServer, claude: anthropic.Anthropic) -> None:
    server.judge = lambda request: "Marie Curie was born in Warsaw."
    tracesim.instrument_anthropic()
    question = [{"role": "user", "content": "Where was Marie Curie born?"}]

    async def ask_async() -> str:
        async with anthropic.AsyncAnthropic(
            base_url=server.root_url, api_key="test", max_retries=0, open_telemetry=False
        ) as client:
            reply = await client.messages.create(model="claude-async", max_tokens=64, messages=question)  # type: ignore[arg-type]
        block = reply.content[0]
        return block.text if block.type == "text" else ""

    with capture_spans() as captured:

        @tracesim.trace(kind="agent")
        def agent() -> str:
            with claude.messages.stream(model="claude-stream", max_tokens=64, messages=question) as stream:  # type: ignore[arg-type]
                streamed = "".join(stream.text_stream)
            return streamed + " / " + asyncio.run(ask_async())

        assert agent().count("Warsaw.") == 2
        spans = {span.name: span for span in captured.spans}
    assert set(spans) == {"agent", "chat claude-stream", "chat claude-async"}
    streamed, awaited = spans["chat claude-stream"], spans["chat claude-async"]
    assert streamed.parent_span_id == awaited.parent_span_id == spans["agent"].span_id
    assert streamed.attributes["gen_ai.request.stream"] is True
    assert streamed.attributes["gen_ai.usage.output_tokens"] == 6
    assert "Warsaw." in str(streamed.attributes["gen_ai.output.messages"])  # the words, put together
    assert streamed.end_time_unix_nano <= spans["agent"].end_time_unix_nano
    assert awaited.attributes["gen_ai.usage.input_tokens"] == 5


def test_a_tool_use_and_its_result_nest_under_the_agent_with_the_secret_redacted(
    server: LLMServer, claude: anthropic.Anthropic, tmp_path: Path
) -> None:
    server.script(MESSAGES, Reply.content(json.dumps({"to": MAIL, "body": f"the key is {SECRET}"})))
    server.script(MESSAGES, Reply.content("Sent."))
    path = tmp_path / "traces.jsonl"
    tracesim.instrument_anthropic()
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)

    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        messages: list[anthropic.types.MessageParam] = [{"role": "user", "content": question}]
        first = claude.messages.create(
            model="claude-x",
            max_tokens=64,
            messages=messages,
            tools=[MAIL_TOOL],
            tool_choice={"type": "tool", "name": "send_mail"},
        )
        (use,) = first.content
        assert use.type == "tool_use"
        messages.append({"role": "assistant", "content": first.content})
        messages.append(
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "ok"}]}
        )
        second = claude.messages.create(model="claude-x", max_tokens=64, messages=messages)
        block = second.content[0]
        return block.text if block.type == "text" else ""

    assert agent("Mail Marie the key, please.") == "Sent."
    assert tracesim.force_flush()
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert MAIL not in text
    spans = load_spans(path)
    (top,) = [s for s in spans if s.name == "agent"]
    calls = sorted((s for s in spans if s.name == "chat claude-x"), key=lambda s: s.start_time_unix_nano)
    assert [s.parent_span_id for s in calls] == [top.span_id, top.span_id]
    assert calls[0].attributes["gen_ai.response.finish_reasons"] == ["tool_call"]
    (answer,) = json.loads(str(calls[0].attributes["gen_ai.output.messages"]))
    (part,) = answer["parts"]
    assert (part["type"], part["name"]) == ("tool_call", "send_mail")
    assert "[REDACTED:api_key]" in json.dumps(part["arguments"])
    assert "[REDACTED:email]" in json.dumps(part["arguments"])
    assert "send_mail" in str(calls[0].attributes["gen_ai.tool.definitions"])
    assert "tool_call_response" in str(calls[1].attributes["gen_ai.input.messages"])


def test_message_content_follows_the_capture_setting(server: LLMServer, claude: anthropic.Anthropic) -> None:
    tracesim.instrument_anthropic()
    with capture_spans(capture=False) as captured:
        claude.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        (llm,) = captured.spans
    assert "gen_ai.input.messages" not in llm.attributes
    assert llm.attributes["gen_ai.usage.input_tokens"] == 1  # the rest is recorded
    tracesim.instrument_anthropic(capture=False)  # off for this integration only
    with capture_spans() as captured:
        claude.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        (llm,) = captured.spans
    assert "gen_ai.output.messages" not in llm.attributes


def test_uninstrumented_and_unconfigured_calls_run_untraced(
    server: LLMServer, claude: anthropic.Anthropic
) -> None:
    tracesim.instrument_anthropic()
    reply = claude.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert reply.content  # tracesim not configured: the call just runs
    tracesim.uninstrument_anthropic()
    with capture_spans() as captured:
        claude.messages.create(model="m", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
        assert captured.spans == []
    assert server.count(MESSAGES) == 2


@pytest.mark.parametrize("missing", ["opentelemetry.instrumentation.genai.anthropic", "anthropic"])
def test_the_missing_extra_is_named(run_python: object, tmp_path: Path, missing: str) -> None:
    code = (
        f"import sys\nsys.modules[{missing!r}] = None\n"
        "import tracesim\n"
        "try:\n    tracesim.instrument_anthropic()\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = run_python(code, cwd=tmp_path)  # type: ignore[operator]
    assert done.returncode == 0, done.stderr
    assert "MissingIntegrationError" in done.stdout
    assert "pip install 'tracesim[anthropic]'" in done.stdout
