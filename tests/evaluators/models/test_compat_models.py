"""The compat façades of the model-backed evaluators, against the scripted local server."""

from __future__ import annotations

import numpy as np
import pytest
from llm_server import CHAT, EMBEDDINGS, LLMServer, Reply

from tracesim.evaluators.compat import agenta
from tracesim.evaluators.compat.azure import EvaluationException, SimilarityEvaluator

QUESTION = "Where was Marie Curie born?"
GOLDEN = "Marie Curie was born in Warsaw, Poland."


def test_azure_similarity_with_an_openai_model_configuration(server: LLMServer) -> None:
    server.judge = lambda request: '{"reason": "Both name Warsaw.", "score": 4}'
    config = {"base_url": server.base_url, "api_key": "k", "model": "gpt-4o-mini", "type": "openai"}
    evaluator = SimilarityEvaluator(model_config=config, threshold=3)
    out = evaluator(query=QUESTION, response="Warsaw.", ground_truth=GOLDEN)
    assert out["similarity"] == out["similarity_score"] == 4.0
    assert (out["similarity_passed"], out["similarity_result"]) == (True, "pass")
    assert out["similarity_threshold"] == 3
    assert out["similarity_reason"] == "Both name Warsaw."
    assert out["similarity_properties"]["total_tokens"] > 0
    (record,) = server.requests
    assert record.body is not None
    assert record.body["model"] == "gpt-4o-mini"
    legacy = SimilarityEvaluator(config, result_format="1.16")(
        query=QUESTION, response="W.", ground_truth=GOLDEN
    )
    assert legacy["similarity"] == legacy["gpt_similarity"] == 4.0
    assert legacy["similarity_total_tokens"] > 0


def test_azure_similarity_with_an_azure_model_configuration(server: LLMServer) -> None:
    """Azure OpenAI's URL layout: /openai/deployments/<deployment>/chat/completions?api-version=..."""
    server.judge = lambda request: '{"reason": "Different city.", "score": 2}'
    endpoint = server.base_url.removesuffix("/v1")
    config = {
        "azure_endpoint": endpoint,
        "azure_deployment": "judge",
        "api_key": "k",
        "api_version": "2024-10-21",
    }
    out = SimilarityEvaluator(config)(query=QUESTION, response="Paris.", ground_truth=GOLDEN)
    assert (out["similarity"], out["similarity_result"]) == (2.0, "fail")
    assert server.requests[0].path == "/openai/deployments/judge/chat/completions"
    assert server.requests[0].headers["api-key"] == "k"


def test_azure_similarity_refuses_missing_inputs_and_unreadable_answers(server: LLMServer) -> None:
    config = {"base_url": server.base_url, "api_key": "k", "model": "m"}
    evaluator = SimilarityEvaluator(config)
    with pytest.raises(EvaluationException, match="required") as missing:
        evaluator(query=QUESTION, response="Warsaw.")
    assert (missing.value.blame.value, missing.value.category.value) == ("UserError", "MISSING FIELD")
    assert missing.value.target.value == "SimilarityEvaluator"
    server.judge = lambda request: "It is quite similar."
    with pytest.raises(EvaluationException, match="quite similar"):
        evaluator(query=QUESTION, response="Warsaw.", ground_truth=GOLDEN)
    with pytest.raises(EvaluationException, match="model_config"):
        SimilarityEvaluator({"api_key": "k"})


def test_agenta_semantic_similarity_is_the_cosine(server: LLMServer) -> None:
    x, y = np.array(LLMServer.vector("Curie was born in Warsaw")), np.array(LLMServer.vector(GOLDEN))
    value = agenta.semantic_similarity(
        "Curie was born in Warsaw", GOLDEN, base_url=server.base_url, api_key="k"
    )
    assert value == pytest.approx(float(np.dot(x, y) / (np.linalg.norm(x) * np.linalg.norm(y))), abs=1e-6)
    assert server.count(EMBEDDINGS) == 1
    server.script(EMBEDDINGS, *[Reply.status(401)] * 3)
    with pytest.raises(agenta.AgentaEvaluationError, match="auth"):
        agenta.semantic_similarity("something else", GOLDEN, base_url=server.base_url, api_key="k")
    assert server.count(CHAT) == 0
