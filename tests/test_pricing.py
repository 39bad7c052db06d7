"""Prices, usage read from spans, and the OpenInference usage every exported LLM span gets."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracesim
from tracesim._pricing import (
    PRICES_AS_OF,
    PRICES_SOURCE,
    SHIPPED_PRICES,
    Price,
    PriceTable,
    format_usd,
    openinference_usage,
    read_usage,
)
from tracesim.exporters import JsonlExporter, RedactingExporter, Redaction
from tracesim.tracefile import load_spans

GEN_AI_CHAT = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.response.model": "gpt-4o-mini-2024-07-18",
    "gen_ai.provider.name": "openai",
    "gen_ai.usage.input_tokens": 1000,
    "gen_ai.usage.output_tokens": 200,
    "gen_ai.usage.cache_read.input_tokens": 400,
}


def test_the_shipped_table_is_dated_and_sourced() -> None:
    assert PRICES_SOURCE == "https://platform.openai.com/docs/pricing"
    assert PRICES_AS_OF == "2026-11-22"
    named = {"gpt-5", "gpt-5-mini", "gpt-5-nano", "gpt-4.1", "gpt-4.1-mini", "gpt-4.1-nano", "gpt-4o",
             "gpt-4o-mini", "o3", "o4-mini", "text-embedding-3-small", "text-embedding-3-large"}  # fmt: skip
    assert named <= set(SHIPPED_PRICES)
    assert SHIPPED_PRICES["gpt-4o-mini"] == Price(input=0.15, output=0.60, cached_input=0.075)
    assert SHIPPED_PRICES["text-embedding-3-small"] == Price(input=0.02, output=0.0)
    docs = (Path(__file__).resolve().parents[1] / "docs" / "report.md").read_text()
    assert PRICES_AS_OF in docs
    assert PRICES_SOURCE in docs
    for name, price in SHIPPED_PRICES.items():  # the documented table is the shipped one
        assert f"| `{name}` | {price.input:g} | " in docs


@pytest.mark.parametrize(
    ("model", "found"),
    [
        ("gpt-4o-mini", "gpt-4o-mini"),  # exact
        ("GPT-4o-Mini", "gpt-4o-mini"),  # names are case-insensitive
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),  # a dated snapshot
        ("gpt-4.1-nano-2025-04-14", "gpt-4.1-nano"),
        ("o3-2025-04-16", "o3"),
        ("gpt-4.1-nano-lab", "gpt-4.1-nano"),  # the longest name it starts with, then "-"
        ("gpt-5-codex", "gpt-5"),
        ("o3-mini", "o3-mini"),  # not o3: listed on its own
        ("gpt-5-pro-2025-10-06", "gpt-5-pro"),
        ("gpt-4o-minimal", "gpt-4o"),  # gpt-4o-mini is no prefix followed by "-" here; gpt-4o is
        ("gpt-4oo", None),  # a prefix without "-" does not count
        ("gpt-5.1", None),
        ("llama-3", None),
        ("", None),
    ],
)
def test_lookup(model: str, found: str | None) -> None:
    table = PriceTable()
    assert table.lookup(model) == (SHIPPED_PRICES[found] if found else None)
    assert table.lookup(model) == table.lookup(model)  # the second answer comes from the cache


def test_user_prices_extend_and_override() -> None:
    table = PriceTable({"gpt-4o": Price(1.0, 2.0), "My-Model": Price(3.0, 4.0)})
    assert table.lookup("gpt-4o-2024-08-06") == Price(1.0, 2.0)  # the user's, not the shipped one
    assert table.lookup("my-model") == Price(3.0, 4.0)
    assert table.lookup("gpt-4o-mini") == SHIPPED_PRICES["gpt-4o-mini"]  # the longer name still wins
    assert PriceTable().lookup("gpt-4o") == SHIPPED_PRICES["gpt-4o"]  # tables do not leak into each other


def test_cost_counts_cached_input_at_its_own_price() -> None:
    mini = SHIPPED_PRICES["gpt-4o-mini"]
    assert mini.cost(1000, 200, cached=400)[0] == pytest.approx((600 * 0.15 + 400 * 0.075) / 1e6, rel=1e-12)
    assert mini.cost(1000, 200)[1] == pytest.approx(200 * 0.6 / 1e6, rel=1e-12)
    no_cache_price = Price(input=2.0, output=8.0)
    assert no_cache_price.cost(1000, 0, cached=400) == (2000 / 1e6, 0.0)  # all input at the input price
    assert mini.cost(100, 0, cached=500)[0] == pytest.approx(
        100 * 0.075 / 1e6
    )  # never more cached than input


def test_usage_is_read_from_each_convention() -> None:
    gen_ai = read_usage(GEN_AI_CHAT)
    assert gen_ai is not None
    assert (gen_ai.model, gen_ai.request_model) == ("gpt-4o-mini-2024-07-18", "gpt-4o-mini")
    assert (gen_ai.input_tokens, gen_ai.output_tokens, gen_ai.cached_tokens) == (1000, 200, 400)
    openinference = read_usage(
        {
            "llm.model_name": "gpt-4.1",
            "llm.token_count.prompt": 30,
            "llm.token_count.completion": 4,
            "llm.token_count.prompt_details.cache_read": 10,
            "llm.cost.total": 0.5,
        }
    )
    assert openinference is not None
    assert (openinference.model, openinference.input_tokens, openinference.cached_tokens) == (
        "gpt-4.1",
        30,
        10,
    )
    assert openinference.cost == 0.5
    assert openinference.priced(PriceTable()) == 0.5  # the span's own cost comes first
    openllmetry = read_usage({"gen_ai.request.model": "gpt-4o", "gen_ai.usage.prompt_tokens": 7,
                              "gen_ai.usage.completion_tokens": 3})  # fmt: skip
    assert openllmetry is not None
    assert (openllmetry.input_tokens, openllmetry.output_tokens) == (7, 3)
    assert read_usage({"gen_ai.request.model": "gpt-4o", "input.value": "hi"}) is None
    assert read_usage({"gen_ai.usage.input_tokens": True, "gen_ai.usage.output_tokens": -1}) is None


def test_a_model_without_a_price_has_no_cost_not_zero() -> None:
    usage = read_usage({"gen_ai.request.model": "llama-3", "gen_ai.usage.input_tokens": 10})
    assert usage is not None
    assert usage.priced(PriceTable()) is None
    added = openinference_usage(
        {"gen_ai.request.model": "llama-3", "gen_ai.usage.input_tokens": 10}, PriceTable()
    )
    assert added == {"llm.model_name": "llama-3", "llm.token_count.prompt": 10, "llm.token_count.total": 10}
    asked = read_usage({"gen_ai.request.model": "gpt-4o-mini", "gen_ai.response.model": "proxy-7",
                        "gen_ai.usage.input_tokens": 1000})  # fmt: skip
    assert asked is not None
    assert asked.priced(PriceTable()) == pytest.approx(
        0.00015
    )  # the answering model is unknown: the asked one


def test_openinference_usage_adds_only_what_is_missing() -> None:
    added = openinference_usage(GEN_AI_CHAT, PriceTable())
    assert added is not None
    assert added == {
        "llm.model_name": "gpt-4o-mini-2024-07-18",
        "llm.token_count.prompt": 1000,
        "llm.token_count.completion": 200,
        "llm.token_count.total": 1200,
        "llm.token_count.prompt_details.cache_read": 400,
        "llm.provider": "openai",
        "llm.cost.prompt": pytest.approx(120e-6),
        "llm.cost.completion": pytest.approx(120e-6),
        "llm.cost.total": pytest.approx(240e-6),
    }
    own = {"llm.model_name": "x", "llm.token_count.prompt": 5, "llm.token_count.completion": 1,
           "llm.token_count.total": 6, "llm.cost.total": 1.0}  # fmt: skip
    assert openinference_usage(own, PriceTable()) is None  # an OpenInference span already has it all


@pytest.mark.parametrize(
    ("amount", "text"),
    [(None, "—"), (0.0, "$0"), (0.0000072, "$0.0000072"), (0.00024, "$0.00024"), (0.25, "$0.2500"),
     (1234.5, "$1,234.50"), (1e-12, "<$0.0000000001")],
)  # fmt: skip
def test_format_usd(amount: float | None, text: str) -> None:
    assert format_usd(amount) == text


def _write(exporter: RedactingExporter) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.pricing")
    with tracer.start_as_current_span("agent", attributes={"openinference.span.kind": "AGENT"}):
        with tracer.start_as_current_span("chat gpt-4o-mini", attributes=GEN_AI_CHAT):
            pass
        local = {"llm.model_name": "my-model", "llm.token_count.prompt": 2_000_000}
        with tracer.start_as_current_span("llama", attributes=local):
            pass
    provider.shutdown()


def test_exported_llm_spans_get_openinference_tokens_and_cost(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    _write(RedactingExporter(JsonlExporter(path), prices={"my-model": Price(input=0.5, output=1.0)}))
    spans = {s.name: s.attributes for s in load_spans(path)}
    chat = spans["chat gpt-4o-mini"]
    assert chat["llm.model_name"] == "gpt-4o-mini-2024-07-18"
    counts = [chat[f"llm.token_count.{k}"] for k in ("prompt", "completion", "total")]
    assert counts == [1000, 200, 1200]
    assert chat["llm.token_count.prompt_details.cache_read"] == 400
    assert chat["llm.cost.prompt"] == pytest.approx(120e-6)
    assert chat["llm.cost.completion"] == pytest.approx(120e-6)
    assert chat["llm.cost.total"] == pytest.approx(240e-6)
    assert chat["gen_ai.usage.input_tokens"] == 1000  # the instrumentation's own attributes stay
    assert spans["llama"]["llm.cost.total"] == pytest.approx(1.0)  # the configured price: 2M x 0.5 / 1M
    assert not any(key.startswith("llm.") for key in spans["agent"])


def test_spans_without_usage_pass_through_untouched() -> None:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    with provider.get_tracer("t").start_as_current_span("plain", attributes={"input.value": "hi", "n": 3}):
        pass
    provider.shutdown()
    (plain,) = memory.get_finished_spans()
    assert Redaction().span(plain) is plain  # no copy, no new attribute


def test_configured_prices_price_the_exported_spans(tmp_path: Path) -> None:
    # Through tracesim.configure: the prices of tracesim.yaml reach the export path.
    (tmp_path / "tracesim.yaml").write_text("prices:\n  scripted-model: {input: 1000000, output: 2000000}\n")
    tracesim.configure(exporters=["jsonl"], jsonl_path=tmp_path / "t.jsonl")

    @tracesim.trace(kind="llm")
    def call() -> None:
        span = tracesim.current_span()
        span.set_attribute("gen_ai.request.model", "scripted-model")
        span.set_attribute("gen_ai.usage.input_tokens", 3)
        span.set_attribute("gen_ai.usage.output_tokens", 2)

    call()
    assert tracesim.force_flush()
    (span,) = load_spans(tmp_path / "t.jsonl")
    assert span.attributes["llm.cost.total"] == 7.0  # 3 x $1 + 2 x $2
