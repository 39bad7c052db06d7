"""The scripted model server, driven through the real ``openai`` client (sync and async) over HTTP.

What the client raises for each scripted failure is pinned here: model-backed evaluators must
handle exactly these (a body that is not JSON surfaces as `json.JSONDecodeError`, not an
`openai.APIError`).
"""

from __future__ import annotations

import asyncio
import base64
import json
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

import anthropic
import numpy as np
import openai
import pytest
from llm_server import CHAT, DEFAULT_JUDGEMENT, EMBEDDINGS, MESSAGES, LLMServer, Reply
from llm_server import llm_server as _llm_server  # noqa: F401  (the fixture, registered as `llm_server`)
from openai.types.chat import ChatCompletionFunctionToolParam
from openai.types.shared_params import ResponseFormatJSONObject, ResponseFormatJSONSchema

RunPython = Callable[..., "subprocess.CompletedProcess[str]"]
TEXTS = ["The cat sat on the mat", "the cat sat on a mat!", "Quarterly revenue grew by 4%", ""]
GRADE_TOOL: ChatCompletionFunctionToolParam = {
    "type": "function",
    "function": {
        "name": "grade",
        "parameters": {"type": "object", "properties": {"score": {"type": "integer"}}},
    },
}


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    # httpx honours HTTP(S)_PROXY: on a machine that sets one, loopback calls must not go through it
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")


def _cos(a: object, b: object) -> float:
    x, y = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(x @ y / (np.linalg.norm(x) * np.linalg.norm(y)))


def _async_client(server: LLMServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)


@pytest.fixture
def client(llm_server: LLMServer) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0) as c:
        yield c


# -- embeddings ---------------------------------------------------------------------------------


def test_batch_embeddings_are_the_served_vectors(llm_server: LLMServer, client: openai.OpenAI) -> None:
    answer = client.embeddings.create(model="embedder", input=TEXTS, encoding_format="float")

    got = [d.embedding for d in answer.data]
    want = [LLMServer.vector(t) for t in TEXTS]
    assert [d.index for d in answer.data] == [0, 1, 2, 3]
    assert got == want  # floats survive JSON exactly
    assert _cos(got[0], got[1]) == pytest.approx(_cos(want[0], want[1]))
    assert _cos(got[0], got[1]) > _cos(got[0], got[2])  # shared words: closer
    assert got[3] == [1.0] + [0.0] * 63  # no words: still a unit vector
    assert answer.usage.prompt_tokens == answer.usage.total_tokens == 6 + 6 + 5 + 0
    assert answer.model == "scripted-model"
    (seen,) = llm_server.requests
    assert seen.path == EMBEDDINGS
    assert seen.body == {"model": "embedder", "input": TEXTS, "encoding_format": "float"}
    assert seen.headers["authorization"] == "Bearer test"


def test_the_client_asks_for_base64_by_default_and_decodes_it(
    llm_server: LLMServer,
    client: openai.OpenAI,
) -> None:
    implicit = client.embeddings.create(model="m", input="The cat sat").data[0].embedding
    explicit = client.embeddings.create(model="m", input="The cat sat", encoding_format="base64").data[0]
    short = client.embeddings.create(model="m", input="The cat sat", dimensions=16, encoding_format="float")

    assert [r.body["encoding_format"] for r in llm_server.requests if r.body] == ["base64", "base64", "float"]
    assert implicit == pytest.approx(LLMServer.vector("The cat sat"), abs=1e-6)  # float32 on the wire
    encoded = cast(object, explicit.embedding)
    assert isinstance(encoded, str)  # asked for explicitly: the client leaves it encoded
    decoded = np.frombuffer(base64.b64decode(encoded), dtype="<f4")
    assert decoded.tolist() == pytest.approx(LLMServer.vector("The cat sat"), abs=1e-6)
    assert short.data[0].embedding == pytest.approx(LLMServer.vector("The cat sat", 16))


def test_vectors_are_unit_length_and_ignore_case_and_punctuation() -> None:
    for text in TEXTS:
        assert float(np.linalg.norm(LLMServer.vector(text, 32))) == pytest.approx(1.0)
    assert LLMServer.vector("Cat, MAT!") == LLMServer.vector("cat mat")
    assert LLMServer.vector("cat mat") != LLMServer.vector("cat hat")


def test_vectors_are_the_same_in_another_process(run_python: RunPython, tmp_path: Path) -> None:
    code = (
        f"import json, sys; sys.path.insert(0, {str(Path(__file__).parent)!r})\n"
        "from llm_server import LLMServer\n"
        "print(json.dumps(LLMServer.vector('Where was Marie Curie born?')))\n"
    )
    done = run_python(
        code, cwd=tmp_path, env={"PYTHONHASHSEED": "12345"}
    )  # str hashes differ: blake2b doesn't
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == LLMServer.vector("Where was Marie Curie born?")


# -- chat completions ---------------------------------------------------------------------------


JsonFormat = ResponseFormatJSONObject | ResponseFormatJSONSchema
JSON_OBJECT: ResponseFormatJSONObject = {"type": "json_object"}
JSON_SCHEMA: ResponseFormatJSONSchema = {
    "type": "json_schema",
    "json_schema": {"name": "grade", "schema": {"type": "object"}, "strict": True},
}


@pytest.mark.parametrize("response_format", [JSON_OBJECT, JSON_SCHEMA], ids=["json_object", "json_schema"])
def test_chat_answers_with_the_judge(
    llm_server: LLMServer,
    client: openai.OpenAI,
    response_format: ResponseFormatJSONObject | ResponseFormatJSONSchema,
) -> None:
    answer = client.chat.completions.create(
        model="judge",
        messages=[
            {"role": "system", "content": "Grade it."},
            {"role": "user", "content": "Paris is in France"},
        ],
        temperature=0,
        response_format=response_format,
    )

    assert answer.object == "chat.completion"
    assert answer.choices[0].message.role == "assistant"
    assert answer.choices[0].message.content == DEFAULT_JUDGEMENT
    assert answer.choices[0].finish_reason == "stop"
    assert answer.usage is not None
    usage = answer.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (6, 5, 11)
    (seen,) = llm_server.requests
    assert seen.path == CHAT
    assert seen.body is not None
    assert seen.body["temperature"] == 0
    assert seen.body["response_format"] == response_format


def test_scripted_content_comes_first_then_the_judge(llm_server: LLMServer, client: openai.OpenAI) -> None:
    llm_server.judge = lambda request: json.dumps({"score": len(request["messages"])})
    llm_server.script(CHAT, Reply.content("not json at all"))
    messages: list[dict[str, object]] = [{"role": "user", "content": [{"type": "text", "text": "two words"}]}]

    first = client.chat.completions.create(model="judge", messages=messages)  # type: ignore[arg-type]
    second = client.chat.completions.create(model="judge", messages=messages)  # type: ignore[arg-type]

    assert first.choices[0].message.content == "not json at all"
    assert second.choices[0].message.content == '{"score": 1}'
    assert first.usage is not None
    assert first.usage.prompt_tokens == 2  # text parts count too


def test_a_forced_function_gets_a_tool_call(client: openai.OpenAI) -> None:
    answer = client.chat.completions.create(
        model="judge",
        messages=[{"role": "user", "content": "grade this"}],
        tools=[GRADE_TOOL],
        tool_choice={"type": "function", "function": {"name": "grade"}},
    )

    message = answer.choices[0].message
    assert message.content is None
    assert answer.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None
    (call,) = message.tool_calls
    assert call.type == "function"
    assert call.function.name == "grade"
    assert json.loads(call.function.arguments) == {"score": 5, "reason": "scripted default"}


def test_a_stream_sends_the_words_then_the_usage(llm_server: LLMServer, client: openai.OpenAI) -> None:
    llm_server.judge = lambda request: "Marie Curie was born in Warsaw."
    messages = [{"role": "user", "content": "Where was she born?"}]
    stream = client.chat.completions.create(
        model="m",
        messages=messages,
        stream=True,
        stream_options={"include_usage": True},  # type: ignore[arg-type]
    )
    chunks = list(stream)
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Marie Curie was born in Warsaw."
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.completion_tokens == 6
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"


def test_unknown_paths_are_refused(llm_server: LLMServer, client: openai.OpenAI) -> None:
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-x")
    assert [r.path for r in llm_server.requests] == ["/v1/models/gpt-x"]
    with pytest.raises(ValueError, match="must start with '/'"):
        llm_server.script("v1/embeddings", Reply.ok())


# -- scripted failures ----------------------------------------------------------------------------


def test_429_carries_retry_after_to_the_client(llm_server: LLMServer, client: openai.OpenAI) -> None:
    llm_server.script(EMBEDDINGS, Reply.status(429, retry_after=0.5))

    with pytest.raises(openai.RateLimitError) as caught:
        client.embeddings.create(model="m", input="x")

    assert caught.value.response.headers["retry-after"] == "0.5"
    assert caught.value.response.headers["retry-after-ms"] == "500"
    assert caught.value.code == "rate_limit_exceeded"
    assert client.embeddings.create(model="m", input="x").data  # the script is used up: normal again


def test_the_client_retries_through_a_script(llm_server: LLMServer) -> None:
    llm_server.script(CHAT, Reply.status(429, retry_after=0.01), Reply.status(503, retry_after=0.01))
    with openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=2) as client:
        answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == DEFAULT_JUDGEMENT
    assert llm_server.count(CHAT) == 3
    assert [r.headers["x-stainless-retry-count"] for r in llm_server.requests] == ["0", "1", "2"]


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (Reply.status(400), openai.BadRequestError),
        (Reply.status(401), openai.AuthenticationError),
        (Reply.status(500), openai.InternalServerError),
        (Reply.status(503), openai.InternalServerError),
        (Reply.drop(), openai.APIConnectionError),
    ],
)
def test_statuses_map_to_openai_errors(
    llm_server: LLMServer,
    client: openai.OpenAI,
    reply: Reply,
    error: type[Exception],
) -> None:
    llm_server.script(EMBEDDINGS, reply)
    with pytest.raises(error):
        client.embeddings.create(model="m", input="x")


def test_a_custom_error_body_reaches_the_client(llm_server: LLMServer, client: openai.OpenAI) -> None:
    body = {
        "error": {"message": "too long", "type": "invalid_request_error", "code": "context_length_exceeded"}
    }
    llm_server.script(CHAT, Reply.status(400, body=body))
    with pytest.raises(openai.BadRequestError, match="too long") as caught:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert caught.value.code == "context_length_exceeded"


def test_a_body_that_is_not_json_raises_json_decode_error(
    llm_server: LLMServer, client: openai.OpenAI
) -> None:
    # Not an openai.APIError: callers must catch ValueError as well.
    llm_server.script(EMBEDDINGS, Reply.garbage())
    llm_server.script(CHAT, Reply.garbage())
    with pytest.raises(json.JSONDecodeError):
        client.embeddings.create(model="m", input="x")

    async def chat() -> None:
        async with _async_client(llm_server) as aclient:
            await aclient.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])

    with pytest.raises(json.JSONDecodeError):
        asyncio.run(chat())


def test_a_truncated_body_raises_connection_error(llm_server: LLMServer, client: openai.OpenAI) -> None:
    llm_server.script(EMBEDDINGS, Reply.truncated(), Reply.truncated())
    with pytest.raises(openai.APIConnectionError) as caught:
        client.embeddings.create(model="m", input="x")
    assert type(caught.value.__cause__).__name__ == "RemoteProtocolError"  # from the client's httpx

    async def embed() -> None:
        async with _async_client(llm_server) as aclient:
            await aclient.embeddings.create(model="m", input="x")

    with pytest.raises(openai.APIConnectionError):
        asyncio.run(embed())
    assert client.embeddings.create(model="m", input="x").data  # a new connection works


@pytest.mark.parametrize("reply", [Reply.slow(60), Reply.hang()], ids=["slow", "hang"])
def test_a_client_timeout_raises_and_the_server_lets_go(
    llm_server: LLMServer, client: openai.OpenAI, reply: Reply
) -> None:
    llm_server.script(CHAT, reply, Reply.slow(0.01, then=Reply.content("late")))
    messages: list[dict[str, str]] = [{"role": "user", "content": "hi"}]

    with pytest.raises(openai.APITimeoutError):
        client.with_options(timeout=0.2).chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert llm_server.wait_until(lambda: llm_server.in_flight == 0)  # it saw the client leave

    answer = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
    assert answer.choices[0].message.content == "late"


def test_close_releases_a_hanging_request() -> None:
    server = LLMServer().start()
    server.script(EMBEDDINGS, Reply.hang())
    raised: list[BaseException] = []

    def call() -> None:
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0, timeout=120) as client:
            try:
                client.embeddings.create(model="m", input="x")
            except openai.APIError as exc:
                raised.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert server.wait_until(lambda: server.in_flight == 1)
    closed = threading.Event()

    def close() -> None:
        server.close()
        closed.set()

    threading.Thread(target=close, daemon=True).start()

    assert closed.wait(30), "close() is stuck behind a hanging request"
    caller.join(30)
    assert [type(e) for e in raised] == [openai.APIConnectionError]
    assert server.in_flight == 0
    assert not server.errors


def test_a_bug_in_the_judge_is_recorded_not_printed() -> None:
    with LLMServer() as server, openai.OpenAI(base_url=server.base_url, api_key="t", max_retries=0) as client:
        server.judge = lambda request: str(1 / 0)
        with pytest.raises(openai.APIConnectionError):
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert [type(e) for e in server.errors] == [ZeroDivisionError]


# -- concurrency, keep-alive, reset ---------------------------------------------------------------


def test_unthrottled_requests_are_all_in_flight_at_once(llm_server: LLMServer) -> None:
    llm_server.script(EMBEDDINGS, *[Reply.hold()] * 50)

    async def main() -> list[list[float]]:
        async with _async_client(llm_server) as aclient:
            calls = [
                asyncio.create_task(aclient.embeddings.create(model="m", input=f"text {i}"))
                for i in range(50)
            ]
            assert await asyncio.to_thread(llm_server.wait_until, lambda: llm_server.in_flight == 50)
            llm_server.release()
            return [answer.data[0].embedding for answer in await asyncio.gather(*calls)]

    vectors = asyncio.run(main())
    assert llm_server.max_in_flight == 50
    assert llm_server.in_flight == 0
    np.testing.assert_allclose(vectors, [LLMServer.vector(f"text {i}") for i in range(50)], atol=1e-6)


def test_delay_makes_concurrency_visible(llm_server: LLMServer) -> None:
    llm_server.delay_s = 0.2

    async def main() -> None:
        async with _async_client(llm_server) as aclient:
            await asyncio.gather(*(aclient.embeddings.create(model="m", input="x") for _ in range(50)))

    asyncio.run(main())
    assert llm_server.count(EMBEDDINGS) == 50
    assert llm_server.max_in_flight > 10


def test_a_client_semaphore_of_8_is_exactly_what_the_server_sees(llm_server: LLMServer) -> None:
    llm_server.script(CHAT, *[Reply.hold()] * 50)
    llm_server.delay_s = 0.01
    limit = asyncio.Semaphore(8)

    async def one(aclient: openai.AsyncOpenAI, i: int) -> None:
        async with limit:
            await aclient.chat.completions.create(model="m", messages=[{"role": "user", "content": str(i)}])

    async def main() -> None:
        async with _async_client(llm_server) as aclient:
            calls = asyncio.gather(*(one(aclient, i) for i in range(50)))
            assert await asyncio.to_thread(llm_server.wait_until, lambda: llm_server.in_flight == 8)
            llm_server.release()
            await calls

    asyncio.run(main())
    assert llm_server.count(CHAT) == 50
    assert llm_server.max_in_flight == 8  # reached, and never a request too many


def test_keep_alive_and_reset(llm_server: LLMServer, client: openai.OpenAI) -> None:
    for _ in range(5):
        client.embeddings.create(model="m", input="x")
    assert llm_server.connections == 1  # one connection, kept alive
    at = [r.at for r in llm_server.requests]
    assert at == sorted(at)

    llm_server.script(CHAT, Reply.status(500))
    llm_server.judge = lambda request: "changed"
    llm_server.delay_s = 1.0
    llm_server.reset()

    assert (llm_server.count(), llm_server.max_in_flight, llm_server.connections) == (0, 0, 0)
    answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert answer.choices[0].message.content == DEFAULT_JUDGEMENT
    assert llm_server.count(CHAT) == 1


# -- Anthropic Messages ---------------------------------------------------------------------------


@pytest.fixture
def claude(llm_server: LLMServer) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=llm_server.root_url, api_key="test-key", max_retries=0) as c:
        yield c


def test_anthropic_messages_answer_with_the_judge_and_its_usage(
    llm_server: LLMServer, claude: anthropic.Anthropic
) -> None:
    llm_server.judge = lambda request: "Warsaw, in Poland."
    answer = claude.messages.create(
        model="claude-x",
        max_tokens=64,
        system="Answer briefly.",
        messages=[{"role": "user", "content": "Where was Marie Curie born?"}],
    )

    assert [block.type for block in answer.content] == ["text"]
    assert answer.content[0].type == "text"
    assert answer.content[0].text == "Warsaw, in Poland."
    assert answer.stop_reason == "end_turn"
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (2 + 5, 3)  # the system prompt counts
    (seen,) = llm_server.requests
    assert seen.path == MESSAGES
    assert "test-key" in seen.headers.get("x-api-key", seen.headers.get("authorization", ""))
    assert "anthropic-version" in seen.headers


def test_anthropic_stream_sends_named_events_word_by_word(
    llm_server: LLMServer, claude: anthropic.Anthropic
) -> None:
    llm_server.judge = lambda request: "Marie Curie was born in Warsaw."
    with claude.messages.stream(
        model="claude-x", max_tokens=64, messages=[{"role": "user", "content": "Where?"}]
    ) as stream:
        words = list(stream.text_stream)
        final = stream.get_final_message()

    assert words == ["Marie ", "Curie ", "was ", "born ", "in ", "Warsaw."]
    assert final.usage.output_tokens == 6
    assert final.usage.input_tokens == 1
    assert final.stop_reason == "end_turn"


def test_anthropic_forced_tool_gets_a_tool_use_and_its_result_counts(
    llm_server: LLMServer, claude: anthropic.Anthropic
) -> None:
    llm_server.script(MESSAGES, Reply.content('{"city": "Warsaw"}'))
    tool: anthropic.types.ToolParam = {
        "name": "weather",
        "description": "The weather in a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
    }
    first = claude.messages.create(
        model="claude-x",
        max_tokens=64,
        messages=[{"role": "user", "content": "Weather in Warsaw?"}],
        tools=[tool],
        tool_choice={"type": "tool", "name": "weather"},
    )
    (use,) = first.content
    assert use.type == "tool_use"
    assert (use.name, use.input, first.stop_reason) == ("weather", {"city": "Warsaw"}, "tool_use")

    result: anthropic.types.ToolResultBlockParam = {
        "type": "tool_result",
        "tool_use_id": use.id,
        "content": "sunny and warm",
    }
    second = claude.messages.create(
        model="claude-x",
        max_tokens=64,
        messages=[
            {"role": "user", "content": "Weather in Warsaw?"},
            {"role": "assistant", "content": first.content},
            {"role": "user", "content": [result]},
        ],
    )
    assert second.content[0].type == "text"
    assert second.usage.input_tokens == 3 + 3  # the question and the tool's answer


@pytest.mark.parametrize(
    ("code", "error"),
    [(400, anthropic.BadRequestError), (429, anthropic.RateLimitError), (529, anthropic.InternalServerError)],
)
def test_anthropic_errors_have_anthropics_shape(
    llm_server: LLMServer, claude: anthropic.Anthropic, code: int, error: type[anthropic.APIStatusError]
) -> None:
    llm_server.script(MESSAGES, Reply.status(code))
    with pytest.raises(error) as caught:
        claude.messages.create(model="claude-x", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.status_code == code
    body = cast(dict[str, Any], caught.value.body)
    assert body["type"] == "error"
    assert body["error"]["message"].startswith(f"scripted {code}")


def test_anthropic_async_client_and_a_missing_max_tokens(llm_server: LLMServer) -> None:
    async def main() -> str:
        async with anthropic.AsyncAnthropic(base_url=llm_server.root_url, api_key="k", max_retries=0) as c:
            answer = await c.messages.create(
                model="claude-x", max_tokens=8, messages=[{"role": "user", "content": "hi"}]
            )
            with pytest.raises(anthropic.BadRequestError, match="max_tokens"):
                await c.post(
                    "/v1/messages", body={"model": "m", "messages": []}, cast_to=anthropic.types.Message
                )
        block = answer.content[0]
        return block.text if block.type == "text" else ""

    assert asyncio.run(main()) == DEFAULT_JUDGEMENT
