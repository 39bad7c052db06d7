"""LLM calls as metrics: their cost counted once, and the GenAI client metrics of instrumentations."""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest
from llm_server import LLMServer

import tracesim
from tracesim._pricing import Price
from tracesim.cli import main
from tracesim.evaluators import ExactMatch
from tracesim.instrumentation import CurrentProvider

from .points import METRICS_FILE, last_points, results_by

GENAI = {
    "gen_ai.operation.name": "chat",
    "gen_ai.provider.name": "openai",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.usage.input_tokens": 1000,
    "gen_ai.usage.output_tokens": 100,
}
OPENINFERENCE = {
    "openinference.span.kind": "LLM",
    "llm.provider": "openai",
    "llm.model_name": "gpt-4o-mini",
    "llm.token_count.prompt": 1000,
    "llm.token_count.completion": 100,
}
ONE_CALL = 1000 * 0.15 / 1e6 + 100 * 0.60 / 1e6  # gpt-4o-mini in the shipped table


def _cost(points: dict[str, list[dict[str, Any]]]) -> dict[tuple[str, str], float]:
    return {
        (p["attrs"]["gen_ai.provider.name"], p["attrs"]["gen_ai.request.model"]): p["asDouble"]
        for p in points.get("tracesim.llm.cost", [])
    }


def test_a_call_two_instrumentations_trace_is_counted_once(capsys: pytest.CaptureFixture[str]) -> None:
    tracesim.configure()
    side_by_side = (
        CurrentProvider().get_tracer("openinference.instrumentation.x"),
        CurrentProvider().get_tracer("opentelemetry.instrumentation.x"),
    )

    @tracesim.trace(kind="agent")
    def agent() -> None:
        # two instrumentations of one framework, each a span of the same call, side by side
        a = side_by_side[0].start_span("model call")
        b = side_by_side[1].start_span("model call")
        a.set_attributes(OPENINFERENCE)
        b.set_attributes(GENAI)
        a.end()
        b.end()
        # an LLM call inside another instrumentation's span of the same call (a client under a framework)
        with (
            side_by_side[1].start_as_current_span("chat gpt-4o-mini", attributes=GENAI),
            side_by_side[0].start_as_current_span("client call", attributes=GENAI),
        ):
            pass

    agent()
    tracesim.shutdown()
    cost = _cost(last_points())
    assert cost == {("openai", "gpt-4o-mini"): pytest.approx(2 * ONE_CALL)}
    capsys.readouterr()
    assert main(["report", "--json", ".tracesim/traces.jsonl"]) == 0
    usage = json.loads(capsys.readouterr().out)["llm_usage"]
    assert usage["totals"]["calls"] == 2
    assert usage["totals"]["cost_usd"] == pytest.approx(sum(cost.values()))


def test_an_unpriced_model_adds_no_cost() -> None:
    tracesim.configure()
    with (
        CurrentProvider()
        .get_tracer("x")
        .start_as_current_span("chat", attributes={**GENAI, "gen_ai.request.model": "home-made"})
    ):
        pass
    with tracesim.span("scored", evaluators=[ExactMatch()], expected="ok") as span:
        span.set_output("ok")  # a result, so that the file has a line
    tracesim.shutdown()
    points = last_points()
    assert "tracesim.evaluation.results" in points
    assert _cost(points) == {}


def test_the_openai_instrumentation_records_the_genai_client_metrics(llm_server: LLMServer) -> None:
    tracesim.configure(instrument=["openai"], prices={"scripted-model": Price(input=1.0, output=2.0)})
    client = openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0)
    client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hello there"}])
    client.close()
    tracesim.shutdown()
    points = last_points()
    (duration,) = points["gen_ai.client.operation.duration"]
    assert duration["unit"] == "s"
    assert duration["attrs"]["gen_ai.operation.name"] == "chat"
    assert duration["attrs"]["gen_ai.request.model"] == "gpt-x"
    assert int(duration["count"]) == 1
    usage = {p["attrs"]["gen_ai.token.type"]: p for p in points["gen_ai.client.token.usage"]}
    assert set(usage) == {"input", "output"}
    assert all(int(p["count"]) == 1 for p in usage.values())  # one point per call: not recorded twice
    tokens_in, tokens_out = usage["input"]["sum"], usage["output"]["sum"]
    assert tokens_in > 0
    assert tokens_out > 0
    # the same call's cost, from the span the instrumentation made, priced as configured
    assert _cost(points) == {("openai", "gpt-x"): pytest.approx((tokens_in * 1.0 + tokens_out * 2.0) / 1e6)}


def test_without_metrics_the_instrumentation_records_nothing(llm_server: LLMServer) -> None:
    tracesim.configure(instrument=["openai"], metrics="none")
    client = openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0)
    reply = client.chat.completions.create(model="gpt-x", messages=[{"role": "user", "content": "hi"}])
    client.close()
    assert reply.choices[0].message.content
    runtime = tracesim._runtime.current
    assert runtime is not None
    assert runtime.metrics is None
    tracesim.shutdown()


def test_an_llm_judges_own_calls_are_not_measured(llm_server: LLMServer) -> None:
    from tracesim.evaluators import LLMSimilarity, ModelConnection

    llm_server.judge = lambda request: (
        '{"reason": "Same facts.", "score": 5}' if "<rubric>" in json.dumps(request) else "Warsaw, Poland."
    )
    tracesim.configure(instrument=["openai"])
    judge = LLMSimilarity(
        connection=ModelConnection(model="judge-x", base_url=llm_server.base_url, api_key="t")
    )
    client = openai.OpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0)

    @tracesim.trace(kind="agent", evaluators=[judge], expected="Warsaw")
    def answer() -> str:
        reply = client.chat.completions.create(
            model="agent-x", messages=[{"role": "user", "content": "Where?"}]
        )
        return reply.choices[0].message.content or ""

    answer()
    assert tracesim.force_flush(30)
    client.close()
    tracesim.shutdown()
    points = last_points()
    assert results_by(points, "gen_ai.evaluation.name") == {("llm_similarity",): 1}
    (duration,) = points["gen_ai.client.operation.duration"]  # the agent's call only, not the judge's
    assert duration["attrs"]["gen_ai.request.model"] == "agent-x"
    assert int(duration["count"]) == 1


def test_points_inside_an_evaluators_model_call_or_suppressed_go_nowhere() -> None:
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    from tracesim._metrics._current import CurrentMeterProvider
    from tracesim._own_model_calls import detach, untraced

    tracesim.configure()
    # as an instrumentation holds it: made once, before (or after) any configuration
    duration = (
        CurrentMeterProvider().get_meter("some.instrumentation").create_histogram("call.duration", unit="s")
    )
    duration.record(0.5, {"who": "user"})
    token = untraced()  # what tracesim's model-backed evaluators run their requests in
    try:
        duration.record(7.0, {"who": "judge"})
    finally:
        detach(token)
    with suppress_instrumentation():
        duration.record(9.0, {"who": "suppressed"})
    tracesim.shutdown()
    (point,) = last_points()["call.duration"]
    assert point["attrs"] == {"who": "user"}
    assert point["sum"] == 0.5


def test_an_instrumentations_attribute_values_leave_redacted() -> None:
    from tracesim._metrics._current import CurrentMeterProvider

    tracesim.configure()
    usage = (
        CurrentMeterProvider().get_meter("some.instrumentation").create_histogram("gen_ai.client.token.usage")
    )
    usage.record(12, {"gen_ai.request.model": "ask marie@curie.org", "gen_ai.token.type": "input"})
    tracesim.shutdown()
    (point,) = last_points()["gen_ai.client.token.usage"]
    assert point["attrs"] == {"gen_ai.request.model": "ask [REDACTED:email]", "gen_ai.token.type": "input"}
    assert "curie" not in METRICS_FILE.read_text()


def test_a_langchain_call_through_the_openai_client_is_measured_once(llm_server: LLMServer) -> None:
    from langchain_openai import ChatOpenAI

    tracesim.configure(instrument=["openai", "langchain"])
    ChatOpenAI(model="gpt-x", base_url=llm_server.base_url, api_key="test", max_retries=0).invoke("hi")
    tracesim.shutdown()
    points = last_points()
    (duration,) = points["gen_ai.client.operation.duration"]
    assert int(duration["count"]) == 1
    assert sorted(int(p["count"]) for p in points["gen_ai.client.token.usage"]) == [1, 1]  # input, output


def _hide_customer(value: str, attribute: str) -> str:
    """A ``redact`` hook that hides the customer in fine-tuned model names."""
    return value.split(":cust-")[0] + ":[customer]" if ":cust-" in value else value


def test_points_that_redact_to_one_label_set_are_merged_into_one() -> None:
    from tracesim._metrics._current import CurrentMeterProvider

    tracesim.configure(redact=_hide_customer)
    meter = CurrentMeterProvider().get_meter("some.instrumentation")
    duration = meter.create_histogram("gen_ai.client.operation.duration", unit="s")
    calls = meter.create_counter("calls")
    for model, seconds in (("ft:m:cust-alice", 0.5), ("ft:m:cust-bob", 2.5), ("ft:m:cust-bob", 0.25)):
        duration.record(seconds, {"gen_ai.request.model": model})
        calls.add(1, {"gen_ai.request.model": model})
    tracesim.shutdown()
    points = last_points()
    (point,) = points["gen_ai.client.operation.duration"]  # one series, not one per customer
    assert point["attrs"] == {"gen_ai.request.model": "ft:m:[customer]"}
    assert int(point["count"]) == 3
    assert point["sum"] == 3.25
    assert (point["min"], point["max"]) == (0.25, 2.5)
    assert sum(int(n) for n in point["bucketCounts"]) == 3
    (total,) = points["calls"]
    assert int(total["asInt"]) == 3
    assert "alice" not in METRICS_FILE.read_text()


def test_merging_keeps_the_latest_gauge_and_adds_exponential_buckets_at_the_coarser_scale() -> None:
    from opentelemetry.sdk.metrics.export import Buckets, ExponentialHistogramDataPoint, NumberDataPoint

    from tracesim._metrics._redacted import merged

    older, newer = NumberDataPoint({"k": "v"}, 1, 5, 10), NumberDataPoint({"k": "v"}, 2, 9, 4)
    (gauge,) = merged([newer, older], latest=True)
    assert (gauge.value, gauge.start_time_unix_nano, gauge.time_unix_nano) == (4, 1, 9)

    def exponential(scale: int, offset: int, counts: list[int], low: float, high: float) -> Any:
        positive, negative = Buckets(offset, counts), Buckets(0, [])
        return ExponentialHistogramDataPoint(
            {"k": "v"}, 0, 1, sum(counts), 1.0, scale, 1, positive, negative, 0, low, high
        )

    (both,) = merged([exponential(2, 4, [1, 2, 3, 4], 1.0, 3.0), exponential(1, 3, [5], 0.5, 2.0)])
    assert both.scale == 1
    assert (both.positive.offset, both.positive.bucket_counts) == (2, [3, 12])  # indices 4..7 -> 2, 2, 3, 3
    assert (both.count, both.zero_count, both.min, both.max) == (15, 2, 0.5, 3.0)


@pytest.mark.parametrize("api", ["responses", "chat"])
def test_the_agents_sdks_model_calls_get_the_genai_client_metrics(llm_server: LLMServer, api: str) -> None:
    pytest.importorskip("agents", reason="openai-agents (the 'openai_agents' extra) is not installed")
    import asyncio

    from agents import Agent, OpenAIChatCompletionsModel, OpenAIResponsesModel, Runner

    model_class = OpenAIResponsesModel if api == "responses" else OpenAIChatCompletionsModel

    async def run() -> None:
        async with openai.AsyncOpenAI(base_url=llm_server.base_url, api_key="test", max_retries=0) as client:
            agent = Agent(
                name="helper",
                instructions="Answer.",
                model=model_class(model="agent-x", openai_client=client),
            )
            await Runner.run(agent, "hi")

    tracesim.configure()
    tracesim.instrument_openai_agents()  # turns the openai integration on for the model calls
    try:
        asyncio.run(run())
        asyncio.run(run())
    finally:
        tracesim.uninstrument_openai_agents()
    tracesim.shutdown()
    points = last_points()
    (duration,) = points["gen_ai.client.operation.duration"]
    assert duration["attrs"]["gen_ai.request.model"] == "agent-x"
    assert int(duration["count"]) == 2  # one per model call: the SDK's own spans add none
    usage = {p["attrs"]["gen_ai.token.type"]: int(p["count"]) for p in points["gen_ai.client.token.usage"]}
    assert usage == {"input": 2, "output": 2}
