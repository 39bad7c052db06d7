"""LLM spans reach Phoenix with the OpenInference token counts and cost that tracesim adds at export."""

from __future__ import annotations

from typing import Any

import pytest

import tracesim

CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
    "gen_ai.usage.input_tokens": 1000,
    "gen_ai.usage.output_tokens": 200,
    "gen_ai.usage.cache_read.input_tokens": 400,
}


def test_phoenix_shows_the_tokens_and_cost_of_a_genai_span(phoenix: Any, project: str) -> None:
    tracesim.configure(
        service_name=project, exporters=["otlp"], otlp_endpoint=phoenix.http_endpoint, spool_dir="none"
    )
    with (
        tracesim.span("answer", kind="agent"),
        tracesim.span("chat gpt-4o-mini", kind="llm", attributes=CHAT),
    ):
        pass
    assert tracesim.force_flush(60)

    spans = {s["name"]: s for s in phoenix.spans(project, min_count=2)}
    chat = spans["chat gpt-4o-mini"]
    assert chat["span_kind"] == "LLM"
    attributes = chat["attributes"]
    assert attributes["llm.model_name"] == "gpt-4o-mini-2024-07-18"
    assert attributes["llm.provider"] == "openai"
    assert attributes["llm.token_count.prompt"] == 1000
    assert attributes["llm.token_count.completion"] == 200
    assert attributes["llm.token_count.total"] == 1200
    assert attributes["llm.token_count.prompt_details.cache_read"] == 400
    # (600 x 0.15 + 400 x 0.075) / 1M for the prompt, 200 x 0.60 / 1M for the completion
    assert attributes["llm.cost.prompt"] == pytest.approx(120e-6)
    assert attributes["llm.cost.completion"] == pytest.approx(120e-6)
    assert attributes["llm.cost.total"] == pytest.approx(240e-6)
    assert not any(key.startswith("llm.") for key in spans["answer"]["attributes"])
