"""SemanticSimilarity over real HTTP: the real openai client against the scripted local server."""

from __future__ import annotations

import asyncio
import math

import numpy as np
import pytest
from llm_server import EMBEDDINGS, LLMServer, Reply

import tracesim
from tracesim.evaluators import SemanticSimilarity, from_config
from tracesim.testing import capture_spans

QUESTION = "Where was Marie Curie born?"
GOLDEN = "Marie Curie was born in Warsaw, Poland."


def semantic(server: LLMServer, **options: object) -> SemanticSimilarity:
    return SemanticSimilarity(base_url=server.base_url, api_key="test-key", **options)  # type: ignore[arg-type]


def numpy_cosine(a: str, b: str) -> float:
    x, y = np.array(LLMServer.vector(a)), np.array(LLMServer.vector(b))
    return float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y)))


def test_the_score_is_the_cosine_of_the_servers_vectors_both_texts_in_one_request(server: LLMServer) -> None:
    result = semantic(server).evaluate("Curie was born in Warsaw.", GOLDEN)
    assert result.status == "ok", result.error
    assert result.score == pytest.approx(numpy_cosine("Curie was born in Warsaw.", GOLDEN), abs=1e-6)
    assert result.passed is None  # no threshold by default
    assert server.count(EMBEDDINGS) == 1
    assert server.requests[0].body is not None
    assert server.requests[0].body["input"] == ["Curie was born in Warsaw.", GOLDEN]
    assert server.requests[0].body["model"] == "text-embedding-3-small"
    assert result.details["model"] == "text-embedding-3-small"
    assert result.details["usage"]["total_tokens"] > 0


def test_texts_sent_to_the_embedding_server_are_redacted(server: LLMServer) -> None:
    result = semantic(server).evaluate("Write to marie.curie@sorbonne.fr today.", GOLDEN)
    assert result.status == "ok", result.error
    assert server.requests[0].body is not None
    assert server.requests[0].body["input"] == ["Write to [REDACTED:email] today.", GOLDEN]


def test_a_golden_answer_is_embedded_once_over_100_calls(server: LLMServer) -> None:
    evaluator = semantic(server, threshold=0.5)
    for i in range(100):
        assert evaluator.evaluate(f"answer number {i} about Warsaw", GOLDEN).status == "ok"
    inputs = [text for record in server.requests for text in (record.body or {}).get("input", [])]
    assert inputs.count(GOLDEN) == 1
    assert server.count(EMBEDDINGS) == 100  # one request per call: the new output only, after the first


def test_identical_and_empty_texts_need_no_request(server: LLMServer) -> None:
    evaluator = semantic(server)
    assert evaluator.evaluate(GOLDEN, GOLDEN).score == 1.0
    assert evaluator.evaluate("", GOLDEN).score == 0.0
    assert evaluator.evaluate("anything", None).status == "skipped"
    assert server.count() == 0


def test_a_threshold_gives_pass_and_fail(server: LLMServer) -> None:
    evaluator = from_config(
        {"type": "semantic", "threshold": 0.5, "base_url": server.base_url, "api_key": "k"}
    )
    assert evaluator.evaluate("Marie Curie was born in Warsaw.", GOLDEN).label == "pass"
    assert evaluator.evaluate("Bananas are yellow fruit.", GOLDEN).label == "fail"


def test_429_with_retry_after_then_success_is_one_good_result(server: LLMServer) -> None:
    server.script(EMBEDDINGS, Reply.status(429, retry_after=0.3))
    result = semantic(server).evaluate("born in Warsaw", GOLDEN)
    assert result.status == "ok", result.error
    assert result.details["retries"] == 1
    assert result.details["requests"] == 2
    first, second = server.requests
    assert second.at - first.at >= 0.3  # Retry-After was honoured (a lower bound, not a speed claim)


@pytest.mark.parametrize(
    ("reply", "error_type"),
    [
        (Reply.status(500), "server_error"),
        (Reply.garbage(), "bad_response"),
        (Reply.status(401), "auth"),
        (Reply.status(400), "bad_request"),
    ],
)
def test_failures_are_error_results_never_scores(server: LLMServer, reply: Reply, error_type: str) -> None:
    server.script(EMBEDDINGS, *[reply] * 10)
    result = semantic(server, max_retries=2).evaluate("born in Warsaw", GOLDEN)
    assert result.status == "error"
    assert result.error_type == error_type
    assert result.score is None
    retried = error_type in ("server_error", "bad_response")
    assert server.count(EMBEDDINGS) == (3 if retried else 1)


def test_a_hanging_server_gives_a_timeout_result(server: LLMServer) -> None:
    server.script(EMBEDDINGS, Reply.hang())
    result = semantic(server, timeout_s=0.5).evaluate("born in Warsaw", GOLDEN)
    assert result.status == "error"
    assert result.error_type == "timeout"


def test_a_callable_backend_sync_and_async() -> None:
    def letters(texts: list[str]) -> list[list[float]]:
        return [[t.count("a"), t.count("b")] for t in texts]

    async def async_letters(texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return letters(texts)

    sync, asynchronous = SemanticSimilarity(backend=letters), SemanticSimilarity(backend=async_letters)
    assert not sync.is_async
    assert asynchronous.is_async
    expected = 3 / math.sqrt(10)  # (2,1)·(1,1) / (|(2,1)| |(1,1)|)
    assert sync.evaluate("aab", "ab").score == pytest.approx(expected)
    assert asynchronous.evaluate("aab", "ab").score == pytest.approx(expected)
    broken = SemanticSimilarity(backend=lambda texts: [[0.0, 0.0]] * len(texts)).evaluate("a", "b")
    assert broken.status == "error"
    assert "all zeros" in (broken.error or "")


def test_scored_online_on_the_span(server: LLMServer) -> None:
    with capture_spans(scoring_mode="background", batch_export=False) as captured:

        @tracesim.trace(evaluators=[semantic(server, threshold=0.5)], expected=GOLDEN)
        def answer(question: str) -> str:
            return "Marie Curie was born in Warsaw."

        assert answer(QUESTION) == "Marie Curie was born in Warsaw."
        assert tracesim.force_flush()
        span = captured.by_name("answer")
    assert span.attributes["tracesim.eval.semantic.label"] == "pass"
    score = span.attributes["tracesim.eval.semantic.score"]
    assert score == pytest.approx(numpy_cosine("Marie Curie was born in Warsaw.", GOLDEN), abs=1e-6)


def test_the_local_backend_scores_offline_through_the_evaluator() -> None:
    pytest.importorskip("wordllama", reason="the 'embeddings' extra (wordllama) is not installed")
    from tracesim.evaluators._wordllama import local_embedder

    evaluator = from_config({"type": "semantic", "backend": "local", "threshold": 0.5})
    assert not evaluator.is_async  # a local model runs on the CPU workers, not the network loop
    answer, golden = "Marie Curie was born in Warsaw.", "Curie's birthplace was Warsaw, Poland."
    result = evaluator.evaluate(answer, golden)
    assert result.status == "ok", result.error
    vectors = local_embedder()([answer, golden]).astype(float)
    assert result.score == pytest.approx(float(vectors[0] @ vectors[1]), abs=1e-5)  # unit rows: the dot
    assert result.details["model"] == "wordllama/l2_supercat@256"
    unrelated = evaluator.evaluate("Bananas are rich in potassium.", golden)
    assert unrelated.score is not None
    assert result.score > unrelated.score
    assert evaluator.evaluate("another answer", golden).details["embedded"] == 1  # the golden is cached


def test_long_texts_are_cut_before_they_are_sent(server: LLMServer) -> None:
    result = semantic(server, max_chars=12).evaluate("x" * 100_000, GOLDEN)
    assert result.details["truncated_to"] == 12
    assert server.requests[0].body is not None
    assert server.requests[0].body["input"] == ["x" * 12, GOLDEN[:12]]
