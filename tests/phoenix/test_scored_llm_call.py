"""An agent's OpenAI call, traced by instrument_openai and scored by a rule, seen in a real Phoenix.

The real ``openai`` client talks to the scripted server over HTTP; the LLM span is made by
OpenTelemetry's OpenAI instrumentation, held by tracesim until a ``kind: llm`` rule has scored
it, and exported over OTLP with the agent span. Phoenix must show it as an LLM span under the
agent, with its model, its tokens, its cost and its scores, and with no secret from the prompt.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from llm_server import LLMServer

import tracesim

pytest.importorskip(
    "opentelemetry.instrumentation.genai.openai",
    reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
)
from tracesim.integrations import uninstrument_openai

SECRET = "sk-proj-Abc123Def456Ghi789Jkl012Mno345"


@pytest.fixture
def server() -> Iterator[LLMServer]:
    with LLMServer(model="gpt-4o-mini-2024-07-18") as running:  # answers as OpenAI does: a dated model
        yield running
    uninstrument_openai()


def test_a_rule_scored_llm_call_reaches_phoenix_with_model_tokens_and_scores(
    phoenix: Any, project: str, server: LLMServer, tmp_path: Path
) -> None:
    server.judge = lambda request: "Marie Curie was born in Warsaw."
    tracesim.configure(
        service_name=project,
        exporters=["otlp"],
        otlp_endpoint=phoenix.http_endpoint,
        spool_dir=tmp_path / "spool",
        evaluators=[
            {
                "kind": "llm",
                "evaluators": [{"type": "levenshtein", "threshold": 0.7}],
                "expected": {"value": "Marie Curie was born in Warsaw, Poland."},
            }
        ],
    )
    tracesim.instrument_openai()

    @tracesim.trace(kind="agent")
    def answer(question: str) -> str:
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": f"{question} (key {SECRET})"}]
            )
        return str(reply.choices[0].message.content)

    answer("Where was Marie Curie born?")
    assert tracesim.force_flush(60)

    spans = {s["name"]: s for s in phoenix.spans(project, min_count=2)}
    llm, agent = spans["chat gpt-4o-mini"], spans["answer"]
    assert llm["parent_id"] == agent["context"]["span_id"]
    assert llm["span_kind"] == "LLM"
    attributes = llm["attributes"]
    assert attributes["gen_ai.request.model"] == "gpt-4o-mini"
    assert attributes["gen_ai.usage.output_tokens"] == 6
    assert attributes["llm.token_count.completion"] == 6  # what Phoenix reads, added at export
    tokens_in = attributes["llm.token_count.prompt"]
    assert attributes["llm.cost.total"] == pytest.approx((tokens_in * 0.15 + 6 * 0.60) / 1e6)  # gpt-4o-mini
    assert attributes["tracesim.eval.levenshtein.passed"] is True
    assert attributes["tracesim.eval.levenshtein.score"] == pytest.approx(0.79)  # 1 - 8/39, rounded
    events = [e for e in llm["events"] if e["name"] == "gen_ai.evaluation.result"]
    assert [e["attributes"]["gen_ai.evaluation.name"] for e in events] == ["levenshtein"]
    assert SECRET not in repr(spans)
    assert "[REDACTED:" in repr(llm)
