"""tracesim.instrument_openai(): the real openai client over real HTTP, its calls as spans in our traces."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest
from llm_server import CHAT, LLMServer, Reply
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

import tracesim
from tracesim.testing import capture_spans
from tracesim.tracefile import load_spans

pytest.importorskip(
    "opentelemetry.instrumentation.genai.openai",
    reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
)
from tracesim.integrations import uninstrument_openai

SECRET = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"
MAIL = "marie.curie@sorbonne.fr"


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer() as running:
        yield running


@pytest.fixture(autouse=True)
def _instrumented(server: LLMServer) -> Iterator[None]:
    server.reset()
    yield
    uninstrument_openai()


_clients: list[openai.OpenAI] = []


def client(server: LLMServer) -> openai.OpenAI:
    made = openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0)
    _clients.append(made)
    return made


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    yield
    while _clients:
        _clients.pop().close()


def test_a_chat_call_is_a_span_under_the_agent_with_model_tokens_and_messages(server: LLMServer) -> None:
    server.judge = lambda request: "Warsaw."
    assert tracesim.instrument_openai() is True
    assert tracesim.instrument_openai() is False  # once is enough
    with capture_spans() as captured:

        @tracesim.trace(kind="agent")
        def agent(question: str) -> str:
            reply = client(server).chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": question}], temperature=0
            )
            return str(reply.choices[0].message.content)

        assert agent("Where was Marie Curie born?") == "Warsaw."
        llm, top = captured.spans
    assert top.name == "agent"
    assert llm.name == "chat gpt-4o-mini"
    assert llm.parent_span_id == top.span_id
    assert llm.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert llm.attributes["gen_ai.operation.name"] == "chat"
    assert llm.attributes["openinference.span.kind"] == "LLM"  # what Phoenix reads
    assert llm.attributes["gen_ai.usage.input_tokens"] > 0
    assert llm.attributes["gen_ai.usage.output_tokens"] == 1
    sent = json.loads(str(llm.attributes["gen_ai.input.messages"]))
    assert sent[0]["role"] == "user"
    assert "Marie Curie" in json.dumps(sent)
    assert "Warsaw." in str(llm.attributes["gen_ai.output.messages"])


def test_async_calls_and_embeddings_are_spans_too(server: LLMServer) -> None:
    tracesim.instrument_openai()
    with capture_spans() as captured:

        @tracesim.trace(kind="agent")
        async def agent(question: str) -> int:
            async with openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as aclient:
                await aclient.chat.completions.create(
                    model="m1", messages=[{"role": "user", "content": question}]
                )
                vectors = await aclient.embeddings.create(model="e1", input=[question])
            return len(vectors.data)

        assert asyncio.run(agent("hello")) == 1
        names = {span.name: span for span in captured.spans}
    assert set(names) == {"agent", "chat m1", "embeddings e1"}
    for name in ("chat m1", "embeddings e1"):
        assert names[name].parent_span_id == names["agent"].span_id
    assert names["embeddings e1"].attributes["gen_ai.usage.input_tokens"] == 1
    assert names["embeddings e1"].attributes["openinference.span.kind"] == "EMBEDDING"
    assert names["agent"].attributes["openinference.span.kind"] == "AGENT"  # tracesim's own is kept


def test_message_content_follows_the_capture_setting(server: LLMServer) -> None:
    tracesim.instrument_openai()
    with capture_spans(capture=False) as captured:
        client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        (llm,) = captured.spans
    assert "gen_ai.input.messages" not in llm.attributes
    assert llm.attributes["gen_ai.usage.input_tokens"] > 0  # the rest is recorded
    tracesim.instrument_openai(capture=False)  # off for this integration only
    with capture_spans() as captured:
        client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        (llm,) = captured.spans
    assert "gen_ai.input.messages" not in llm.attributes


@pytest.mark.parametrize("mode", ["SPAN_ONLY", "SPAN_AND_EVENT"])
def test_util_genais_own_content_switch_does_not_override_capture(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    # the OpenTelemetry instrumentations' environment variable would have util-genai write the
    # messages itself, whole, whatever tracesim's capture says
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", mode)
    tracesim.instrument_openai()
    with capture_spans(capture=False) as captured:
        client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
        (llm,) = captured.spans
    assert not [key for key in llm.attributes if key.startswith("gen_ai.") and "messages" in key]
    assert llm.attributes["gen_ai.usage.input_tokens"] > 0
    # the application's environment is left as it was
    assert os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] == mode


def test_a_secret_in_a_prompt_or_a_completion_never_reaches_the_file(
    server: LLMServer, tmp_path: Path
) -> None:
    server.judge = lambda request: f"Write to {MAIL} with key {SECRET}."
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, instrument=["openai"])

    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        reply = client(server).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
        )
        return str(reply.choices[0].message.content)

    agent(f"my key is {SECRET}, mail me at {MAIL}")
    assert tracesim.force_flush()
    text = path.read_text(encoding="utf-8")
    assert "chat gpt-4o-mini" in text
    assert "gen_ai.input.messages" in text
    assert SECRET not in text
    assert MAIL not in text
    assert "[REDACTED:api_key]" in text


def test_configure_instrument_from_the_environment(
    server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    monkeypatch.setenv("TRACESIM_INSTRUMENT", "openai")
    memory = InMemorySpanExporter()
    tracesim.configure(exporters=[memory], batch_export=False)
    client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert [span.name for span in memory.get_finished_spans()] == ["chat m"]


def test_without_tracesim_configured_calls_run_untraced(server: LLMServer) -> None:
    tracesim.instrument_openai()
    reply = client(server).chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert reply.choices[0].message.content is not None


def test_the_missing_extra_is_named(run_python: object, tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['opentelemetry.instrumentation.genai.openai'] = None\n"
        "import tracesim\n"
        "try:\n    tracesim.instrument_openai()\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = run_python(code, cwd=tmp_path)  # type: ignore[operator]
    assert done.returncode == 0, done.stderr
    assert "MissingIntegrationError" in done.stdout
    assert "pip install 'tracesim[openai]'" in done.stdout


def test_a_streamed_answer_is_one_span_with_its_tokens_ending_with_the_stream(server: LLMServer) -> None:
    server.judge = lambda request: "Marie Curie was born in Warsaw."
    tracesim.instrument_openai()
    with capture_spans() as captured:

        @tracesim.trace(kind="agent")
        def agent(question: str) -> str:
            stream = client(server).chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "user", "content": question}],
                stream=True,
                stream_options={"include_usage": True},
            )
            return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)

        assert agent("Where was Marie Curie born?") == "Marie Curie was born in Warsaw."
        llm, top = captured.spans
    assert llm.name == "chat gpt-4o-mini"
    assert llm.parent_span_id == top.span_id
    assert llm.attributes["gen_ai.usage.output_tokens"] == 6
    assert llm.attributes["gen_ai.request.stream"] is True
    assert "Warsaw." in str(llm.attributes["gen_ai.output.messages"])


def test_a_responses_api_call_is_a_span_with_its_tokens(server: LLMServer) -> None:
    server.judge = lambda request: "Warsaw."
    tracesim.instrument_openai()
    with capture_spans() as captured:

        @tracesim.trace(kind="agent")
        def agent(question: str) -> str:
            return client(server).responses.create(model="gpt-4o-mini", input=question).output_text

        assert agent("Where was Marie Curie born?") == "Warsaw."
        llm, top = captured.spans
    assert llm.parent_span_id == top.span_id
    assert llm.attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert llm.attributes["gen_ai.usage.input_tokens"] == 5
    assert llm.attributes["gen_ai.usage.output_tokens"] == 1
    assert llm.attributes["openinference.span.kind"] == "LLM"


def test_tracesim_show_gives_each_llm_call_its_model_tokens_and_messages(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracesim.cli import main

    server.judge = lambda request: "Warsaw."
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, instrument=["openai"])

    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        reply = client(server).chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
        )
        return str(reply.choices[0].message.content)

    agent("Where was Marie Curie born?")
    assert tracesim.force_flush()
    capsys.readouterr()
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    line = next(row for row in shown.splitlines() if "chat gpt-4o-mini" in row)
    assert "LLM" in line
    assert "scripted-model 5→1 tokens" in line  # the model that answered, prompt and completion tokens
    assert "Where was Marie Curie born?" in shown  # the messages, previewed


MAIL_TOOL: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "send_mail",
        "description": "Send a short e-mail.",
        "parameters": {
            "type": "object",
            "properties": {"to": {"type": "string"}, "body": {"type": "string"}},
            "required": ["to", "body"],
        },
    },
}


def test_a_tool_call_and_its_result_are_two_spans_under_the_agent_with_the_secret_redacted(
    server: LLMServer, tmp_path: Path
) -> None:
    arguments = json.dumps({"to": MAIL, "body": f"the key is {SECRET}"})
    server.script(CHAT, Reply.content(arguments), Reply.content("Sent."))
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, instrument=["openai"])

    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": question}]
        first = client(server).chat.completions.create(
            model="gpt-4o-mini",
            messages=messages,
            tools=[MAIL_TOOL],
            tool_choice={"type": "function", "function": {"name": "send_mail"}},
        )
        (call,) = first.choices[0].message.tool_calls or []
        assert call.type == "function"
        messages.append(first.choices[0].message.model_dump(exclude_none=True))  # type: ignore[arg-type]
        messages.append({"role": "tool", "tool_call_id": call.id, "content": "sent"})
        second = client(server).chat.completions.create(model="gpt-4o-mini", messages=messages)
        return str(second.choices[0].message.content)

    assert agent("Mail Marie the key, please.") == "Sent."
    assert tracesim.force_flush()
    text = path.read_text(encoding="utf-8")
    assert SECRET not in text
    assert MAIL not in text
    spans = load_spans(path)
    (top,) = [s for s in spans if s.name == "agent"]
    calls = sorted((s for s in spans if s.name == "chat gpt-4o-mini"), key=lambda s: s.start_time_unix_nano)
    assert [s.parent_span_id for s in calls] == [top.span_id, top.span_id]
    assert calls[0].attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    (answer,) = json.loads(str(calls[0].attributes["gen_ai.output.messages"]))
    (part,) = answer["parts"]
    assert part["type"] == "tool_call"
    assert part["name"] == "send_mail"
    assert "[REDACTED:api_key]" in json.dumps(part["arguments"])
    assert "[REDACTED:email]" in json.dumps(part["arguments"])
    assert "send_mail" in str(calls[0].attributes["gen_ai.tool.definitions"])
    sent_back = json.loads(str(calls[1].attributes["gen_ai.input.messages"]))
    assert [m["role"] for m in sent_back] == ["user", "assistant", "tool"]
    assert "Sent." in str(calls[1].attributes["gen_ai.output.messages"])


def test_secrets_in_error_events_status_and_span_names_never_reach_the_file(
    server: LLMServer, tmp_path: Path
) -> None:
    # OpenAI echoes the key it refused; a model name can carry anything a user passes.
    refusal = {"error": {"message": f"Incorrect API key provided: {SECRET}. Mail {MAIL}.", "type": "auth"}}
    server.script(CHAT, Reply.status(401, body=refusal))
    path = tmp_path / "traces.jsonl"
    tracesim.configure(jsonl_path=path)
    tracesim.instrument_openai()
    try:

        @tracesim.trace(kind="agent")
        def agent() -> None:
            with pytest.raises(openai.AuthenticationError):
                client(server).chat.completions.create(
                    model="gpt-4o", messages=[{"role": "user", "content": "hi"}]
                )
            client(server).chat.completions.create(
                model=f"ft:{SECRET}", messages=[{"role": "user", "content": "hi"}]
            )

        agent()
        assert tracesim.force_flush(30)
    finally:
        tracesim.shutdown()
    text = path.read_text()
    assert SECRET not in text
    assert MAIL not in text
    spans = {s.name: s for s in load_spans(path)}
    refused = spans["chat gpt-4o"]
    assert refused.status_code == "ERROR"
    assert "[REDACTED:api_key]" in json.dumps(
        [refused.status_message, [e.attributes for e in refused.events]]
    )
    assert "chat ft:[REDACTED:api_key]" in spans  # the span name too
