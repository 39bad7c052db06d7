"""tracesim.instrument_litellm(): LiteLLM over real HTTP to the scripted server, its calls as spans.

The agent is a hand-written tool loop (the way LiteLLM is used without a framework): LiteLLM's
``openai/`` route to tests/llm_server.py, a ``@tracesim.trace(kind="tool")`` tool, all inside a
``@tracesim.trace(kind="agent")`` function. LiteLLM is imported once for the module (it takes
seconds), after ``LITELLM_LOCAL_MODEL_COST_MAP`` keeps it from fetching its price list.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # before LiteLLM is imported: offline

import asyncio
import json
import re
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
from llm_server import CHAT, LLMServer, Reply
from secret_kinds import SECRETS
from span_checks import report

import tracesim
from tracesim.instrumentation import CurrentProvider
from tracesim.testing import capture_spans
from tracesim.tracefile import SpanRecord, load_spans

litellm = pytest.importorskip("litellm", reason="the 'litellm' extra is not installed")

# LiteLLM's own warnings, not this integration's: pydantic warns about the ReadOnly items of
# LiteLLM's TypedDicts when it builds their schemas, and about an attribute LiteLLM reads while
# it checks each stream chunk
pytestmark = [
    pytest.mark.filterwarnings("ignore:.*using the `ReadOnly` qualifier:UserWarning"),
    pytest.mark.filterwarnings(
        "ignore:Accessing the 'model_.*' attribute on the instance:DeprecationWarning"
    ),
]

MODEL = "openai/gpt-4o-mini"
QUESTION = "What is the weather in Paris?"
ANSWER = "It is sunny in Paris."
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]
MESSAGES = [{"role": "user", "content": "Where was Marie Curie born?"}]
EXPECTED_CALLS = [{"name": "get_weather", "arguments": {"city": "Paris"}}]
KEY, KEY_FRAGMENT = SECRETS["openai"]
MAIL, MAIL_FRAGMENT = SECRETS["email"]
PASSWORD, PASSWORD_FRAGMENT = SECRETS["url_password"]


def _has_tool_result(body: Mapping[str, Any]) -> bool:
    return any(isinstance(m, dict) and m.get("role") == "tool" for m in body.get("messages") or ())


def weather_policy(arguments: str = '{"city": "Paris"}') -> Callable[[str, Any], Reply | None]:
    """The scripted model of one agent run: ``get_weather`` first, the answer once it has the result."""

    def policy(path: str, body: Any) -> Reply | None:
        if path != CHAT:
            return None
        return Reply.content(ANSWER) if _has_tool_result(body) else Reply.tool_call("get_weather", arguments)

    return policy


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(model="gpt-4o-mini") as running:  # a model tracesim prices
        yield running


@pytest.fixture(autouse=True)
def _instrumented(server: LLMServer) -> Iterator[None]:
    server.reset()
    server.policy = weather_policy()
    yield
    tracesim.uninstrument_litellm()
    tracesim.uninstrument_openai()


@tracesim.trace(kind="tool")
def get_weather(city: str) -> str:
    return f"Sunny in {city}."


def call(server: LLMServer, messages: list[Any], **options: Any) -> Any:
    return litellm.completion(
        model=MODEL, api_base=server.base_url, api_key="test", messages=messages, max_retries=0, **options
    )


def weather_agent_for(server: LLMServer, tool: Callable[..., str] = get_weather) -> Callable[[str], str]:
    @tracesim.trace(kind="agent")
    def weather_agent(question: str) -> str:
        messages: list[Any] = [{"role": "user", "content": question}]
        for _ in range(3):
            message = call(server, messages, tools=TOOLS).choices[0].message
            if not message.tool_calls:
                return str(message.content)
            messages.append(message)  # LiteLLM's own message object, as its docs' loops do
            for requested in message.tool_calls:
                result = tool(**json.loads(requested.function.arguments))
                messages.append({"role": "tool", "tool_call_id": requested.id, "content": result})
        raise AssertionError("the scripted model kept asking for tools")

    return weather_agent


def _chats(spans: list[SpanRecord]) -> list[SpanRecord]:
    return [s for s in spans if s.attributes.get("gen_ai.operation.name") == "chat"]


def _one(spans: list[SpanRecord], name: str) -> SpanRecord:
    (found,) = [s for s in spans if s.name == name]
    return found


def test_a_tool_loop_in_a_traced_agent_is_a_run_with_llm_and_tool_steps_tokens_and_cost(
    server: LLMServer,
) -> None:
    assert tracesim.instrument_litellm() is True
    assert tracesim.instrument_litellm() is False  # once is enough
    with capture_spans() as captured, tracesim.record_run() as recorded:
        recorded.span.set_output(weather_agent_for(server)(QUESTION))
        spans = captured.spans
    run = recorded.run
    assert run.output == ANSWER
    assert [(step.kind, step.name) for step in run.steps] == [
        ("agent", "weather_agent"),
        ("llm", "chat gpt-4o-mini"),
        ("tool", "get_weather"),
        ("llm", "chat gpt-4o-mini"),
    ]
    assert [(c.name, c.arguments, c.output) for c in run.tool_calls] == [
        ("get_weather", {"city": "Paris"}, "Sunny in Paris.")
    ]
    assert run.llm_calls == 2
    assert run.tokens == sum(s.input_tokens + s.output_tokens for s in run.steps if s.kind == "llm")  # type: ignore[operator]
    assert run.tokens > 0
    assert run.cost_usd is not None  # gpt-4o-mini is in tracesim's price table
    assert run.cost_usd > 0
    agent = _one(spans, "weather_agent")
    first, second = _chats(spans)
    assert first.parent_span_id == second.parent_span_id == agent.span_id
    assert first.attributes["gen_ai.provider.name"] == "openai"  # LiteLLM's routing prefix
    assert first.attributes["gen_ai.request.model"] == "gpt-4o-mini"  # without it
    assert first.attributes["gen_ai.response.model"] == "gpt-4o-mini"
    assert first.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert second.attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert str(first.attributes["gen_ai.response.id"]).startswith("chatcmpl-")
    assert first.attributes["server.address"] == "127.0.0.1"
    assert first.attributes["openinference.span.kind"] == "LLM"
    # the content, through util-genai's completion hook: messages, tools, the requested call
    (requested,) = json.loads(str(first.attributes["gen_ai.output.messages"]))[0]["parts"]
    assert str(requested.pop("id")).startswith("call_")
    assert requested == {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}}
    assert json.loads(str(first.attributes["gen_ai.tool.definitions"]))[0]["name"] == "get_weather"
    sent = json.loads(str(second.attributes["gen_ai.input.messages"]))
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[2]["parts"][0]["response"] == "Sunny in Paris."
    assert ANSWER in str(second.attributes["gen_ai.output.messages"])


def test_a_kind_agent_rule_scores_the_agent_against_its_golden_answer_and_its_tool_calls(
    server: LLMServer, tmp_path: Path
) -> None:
    golden = tmp_path / "golden.jsonl"
    row = {"question": QUESTION, "expected": ANSWER, "expected_tool_calls": EXPECTED_CALLS}
    golden.write_text(json.dumps(row) + "\n", encoding="utf-8")
    rule = {
        "match": "weather_agent",
        "kind": "agent",
        "evaluators": ["exact", "trajectory_match", "tool_call_accuracy"],
        "expected": {"golden": str(golden), "key": "question"},
    }
    tracesim.instrument_litellm()
    with capture_spans(evaluators=[rule]) as captured:
        assert weather_agent_for(server)(QUESTION) == ANSWER
    agent = captured.by_name("weather_agent")
    assert agent.attributes["tracesim.eval.exact.score"] == 1.0
    assert agent.attributes["tracesim.eval.trajectory_match.score"] == 1.0
    assert agent.attributes["tracesim.eval.tool_call_accuracy.score"] == 1.0
    server.policy = weather_policy('{"city": "Lyon"}')  # the wrong city: the run evaluators see it
    with capture_spans(evaluators=[rule]) as captured:
        weather_agent_for(server)(QUESTION)
    agent = captured.by_name("weather_agent")
    assert agent.attributes["tracesim.eval.exact.score"] == 1.0
    assert agent.attributes["tracesim.eval.trajectory_match.score"] == 0.0
    assert agent.attributes["tracesim.eval.tool_call_accuracy.score"] == 0.0


def test_the_openai_integration_alone_sees_no_call_litellm_makes(server: LLMServer) -> None:
    """LiteLLM's ``openai/`` route does not go through the client methods the OpenAI integration
    wraps: with that integration alone, LiteLLM's calls are not traced at all."""
    tracesim.instrument_openai()
    with capture_spans() as captured:
        call(server, MESSAGES)
        assert captured.spans == []
    assert server.count(CHAT) == 1


def test_with_the_openai_integration_on_too_each_call_is_counted_once(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, instrument=["litellm", "openai"])
    with tracesim.record_run() as recorded:
        weather_agent_for(server)(QUESTION)
    assert tracesim.force_flush()
    spans = load_spans(path)
    chats = _chats(spans)
    # one span per call, LiteLLM's: had the OpenAI integration traced the client call beneath,
    # util-genai would have folded it into LiteLLM's span
    assert len(chats) == server.count(CHAT) == 2
    assert {s.scope for s in chats} == {"tracesim_litellm"}
    assert recorded.run.llm_calls == 2
    usage = report(path, capsys)["llm_usage"]["totals"]
    assert usage["calls"] == 2
    assert usage["input_tokens"] == sum(int(s.attributes["gen_ai.usage.input_tokens"]) for s in chats)


def _with_openinference(server: LLMServer, path: Path, outer: str) -> list[SpanRecord]:
    """One agent run with OpenInference's LiteLLM instrumentation on too; the one turned on last
    wraps the other, so its span is the outer one."""
    oi = pytest.importorskip("openinference.instrumentation.litellm")
    tracesim.configure(exporters=["jsonl"], jsonl_path=path)
    instrumentor = oi.LiteLLMInstrumentor()
    if outer == "openinference":
        tracesim.instrument_litellm()
    instrumentor.instrument(tracer_provider=CurrentProvider())
    try:
        if outer == "tracesim":
            tracesim.instrument_litellm()
        weather_agent_for(server)(QUESTION)
    finally:
        tracesim.uninstrument_litellm()
        instrumentor.uninstrument()
    assert tracesim.force_flush()
    return load_spans(path)


@pytest.mark.parametrize("outer", ["openinference", "tracesim"])
def test_with_openinference_on_too_each_call_is_two_nested_llm_spans(
    server: LLMServer, tmp_path: Path, outer: str
) -> None:
    spans = _with_openinference(server, tmp_path / "traces.jsonl", outer)
    by_id = {s.span_id: s for s in spans}
    ours = _chats(spans)
    assert len(ours) == server.count(CHAT) == 2
    for span in ours:
        if outer == "openinference":
            parent = by_id[str(span.parent_span_id)]
            assert parent.scope.startswith("openinference")
            assert parent.attributes["openinference.span.kind"] == "LLM"
        else:
            (inner,) = [s for s in spans if s.parent_span_id == span.span_id]
            assert inner.scope.startswith("openinference")
            assert inner.attributes["openinference.span.kind"] == "LLM"


def _counted_elsewhere(span: Any) -> bool:
    attributes = span.attributes
    return attributes.get("tracesim.llm.counted_in_parent") is True or "tracesim.llm.twin_of" in attributes


@pytest.mark.parametrize("outer", ["openinference", "tracesim"])
def test_with_openinference_on_too_each_call_is_counted_once(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], outer: str
) -> None:
    path = tmp_path / "traces.jsonl"
    spans = _with_openinference(server, path, outer)
    theirs = [s for s in spans if s.scope.startswith("openinference")]
    for ours in _chats(spans):  # the pair of spans of one call: exactly one is counted
        (partner,) = [
            s for s in theirs if ours.span_id == s.parent_span_id or s.span_id == ours.parent_span_id
        ]
        # marked as the same call as its parent, or as its twin (another instrumentation's span)
        marks = [_counted_elsewhere(s) for s in (ours, partner)]
        assert sorted(marks) == [False, True]
    usage = report(path, capsys)["llm_usage"]["totals"]
    assert usage["calls"] == 2
    assert usage["input_tokens"] == sum(int(s.attributes["gen_ai.usage.input_tokens"]) for s in _chats(spans))


def test_secrets_in_the_prompt_the_tool_arguments_and_the_tool_result_reach_no_output(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracesim.cli import main

    server.policy = weather_policy(json.dumps({"city": "Paris", "token": KEY}))

    @tracesim.trace(kind="tool")
    def leaky_weather(city: str, token: str) -> str:
        return f"Sunny in {city}; database at {PASSWORD}"

    path = tmp_path / "traces.jsonl"
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, instrument=["litellm"])
    weather_agent_for(server, leaky_weather)(f"{QUESTION} Reply to {MAIL}.")
    assert tracesim.force_flush()
    capsys.readouterr()
    assert main(["show", str(path)]) == 0
    shown = capsys.readouterr().out
    assert main(["report", str(path)]) == 0
    outputs = {
        "trace file": path.read_text(encoding="utf-8"),
        "show": shown,
        "report": capsys.readouterr().out,
    }
    line = next(row for row in shown.splitlines() if "chat gpt-4o-mini" in row)
    assert re.search(r"LLM .* gpt-4o-mini \d+→\d+ tokens  \$", line)  # model, tokens and cost, per call
    assert "LLM total: 2 calls" in shown
    for where, text in outputs.items():
        for fragment in (KEY_FRAGMENT, MAIL_FRAGMENT, PASSWORD_FRAGMENT):
            assert fragment not in text, f"{fragment} in the {where}"
    second = _chats(load_spans(path))[1]
    sent = str(second.attributes["gen_ai.input.messages"])
    assert sent.count("[REDACTED:") >= 3  # prompt, tool arguments (as the model sent them), tool result
    assert "database at" in sent  # the content is there, only the secrets are not


def _content_keys(spans: list[SpanRecord]) -> set[str]:
    content = ("gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.definitions")
    content += ("gen_ai.system_instructions", "input.value", "output.value")
    return {key for s in spans for key in s.attributes if key in content or "arguments" in key}


@pytest.mark.parametrize("how", ["configure", "instrument"])
def test_with_capture_off_no_span_has_content(server: LLMServer, how: str) -> None:
    tracesim.instrument_litellm(capture=False if how == "instrument" else None)
    settings = {"capture": False} if how == "configure" else {}
    with capture_spans(**settings) as captured:
        weather_agent_for(server)(QUESTION)
        spans = captured.spans
    chats = _chats(spans)
    assert len(chats) == 2
    assert chats[0].attributes["gen_ai.usage.output_tokens"] > 0  # the rest is recorded
    if how == "configure":
        assert _content_keys(spans) == set()
    else:  # off for LiteLLM's spans only: the traced functions still record theirs
        assert _content_keys(chats) == set()
        assert "output.value" in _one(spans, "weather_agent").attributes


@pytest.mark.parametrize("usage", [True, False], ids=["include_usage", "no_usage"])
def test_streams_sync_and_async_are_spans_that_end_with_the_stream(server: LLMServer, usage: bool) -> None:
    server.policy = None
    server.judge = lambda request: "Warsaw, in 1867."
    options: dict[str, Any] = {"stream": True}
    if usage:
        options["stream_options"] = {"include_usage": True}
    tracesim.instrument_litellm()

    async def read_async() -> str:
        stream = await litellm.acompletion(
            model=MODEL, api_base=server.base_url, api_key="test", max_retries=0, messages=MESSAGES, **options
        )
        return "".join([c.choices[0].delta.content or "" async for c in stream if c.choices])

    with capture_spans() as captured:
        stream = call(server, MESSAGES, **options)
        assert captured.spans == []  # open until the caller has read the stream
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "Warsaw, in 1867."
        assert asyncio.run(read_async()) == "Warsaw, in 1867."
        spans = captured.spans
    assert [s.name for s in spans] == ["chat gpt-4o-mini", "chat gpt-4o-mini"]
    for span in spans:
        assert span.attributes["gen_ai.request.stream"] is True
        assert span.attributes["gen_ai.response.finish_reasons"] == ["stop"]
        assert "Warsaw, in 1867." in str(span.attributes["gen_ai.output.messages"])
        if usage:
            assert span.attributes["gen_ai.usage.output_tokens"] == 3
            assert span.attributes["llm.cost.total"] > 0
        else:  # the provider sent no usage: none is made up
            assert "gen_ai.usage.output_tokens" not in span.attributes


def test_a_streamed_tool_call_is_in_the_output(server: LLMServer) -> None:
    tracesim.instrument_litellm()
    with capture_spans() as captured:
        stream = call(server, MESSAGES, tools=TOOLS, stream=True)
        chunks = list(stream)
        (span,) = captured.spans
    (sent_id,) = [
        c.choices[0].delta.tool_calls[0].id for c in chunks if c.choices and c.choices[0].delta.tool_calls
    ]
    assert span.attributes["gen_ai.response.finish_reasons"] == ["tool_calls"]
    (message,) = json.loads(str(span.attributes["gen_ai.output.messages"]))
    assert message["parts"] == [
        {"type": "tool_call", "name": "get_weather", "id": sent_id, "arguments": {"city": "Paris"}}
    ]


def test_a_429_is_an_error_span_and_litellms_exception_reaches_the_caller(server: LLMServer) -> None:
    server.script(CHAT, Reply.status(429))
    tracesim.instrument_litellm()
    with capture_spans() as captured:
        with pytest.raises(litellm.RateLimitError) as raised:
            call(server, MESSAGES)
        (span,) = captured.otel_spans
    assert "429" in str(raised.value)
    assert span.status.status_code.name == "ERROR"
    assert span.attributes is not None
    assert span.attributes["error.type"] == "litellm.exceptions.RateLimitError"
    assert server.count(CHAT) == 1


def test_an_async_call_is_a_span_under_its_caller(server: LLMServer) -> None:
    server.policy = None
    server.judge = lambda request: "Warsaw."
    tracesim.instrument_litellm()

    @tracesim.trace(kind="agent")
    async def agent(question: str) -> str:
        reply = await litellm.acompletion(
            model=MODEL, api_base=server.base_url, api_key="test", max_retries=0, messages=MESSAGES
        )
        return str(reply.choices[0].message.content)

    with capture_spans() as captured:
        assert asyncio.run(agent("?")) == "Warsaw."
        llm, top = captured.spans
    assert (llm.name, top.name) == ("chat gpt-4o-mini", "agent")
    assert llm.parent_span_id == top.span_id
    assert llm.attributes["gen_ai.usage.output_tokens"] == 1


def test_a_routers_calls_are_spans(server: LLMServer) -> None:
    server.policy = None
    server.judge = lambda request: "Warsaw."
    params = {"model": MODEL, "api_base": server.base_url, "api_key": "test", "max_retries": 0}
    router = litellm.Router(model_list=[{"model_name": "default", "litellm_params": params}])
    tracesim.instrument_litellm()
    with capture_spans() as captured:
        reply = router.completion(model="default", messages=MESSAGES)
        (span,) = captured.spans
    assert reply.choices[0].message.content == "Warsaw."
    assert span.name == "chat gpt-4o-mini"
    assert span.attributes["gen_ai.provider.name"] == "openai"


def test_embeddings_sync_and_async_are_spans_with_model_dimensions_and_tokens(server: LLMServer) -> None:
    tracesim.instrument_litellm()
    options: dict[str, Any] = {"model": "openai/text-embedding-3-small", "api_base": server.base_url}
    options |= {"api_key": "test", "max_retries": 0}
    with capture_spans() as captured:
        assert len(litellm.embedding(input=["sunny in Paris"], **options).data) == 1
        assert len(asyncio.run(litellm.aembedding(input=["rain", "snow"], **options)).data) == 2
        spans = captured.spans
    assert [s.name for s in spans] == ["embeddings text-embedding-3-small"] * 2
    for span, words in zip(spans, (3, 2), strict=True):
        assert span.attributes["gen_ai.provider.name"] == "openai"
        assert span.attributes["gen_ai.embeddings.dimension.count"] == 64  # what the server sends
        assert span.attributes["gen_ai.usage.input_tokens"] == words
        assert span.attributes["openinference.span.kind"] == "EMBEDDING"


def test_after_uninstrument_only_tracesims_own_spans_are_left(server: LLMServer) -> None:
    tracesim.instrument_litellm()
    tracesim.uninstrument_litellm()
    tracesim.uninstrument_litellm()  # off already: nothing to do
    with capture_spans() as captured:
        weather_agent_for(server)(QUESTION)
        assert [s.name for s in captured.spans] == ["get_weather", "weather_agent"]
    assert tracesim.instrument_litellm() is True  # and on again
    with capture_spans() as captured:
        call(server, MESSAGES)
        assert len(captured.spans) == 1


def test_a_name_imported_before_instrumenting_is_not_traced_one_imported_after_is(server: LLMServer) -> None:
    """The documented limit of patching the module: ``from litellm import completion`` keeps what it found."""
    before = litellm.completion
    tracesim.instrument_litellm()
    after = litellm.completion
    with capture_spans() as captured:
        for function in (before, after):
            function(model=MODEL, api_base=server.base_url, api_key="test", max_retries=0, messages=MESSAGES)
        assert len(captured.spans) == 1
    assert after.__wrapped__ is before  # the wrapper keeps LiteLLM's signature and docs
    assert after.__doc__ == before.__doc__


def test_the_missing_extra_is_named(run_python: Any, tmp_path: Path) -> None:
    code = (
        "import sys\nsys.modules['litellm'] = None\n"
        "import tracesim\n"
        "try:\n    tracesim.instrument_litellm()\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    done = run_python(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "MissingIntegrationError" in done.stdout
    assert "pip install 'tracesim[litellm]'" in done.stdout
