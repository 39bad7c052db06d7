"""The Evaluator base, EvalResult, @evaluator, the registry and the spec parser."""

from __future__ import annotations

import asyncio
import dataclasses
import math
from typing import Any

import pytest

import tracesim.evaluators as ev
from tracesim import ConfigError
from tracesim.evaluators import (
    EvalResult,
    Evaluator,
    Levenshtein,
    LevenshteinDistance,
    Measurement,
    Rouge,
    as_text,
    available_types,
    evaluator,
    from_config,
    parse_spec,
    register,
    unregister,
)
from tracesim.evaluators._arithmetic import round_half_up

CORE_TYPES = {
    "exact",
    "levenshtein",
    "levenshtein_distance",
    "jaccard",
    "cosine",
    "content_similarity",
    "f1",
    "bleu",
    "gleu",
    "rouge",
    "meteor",
}


def test_public_names_are_pinned() -> None:
    assert sorted(ev.__all__) == sorted(
        [
            "DEFAULT",
            "AsyncFunctionEvaluator",
            "Bleu",
            "ContentSimilarity",
            "EvalResult",
            "Evaluator",
            "ExactMatch",
            "F1Score",
            "FunctionEvaluator",
            "Gleu",
            "Jaccard",
            "LLMJudge",
            "LLMSimilarity",
            "Levenshtein",
            "LevenshteinDistance",
            "Measurement",
            "Meteor",
            "MissingExtraError",
            "MissingNLTKDataError",
            "ModelConnection",
            "Rouge",
            "RunBudget",
            "SemanticSimilarity",
            "TfidfCosine",
            "ToolArguments",
            "ToolCallAccuracy",
            "ToolCallF1",
            "ToolCorrectness",
            "ToolNames",
            "Trajectory",
            "TrajectoryJudge",
            "TrajectoryMatch",
            "as_text",
            "available_types",
            "evaluator",
            "from_config",
            "parse_spec",
            "register",
            "unregister",
        ]
    )


def test_default_names_are_type_names_and_appear_in_results() -> None:
    for type_name in CORE_TYPES:
        built = from_config({"type": type_name})
        assert built.name == type_name
        assert built.evaluate("a b", "a c").name == type_name
    assert Levenshtein(name="lev80").evaluate("a", "a").name == "lev80"


def test_result_fields_and_labels() -> None:
    result = Levenshtein().evaluate("Hello World!", "Hello World")
    assert (result.score, result.passed, result.label, result.threshold, result.status) == (
        0.92,
        True,
        "pass",
        0.7,
        "ok",
    )
    assert result.details["distance"] == 1
    assert result.duration_s is not None
    assert result.duration_s >= 0
    no_threshold = Levenshtein(threshold=None).evaluate("a", "b")
    assert (no_threshold.passed, no_threshold.label) == (None, None)
    with pytest.raises(Exception, match="frozen"):
        result.score = 1.0  # type: ignore[misc]


def test_expected_none_is_skipped_for_every_type() -> None:
    for type_name in CORE_TYPES:
        result = from_config({"type": type_name}).evaluate("anything", None)
        assert (result.status, result.score, result.passed, result.label) == ("skipped", None, None, None)


def test_metric_exceptions_become_error_results() -> None:
    class Broken(Evaluator):
        type_name = "broken"

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
            raise KeyError("boom")

    result = Broken().evaluate("a", "b")
    assert result.status == "error"
    assert result.error == "KeyError: 'boom'"
    assert result.error_type == "KeyError"
    assert result.score is None
    assert result.passed is None


def test_exact_json_with_a_bad_reference_is_an_error_result() -> None:
    result = from_config({"type": "exact", "json": True}).evaluate("{}", "{not json")
    assert result.status == "error"
    assert result.error_type == "JSONDecodeError"
    bad_output = from_config({"type": "exact", "json": True}).evaluate("{not json", "{}")
    assert bad_output.score == 0.0
    assert "json_error" in bad_output.details


def test_lower_is_better_direction() -> None:
    strict = LevenshteinDistance(threshold=1)
    assert strict.evaluate("Pari", "Paris").passed is True
    assert strict.evaluate("Par", "Paris").passed is False
    assert strict.evaluate("Par", "Paris").score == 2
    assert LevenshteinDistance().evaluate("abc", "abd").label is None


def test_threshold_comparison_is_on_the_rounded_score() -> None:
    # 1 - 6/16 = 0.625 -> 0.63 half-up; passes 0.63 only because of half-up rounding.
    result = Levenshtein(threshold=0.63).evaluate("customer service", "customer support")
    assert result.score == 0.63
    assert result.passed is True
    assert result.details["raw_score"] == 0.625


@pytest.mark.parametrize(
    ("value", "places", "expected"),
    [
        (0.625, 2, 0.63),
        (0.285, 2, 0.29),
        (0.125, 2, 0.13),
        (0.8947368421052632, 2, 0.89),
        (1.0, 2, 1.0),
        (0.5, 0, 1.0),
    ],
)
def test_round_half_up(value: float, places: int, expected: float) -> None:
    assert round_half_up(value, places) == expected


def test_as_text_is_stable_json_for_non_strings() -> None:
    @dataclasses.dataclass
    class Point:
        x: int
        y: int

    assert as_text("plain") == "plain"
    assert as_text({"b": 1, "a": [1, 2]}) == as_text({"a": [1, 2], "b": 1}) == '{"a": [1, 2], "b": 1}'
    assert as_text(None) == "null"
    assert as_text(Point(1, 2)) == '{"x": 1, "y": 2}'
    assert as_text({1: "a", "b": 2}).startswith("{")  # mixed keys: repr fallback, never raises
    assert as_text("naïve 東京") == "naïve 東京"
    assert Levenshtein().evaluate({"a": 1}, {"a": 1}).score == 1.0


def test_decorator_with_float_bool_and_result() -> None:
    @evaluator(threshold=0.5)
    def half(output: str, expected: str) -> float:
        return 0.5

    @evaluator
    def same(output: str, expected: str) -> bool:
        return output == expected

    @evaluator(name="custom_name")
    def full(output: str, expected: str, *, input: Any = None) -> EvalResult:
        return EvalResult(name="ignored", score=0.25, details={"input": input})

    assert (half.name, half.evaluate("x", "y").label) == ("half", "pass")
    assert same.evaluate("x", "x").passed is True
    assert same.evaluate("x", "y").score == 0.0
    result = full.evaluate("x", "y", input="q")
    assert (result.name, result.score, result.details, result.passed) == (
        "custom_name",
        0.25,
        {"input": "q"},
        None,
    )
    assert half.evaluate("x", None).status == "skipped"
    assert not half.is_async


def test_decorator_bad_return_is_an_error_result() -> None:
    @evaluator
    def wrong(output: str, expected: str) -> Any:
        return "0.5"

    result = wrong.evaluate("a", "b")
    assert result.status == "error"
    assert result.error_type == "TypeError"


def test_reference_free_function_evaluator() -> None:
    @evaluator(requires_expected=False, threshold=1.0)
    def non_empty(output: str, expected: Any) -> bool:
        return bool(output)

    assert non_empty.evaluate("text", None).passed is True


def test_async_evaluators() -> None:
    @evaluator(threshold=0.5)
    async def remote(output: str, expected: str) -> float:
        await asyncio.sleep(0)
        return 0.75

    assert remote.is_async
    assert not Levenshtein().is_async
    assert asyncio.run(remote.aevaluate("a", "b")).label == "pass"
    assert remote.evaluate("a", "b").score == 0.75  # outside a loop: runs it
    assert asyncio.run(remote.aevaluate("a", None)).status == "skipped"
    assert asyncio.run(Levenshtein().aevaluate("a", "a")).score == 1.0

    async def inside() -> EvalResult:
        return remote.evaluate("a", "b")

    assert asyncio.run(inside()).status == "error"


def test_subclass_measurement_and_nan() -> None:
    class Half(Evaluator):
        type_name = "half"
        default_threshold = 0.4

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
            return Measurement(0.5, {"why": "always"}, explanation="fixed")

    result = Half().evaluate("a", "b")
    assert (result.label, result.explanation, result.details) == ("pass", "fixed", {"why": "always"})

    @evaluator(threshold=0.5)
    def nan(output: str, expected: str) -> float:
        return math.nan

    result = nan.evaluate("a", "b")  # more cases in test_ranges.py
    assert (result.status, result.error_type, result.passed) == ("error", "invalid_score", None)


@pytest.mark.parametrize(
    ("kwargs", "setting"),
    [
        ({"sample_rate": 1.5}, "levenshtein.sample_rate"),
        ({"sample_rate": -0.1}, "levenshtein.sample_rate"),
        ({"timeout_s": 0}, "levenshtein.timeout_s"),
        ({"threshold": "high"}, "levenshtein.threshold"),
        ({"threshold": math.nan}, "levenshtein.threshold"),
        ({"max_concurrency": 0}, "levenshtein.max_concurrency"),
        ({"name": ""}, "levenshtein.name"),
        ({"name": "has space"}, "levenshtein.name"),
        ({"round_to": -1}, "levenshtein.round_to"),
        ({"case_sensitive": "yes"}, "levenshtein.case_sensitive"),
    ],
)
def test_bad_shared_and_specific_options(kwargs: dict[str, Any], setting: str) -> None:
    with pytest.raises(ConfigError) as info:
        Levenshtein(**kwargs)
    assert info.value.setting == setting


def test_shared_options_are_kept() -> None:
    built = from_config(
        {"type": "rouge", "sample_rate": 0.25, "timeout_s": 2, "max_concurrency": 3, "name": "r"}
    )
    assert (built.sample_rate, built.timeout_s, built.max_concurrency, built.name) == (0.25, 2.0, 3, "r")
    assert built.replace(threshold=0.9).threshold == 0.9
    assert built.threshold == 0.5
    assert Rouge("rouge2").rouge_type == "rouge2"


def test_from_config_errors_list_what_is_accepted() -> None:
    with pytest.raises(ConfigError) as info:
        from_config({"type": "levenshtien"})
    assert info.value.setting == "type"
    assert "levenshtein" in info.value.accepted
    with pytest.raises(ConfigError) as info:
        from_config({"type": "levenshtein", "case_sensitve": True})
    assert info.value.setting == "levenshtein.case_sensitve"
    assert "case_sensitive" in info.value.accepted
    with pytest.raises(ConfigError) as info:
        from_config({"type": "rouge", "rouge_type": "rougeX"})
    assert info.value.setting == "rouge.rouge_type"
    assert "rougeLsum" in info.value.accepted
    with pytest.raises(ConfigError, match=r"tracesim\.yaml"):
        from_config({"type": "rouge", "rouge_type": "rougeX"}, source="tracesim.yaml")
    with pytest.raises(ConfigError):
        from_config(["levenshtein"])  # type: ignore[arg-type]


@pytest.mark.parametrize("model_type", ["semantic", "llm_similarity", "llm_judge"])
def test_model_backed_types_are_built_in_and_reserved(model_type: str) -> None:
    assert model_type in available_types()
    with pytest.raises(ConfigError):
        register(model_type, Levenshtein)


def test_a_model_backed_type_checks_its_options_without_a_network_call() -> None:
    with pytest.raises(ConfigError, match=r"semantic\.backend"):
        from_config({"type": "semantic", "backend": "cloud"})
    with pytest.raises(ConfigError, match=r"llm_judge\.rubric"):
        from_config({"type": "llm_judge", "rubric": ""})
    with pytest.raises(ConfigError, match=r"llm_similarity\.threshold"):
        from_config({"type": "llm_similarity", "threshold": 7})  # outside the 1-5 scale
    with pytest.raises(ConfigError, match=r"llm_similarity\.request_timeout_s"):
        from_config({"type": "llm_similarity", "request_timeout_s": 0})
    judge = from_config({"type": "llm_similarity", "base_url": "http://127.0.0.1:9/v1", "api_key": "k"})
    assert judge.threshold == 3.0  # built: nothing was sent (port 9 has no server)


def test_register_classes_functions_and_instances() -> None:
    @evaluator(threshold=0.5)
    def shout(output: str, expected: str) -> float:
        return float(output.isupper())

    register("shout", shout)

    @register("always_one")
    class AlwaysOne(Evaluator):
        type_name = "always_one"

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
            return 1.0

    try:
        assert from_config({"type": "shout", "threshold": 0.9}).threshold == 0.9
        assert from_config({"type": "shout"}).evaluate("HI", "x").passed is True
        assert from_config({"type": "always_one", "name": "one"}).evaluate("a", "b").score == 1.0
        assert {"shout", "always_one"} <= set(available_types())
        with pytest.raises(ConfigError):
            register("shout", shout)
        with pytest.raises(ConfigError):
            register("levenshtein", shout)
        with pytest.raises(ConfigError):
            from_config({"type": "shout", "case_sensitive": True})
    finally:
        unregister("shout")
        unregister("always_one")
    assert "shout" not in available_types()
    with pytest.raises(ConfigError):
        unregister("levenshtein")


@pytest.mark.parametrize(
    ("spec", "config"),
    [
        ("levenshtein", {"type": "levenshtein"}),
        (
            "levenshtein:threshold=0.8,case_sensitive=true",
            {"type": "levenshtein", "threshold": 0.8, "case_sensitive": True},
        ),
        ("rouge:rouge_type=rougeL", {"type": "rouge", "rouge_type": "rougeL"}),
        ("levenshtein:round_to=null,name=lev", {"type": "levenshtein", "round_to": None, "name": "lev"}),
        ('x:a=[1, 2],b="c,d",c={"k": [1,2]}', {"type": "x", "a": [1, 2], "b": "c,d", "c": {"k": [1, 2]}}),
    ],
)
def test_parse_spec(spec: str, config: dict[str, Any]) -> None:
    assert parse_spec(spec) == config


@pytest.mark.parametrize("spec", ["", ":threshold=1", "levenshtein:threshold", "levenshtein:=1"])
def test_parse_spec_rejects_malformed(spec: str) -> None:
    with pytest.raises(ConfigError):
        parse_spec(spec)


def test_core_catalogue_is_registered() -> None:
    assert set(available_types()) >= CORE_TYPES
