"""The on-disk model-answer cache: an answer is reused for the same request to the same model only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from llm_server import CHAT, EMBEDDINGS, LLMServer

from tracesim.evaluators import LLMSimilarity, SemanticSimilarity
from tracesim.evaluators._model._caller import _caches


@pytest.fixture(autouse=True)
def _fresh(server: LLMServer) -> Iterator[None]:  # conftest's, and the caches closed after
    server.reset()
    yield
    for cache in _caches.values():
        cache.close()


def test_two_judge_models_sharing_a_cache_each_get_their_own_grade(server: LLMServer, tmp_path: Path) -> None:
    server.judge = lambda request: f'{{"reason": "r", "score": {5 if request["model"] == "strict" else 2}}}'
    strict, lenient = (
        LLMSimilarity(base_url=server.base_url, api_key="k", model=model, cache_dir=tmp_path)
        for model in ("strict", "lenient")
    )
    assert strict.evaluate("Warsaw", "Warsaw, Poland", input="q").score == 5.0
    again = lenient.evaluate("Warsaw", "Warsaw, Poland", input="q")  # the same messages, another model
    assert again.score == 2.0
    assert again.details["cached"] is False
    assert server.count(CHAT) == 2
    repeat = strict.evaluate("Warsaw", "Warsaw, Poland", input="q")
    assert (repeat.score, repeat.details["cached"], server.count(CHAT)) == (5.0, True, 2)


def test_two_embedding_models_sharing_a_cache_each_embed(server: LLMServer, tmp_path: Path) -> None:
    first, second = (
        SemanticSimilarity(base_url=server.base_url, api_key="k", model=model, cache_dir=tmp_path)
        for model in ("embed-a", "embed-b")
    )
    assert first.evaluate("born in Warsaw", "Warsaw").status == "ok"
    assert second.evaluate("born in Warsaw", "Warsaw").status == "ok"
    assert [r.body["model"] for r in server.requests if r.body] == ["embed-a", "embed-b"]
    assert server.count(EMBEDDINGS) == 2


def test_the_cache_file_holds_no_secret_a_judge_quoted(server: LLMServer, tmp_path: Path) -> None:
    """The cache is a file tracesim writes: a judge's reason that quotes the graded output keeps
    its grade and loses the secret, on disk and when read back."""
    from secret_kinds import KINDS, leaked

    every = " | ".join(secret for secret, _ in KINDS.values())
    server.judge = lambda request: '{"reason": ' + json.dumps(f"it leaks {every}") + ', "score": 2}'
    judge = LLMSimilarity(base_url=server.base_url, api_key="k", model="quoting", cache_dir=tmp_path)
    first = judge.evaluate("Warsaw", "Warsaw, Poland", input="q")
    again = judge.evaluate("Warsaw", "Warsaw, Poland", input="q")
    assert (first.score, again.score, again.details["cached"]) == (2.0, 2.0, True)
    for cache in _caches.values():
        cache.close()
    stored = b"".join(path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())
    assert leaked(stored.decode("utf-8", "replace")) == []
    assert leaked(again.explanation or "") == []
