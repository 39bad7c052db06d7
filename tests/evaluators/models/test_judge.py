"""LLM judges over real HTTP: the real openai client against the scripted local server."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from llm_server import CHAT, LLMServer, Reply

import tracesim
from tracesim.evaluators import LLMJudge, LLMSimilarity, from_config
from tracesim.testing import capture_spans

QUESTION = "Where was Marie Curie born?"
GOLDEN = "Marie Curie was born in Warsaw, Poland."


def similarity(server: LLMServer, **options: Any) -> LLMSimilarity:
    return LLMSimilarity(base_url=server.base_url, api_key="test-key", model="judge-model", **options)


def user_prompt(record: Any) -> str:
    return str(record.body["messages"][1]["content"])


def test_similarity_sends_question_response_reference_at_temperature_0(server: LLMServer) -> None:
    server.judge = lambda request: '{"reason": "Same city and country.", "score": 4}'
    result = similarity(server).evaluate("Warsaw.", GOLDEN, input=QUESTION)
    assert result.status == "ok", result.error
    assert (result.score, result.passed, result.label) == (4.0, True, "pass")
    assert result.explanation == "Same city and country."
    assert result.threshold == 3.0
    (record,) = server.requests
    assert record.body is not None
    assert record.body["temperature"] == 0.0
    assert record.body["model"] == "judge-model"
    assert record.body["response_format"]["type"] == "json_schema"
    prompt = user_prompt(record)
    for text in (QUESTION, "Warsaw.", GOLDEN):
        assert text in prompt
    assert result.details["usage"]["total_tokens"] > 0
    assert result.details["structured"] == "json_schema"


def test_a_low_score_fails(server: LLMServer) -> None:
    server.judge = lambda request: '```json\n{"reason": "Different city.", "score": 1}\n```'
    result = similarity(server).evaluate("Paris.", GOLDEN, input=QUESTION)
    assert (result.score, result.passed, result.label) == (1.0, False, "fail")


@pytest.mark.parametrize(
    "answer",
    ["I would rather not say.", '{"score": 9, "reason": "out of range"}', '{"score": "high"}', ""],
)
def test_an_unparseable_answer_is_an_error_with_the_raw_text_kept(server: LLMServer, answer: str) -> None:
    server.judge = lambda request: answer
    result = similarity(server).evaluate("Paris.", GOLDEN, input=QUESTION)
    assert result.status == "error"
    assert result.error_type == "unparseable"
    assert result.score is None
    assert result.details["raw"] == answer


def test_a_server_without_structured_output_is_asked_more_simply(server: LLMServer) -> None:
    refusal = Reply.status(400, body={"error": {"message": "response_format json_schema is not supported"}})
    server.script(CHAT, refusal)
    judge = similarity(server)
    result = judge.evaluate("Warsaw.", GOLDEN, input=QUESTION)
    assert result.status == "ok", result.error
    assert result.details["structured"] == "json_object"
    assert [r.body["response_format"]["type"] for r in server.requests if r.body] == [
        "json_schema",
        "json_object",
    ]
    judge.evaluate("Warsaw!", GOLDEN, input=QUESTION)  # remembered: asked the simpler way at once
    assert server.requests[-1].body is not None
    assert server.requests[-1].body["response_format"]["type"] == "json_object"


def test_a_pass_fail_rubric_without_expected_output(server: LLMServer) -> None:
    server.judge = lambda request: '{"reason": "It declines and offers help.", "score": true}'
    judge = LLMJudge(
        "Does the response decline politely?",
        scale="pass_fail",
        include_input=False,
        base_url=server.base_url,
        api_key="k",
    )
    result = judge.evaluate("Sorry, I cannot share that. Can I help otherwise?", None)
    assert (result.score, result.label) == (1.0, "pass")
    prompt = user_prompt(server.requests[0])
    assert "decline politely" in prompt
    assert "<reference>" not in prompt
    assert "<question>" not in prompt


def test_429_with_retry_after_then_success(server: LLMServer) -> None:
    server.script(CHAT, Reply.status(429, retry_after=0.2), Reply.status(503))
    result = similarity(server).evaluate("Warsaw.", GOLDEN, input=QUESTION)
    assert result.status == "ok", result.error
    assert result.details["retries"] == 2
    assert server.count(CHAT) == 3


def test_the_judge_lands_on_the_span_online_and_the_span_ends_on_time(server: LLMServer) -> None:
    server.judge = lambda request: '{"reason": "Same answer.", "score": 5}'
    with capture_spans(scoring_mode="background", batch_export=False) as captured:

        @tracesim.trace(evaluators=[similarity(server)], expected=GOLDEN)
        def answer(question: str) -> str:
            return "Marie Curie was born in Warsaw."

        answer(QUESTION)
        assert tracesim.force_flush()
        span = captured.by_name("answer")
    events = [e for e in span.events if e.name == "gen_ai.evaluation.result"]
    (event,) = events
    assert event.attributes["gen_ai.evaluation.score.value"] == 5.0
    assert event.attributes["gen_ai.evaluation.score.label"] == "pass"
    assert event.attributes["gen_ai.evaluation.explanation"] == "Same answer."
    assert json.loads(str(event.attributes["tracesim.evaluation.details"]))["usage"]["total_tokens"] > 0
    assert QUESTION in user_prompt(server.requests[0])  # the traced call's input is the question


def test_a_hanging_judge_gives_a_timeout_and_the_span_keeps_its_end_time(server: LLMServer) -> None:
    server.script(CHAT, Reply.hang())
    with capture_spans(scoring_mode="background", batch_export=False) as captured:

        @tracesim.trace(evaluators=[similarity(server, timeout_s=0.5)], expected=GOLDEN)
        def answer(question: str) -> str:
            return "Warsaw"

        answer(QUESTION)
        assert tracesim.force_flush()
        span = captured.by_name("answer")
    assert "tracesim.eval.llm_similarity.score" not in span.attributes  # no made-up score
    (event,) = [e for e in span.events if e.name == "gen_ai.evaluation.result"]
    assert event.attributes["error.type"] == "timeout"
    assert span.duration_s < 0.5  # ended at the call's own end, not when the judge timed out


def test_200_concurrent_scored_calls_never_exceed_max_concurrency(server: LLMServer) -> None:
    server.delay_s = 0.05
    with capture_spans(scoring_mode="background", batch_export=False) as captured:

        @tracesim.trace(evaluators=[similarity(server, max_concurrency=8)], expected=GOLDEN)
        async def answer(question: str) -> str:
            return "Warsaw"

        async def main() -> None:
            await asyncio.gather(*(answer(f"{QUESTION} {i}") for i in range(200)))

        asyncio.run(main())
        assert tracesim.force_flush(60)
        spans = captured.named("answer")
    assert len(spans) == 200
    assert server.count(CHAT) == 200
    assert 1 < server.max_in_flight <= 8


def test_no_model_call_shows_up_as_a_span_even_with_httpx_instrumented(server: LLMServer) -> None:
    instrumentation = pytest.importorskip(
        "opentelemetry.instrumentation.httpx", reason="opentelemetry-instrumentation-httpx (test extra)"
    )
    instrumentor = instrumentation.HTTPXClientInstrumentor()
    instrumentor.instrument()
    try:
        with capture_spans(scoring_mode="background", batch_export=False) as captured:

            @tracesim.trace(evaluators=[similarity(server)], expected=GOLDEN)
            def answer(question: str) -> str:
                return "Warsaw"

            answer(QUESTION)
            assert tracesim.force_flush()
            names = [span.name for span in captured.spans]
    finally:
        instrumentor.uninstrument()
    assert server.count(CHAT) == 1
    assert names == ["answer"]


def test_a_span_started_inside_a_model_call_is_not_exported() -> None:
    """An instrumentation that ignores the suppression key: tracesim's pipeline still drops its span."""
    from opentelemetry import trace as otel_trace

    from tracesim._own_model_calls import detach, untraced

    with capture_spans() as captured:
        tracer = otel_trace.get_tracer("ignores-suppression")
        token = untraced()
        try:
            with tracer.start_as_current_span("POST /v1/chat/completions"):
                pass
        finally:
            detach(token)
        with tracer.start_as_current_span("user span"):
            pass
        names = [span.name for span in captured.spans]
    assert names == ["user span"]


def test_the_disk_cache_answers_a_second_run_with_no_request(server: LLMServer, tmp_path: Path) -> None:
    config = {
        "type": "llm_similarity",
        "base_url": server.base_url,
        "api_key": "k",
        "cache_dir": str(tmp_path),
    }
    first = [from_config(config).evaluate(f"Warsaw {i}", GOLDEN, input=QUESTION) for i in range(5)]
    assert server.count(CHAT) == 5
    second = [from_config(config).evaluate(f"Warsaw {i}", GOLDEN, input=QUESTION) for i in range(5)]
    assert server.count(CHAT) == 5  # nothing new was sent
    assert [r.score for r in second] == [r.score for r in first]
    assert all(r.details["cached"] for r in second)


def test_tracesim_eval_judges_rows_concurrently_shows_tokens_and_a_second_run_hits_the_cache(
    server: LLMServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracesim.cli import main

    server.delay_s = 0.05
    rows = [{"input": f"{QUESTION} ({i})", "output": f"Warsaw {i}", "expected": GOLDEN} for i in range(24)]
    data = tmp_path / "answers.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    spec = f"llm_similarity:base_url={server.base_url},api_key=k,model=m,cache_dir={tmp_path / 'cache'}"
    args = ["eval", str(data), "-e", spec, "--no-progress", "--workers", "1"]
    assert main(args) == 0
    first = capsys.readouterr().out
    assert server.count(CHAT) == 24
    assert server.max_in_flight > 1  # rows were judged concurrently, not one after another
    assert "tokens" in first
    lines = [json.loads(line) for line in (tmp_path / "answers.scores.jsonl").read_text().splitlines()]
    assert {line["results"]["llm_similarity"]["score"] for line in lines} == {5.0}
    assert main(args) == 0
    second = capsys.readouterr().out
    assert server.count(CHAT) == 24  # the second run sent nothing: every answer came from the cache
    assert "tokens" not in second  # nothing was spent


def test_long_texts_are_cut_before_they_are_shown_to_the_judge(server: LLMServer) -> None:
    result = similarity(server, max_chars=50).evaluate("y" * 1_000_000, GOLDEN, input=QUESTION)
    assert result.status == "ok", result.error
    assert result.details["truncated_to"] == 50
    prompt = user_prompt(server.requests[0])
    # one 1,000,000-character token, so no secret: cut short of the limit by the margin a cut
    # keeps from a token it could be cutting through (tracesim._redact.safe_cut)
    assert "y" * 25 in prompt
    assert "y" * 51 not in prompt


def test_what_the_judge_is_shown_is_redacted_and_no_cut_leaves_part_of_a_secret(server: LLMServer) -> None:
    key = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"
    output = f"Use {key} to call marie.curie@sorbonne.fr about Warsaw."
    result = similarity(server, max_chars=60).evaluate(output, f"Write to marie.curie@sorbonne.fr {key}")
    assert result.status == "ok", result.error
    prompt = user_prompt(server.requests[0])
    for secret in ("Abc123Def456", "marie.curie", "sorbonne"):
        assert secret not in prompt
    assert "[REDACTED:" in prompt


def test_no_model_call_shows_up_as_a_span_with_the_openai_client_instrumented(server: LLMServer) -> None:
    """The official OpenTelemetry instrumentation of the openai client, in the same process."""
    pytest.importorskip(
        "opentelemetry.instrumentation.genai.openai",
        reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
    )
    import openai

    from tracesim.integrations import uninstrument_openai

    tracesim.instrument_openai()
    try:
        with capture_spans(scoring_mode="background", batch_export=False) as captured:

            @tracesim.trace(evaluators=[similarity(server)], expected=GOLDEN)
            def answer(question: str) -> str:
                client = openai.OpenAI(base_url=server.base_url, api_key="k", max_retries=0)
                reply = client.chat.completions.create(
                    model="agent-model", messages=[{"role": "user", "content": question}]
                )
                return str(reply.choices[0].message.content)

            answer(QUESTION)
            assert tracesim.force_flush()
            names = sorted(span.name for span in captured.spans)
    finally:
        uninstrument_openai()
    assert server.count(CHAT) == 2  # the agent's own call and the judge's
    # the agent's call is traced by the instrumentation, the judge's is not
    assert names == ["answer", "chat agent-model"]
