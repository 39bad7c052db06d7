"""One model call seen by two instrumentations side by side (sibling spans) is counted once."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import pytest

import tracesim
from tracesim.instrumentation import CurrentProvider
from tracesim.testing import capture_spans

TWIN_OF = "tracesim.llm.twin_of"
GENAI = {
    "gen_ai.operation.name": "chat",
    "gen_ai.request.model": "gpt-4o-mini",
    "gen_ai.usage.input_tokens": 11,
    "gen_ai.usage.output_tokens": 7,
}
OPENINFERENCE = {
    "openinference.span.kind": "LLM",
    "llm.model_name": "gpt-4o-mini",
    "llm.token_count.prompt": 11,
    "llm.token_count.completion": 7,
}


def _call(scope: str, attributes: Mapping[str, Any]) -> Callable[[], None]:
    """A span as an instrumentation of that scope makes it: attributes set at the end, as
    OpenInference's callback handler does."""
    tracer = CurrentProvider().get_tracer(scope)

    def make() -> None:
        span = tracer.start_span("model call")
        span.set_attributes(dict(attributes))
        span.end()

    return make


def _marks(run: Callable[[], None], *, traced: bool = True) -> list[bool]:
    with capture_spans() as captured:
        (tracesim.trace(kind="agent", name="agent")(run) if traced else run)()
        return [TWIN_OF in s.attributes for s in captured.spans if s.name == "model call"]


def _overlapping(scope_a: str, attrs_a: Mapping[str, Any], scope_b: str, attrs_b: Mapping[str, Any]) -> None:
    tracer_a, tracer_b = CurrentProvider().get_tracer(scope_a), CurrentProvider().get_tracer(scope_b)
    a = tracer_a.start_span("model call")
    b = tracer_b.start_span("model call")
    a.set_attributes(dict(attrs_a))
    b.set_attributes(dict(attrs_b))
    a.end()
    b.end()


def test_the_same_call_from_two_instrumentations_is_counted_once() -> None:
    marks = _marks(lambda: _overlapping("openinference.x", OPENINFERENCE, "opentelemetry.x", GENAI))
    assert marks == [False, True]  # the second to end is the twin


def test_a_third_instrumentation_of_the_same_call_is_a_twin_too() -> None:
    def three() -> None:
        tracers = [CurrentProvider().get_tracer(name) for name in ("one", "two", "three")]
        spans = [tracer.start_span("model call") for tracer in tracers]
        for span in spans:
            span.set_attributes(GENAI)
            span.end()

    assert _marks(three) == [False, True, True]


@pytest.mark.parametrize(
    ("scope_b", "attrs_b"),
    [
        pytest.param("opentelemetry.x", {**GENAI, "gen_ai.usage.output_tokens": 8}, id="other-tokens"),
        pytest.param("openinference.x", GENAI, id="same-instrumentation"),
        pytest.param("opentelemetry.x", {**GENAI, "gen_ai.request.model": "gpt-4o"}, id="other-model"),
    ],
)
def test_calls_that_differ_are_both_counted(scope_b: str, attrs_b: Mapping[str, Any]) -> None:
    # another token count, or the same instrumentation twice (it never sees one call twice)
    assert _marks(lambda: _overlapping("openinference.x", OPENINFERENCE, scope_b, attrs_b)) == [False, False]


def test_calls_one_after_the_other_are_both_counted() -> None:
    first, second = _call("openinference.x", OPENINFERENCE), _call("opentelemetry.x", GENAI)
    assert _marks(lambda: (first(), second())) == [False, False]


def test_calls_in_different_traces_are_both_counted() -> None:
    # no common parent: each overlapping span is the root of a trace of its own
    run = lambda: _overlapping("openinference.x", OPENINFERENCE, "opentelemetry.x", GENAI)  # noqa: E731
    assert _marks(run, traced=False) == [False, False]


def test_a_span_without_token_counts_is_left_alone() -> None:
    plain = {"gen_ai.operation.name": "chat"}
    assert _marks(lambda: _overlapping("one", plain, "two", plain)) == [False, False]


def test_two_calls_with_different_response_ids_are_both_counted() -> None:
    # two clients' calls in parallel, same model and tokens: each has its own response
    first = {**GENAI, "gen_ai.response.id": "chatcmpl-1"}
    second = {**GENAI, "gen_ai.response.id": "chatcmpl-2"}
    assert _marks(lambda: _overlapping("opentelemetry.openai", first, "tracesim_litellm", second)) == [
        False,
        False,
    ]


def test_an_agent_span_with_its_runs_totals_is_not_a_model_call() -> None:
    agent = {
        "openinference.span.kind": "AGENT",
        "llm.token_count.prompt": 11,
        "llm.token_count.completion": 7,
    }
    assert _marks(lambda: _overlapping("openinference.x", agent, "opentelemetry.x", GENAI)) == [False, False]


def test_the_twin_names_the_span_it_repeats() -> None:
    with capture_spans() as captured:
        tracesim.trace(kind="agent", name="agent")(
            lambda: _overlapping("openinference.x", OPENINFERENCE, "opentelemetry.x", GENAI)
        )()
        first, second = [s for s in captured.spans if s.name == "model call"]
    assert second.attributes[TWIN_OF] == first.span_id


def test_a_routers_provider_prefix_names_the_same_model() -> None:
    routed = {**OPENINFERENCE, "llm.model_name": "openai/gpt-4o-mini"}  # as LiteLLM writes it
    assert _marks(lambda: _overlapping("openinference.x", routed, "opentelemetry.x", GENAI)) == [False, True]
