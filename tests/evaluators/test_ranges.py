"""Score ranges: impossible thresholds are refused at construction, impossible scores are errors."""

from __future__ import annotations

import math
from typing import Any

import pytest

from tracesim import ConfigError
from tracesim.evaluators import EvalResult, Evaluator, Measurement, Rouge, evaluator, from_config
from tracesim.evaluators._builtin_types import BUILTIN_TYPES
from tracesim.evaluators.compat import agenta, agenttest, azure, twosignal

# their ranges are tested below
MODEL_BACKED = {"semantic", "llm_similarity", "llm_judge", "trajectory_judge"}
SIMILARITIES = sorted(set(BUILTIN_TYPES) - {"levenshtein_distance"} - MODEL_BACKED)
NOWHERE = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k"}  # built, never called
HUGE = 10**400  # math.isfinite() raises OverflowError on it
UNPRINTABLE = 10**5000  # repr() raises ValueError on it (more than 4,300 digits)
# the options a run evaluator cannot be built without
REQUIRED: dict[str, dict[str, Any]] = {
    "tool_arguments": {"tool": "search", "arguments": {"q": "a b"}},
    "run_budget": {"max_tool_calls": 5},
}
CALLS = [{"name": "search", "arguments": {"q": "a b"}}]


def _config(type_name: str, threshold: Any) -> dict[str, Any]:
    return {"type": type_name, **REQUIRED.get(type_name, {}), "threshold": threshold}


def _same_pair(type_name: str) -> tuple[Any, Any]:
    """A pair the evaluator scores: two equal texts, or for a run evaluator two equal call lists."""
    return (CALLS, CALLS) if getattr(BUILTIN_TYPES[type_name], "scores_runs", False) else ("a b", "a b")


def test_each_builtin_declares_its_score_range() -> None:
    special = {"levenshtein_distance": (0.0, math.inf), "semantic": (-1.0, 1.0)}
    for type_name, cls in BUILTIN_TYPES.items():
        if type_name in ("llm_similarity", "llm_judge", "trajectory_judge"):
            continue  # a judge's range is its scale, per instance
        assert cls.score_range == special.get(type_name, (0.0, 1.0))
    assert Evaluator.score_range == (-math.inf, math.inf)
    assert from_config({"type": "llm_similarity", **NOWHERE}).score_range == (1.0, 5.0)
    assert from_config({"type": "llm_judge", "rubric": "r", "scale": [0, 10], **NOWHERE}).score_range == (
        0.0,
        10.0,
    )
    assert from_config({"type": "llm_judge", "rubric": "r", "scale": "pass_fail", **NOWHERE}).score_range == (
        0,
        1,
    )


@pytest.mark.parametrize(
    ("config", "bad", "good"),
    [
        ({"type": "semantic"}, [1.01, -1.01, math.nan, HUGE], [-1, 0.8, 1]),
        ({"type": "llm_similarity"}, [0, 0.99, 5.01, math.inf], [1, 3, 5, None]),
        ({"type": "llm_judge", "rubric": "r", "scale": "pass_fail"}, [2, -1], [0, 1]),
    ],
)
def test_model_backed_thresholds_follow_their_scale(
    config: dict[str, Any], bad: list[Any], good: list[Any]
) -> None:
    for threshold in bad:
        with pytest.raises(ConfigError) as info:
            from_config({**config, **NOWHERE, "threshold": threshold})
        assert info.value.setting == f"{config['type']}.threshold"
    for threshold in good:
        assert from_config({**config, **NOWHERE, "threshold": threshold}).threshold == threshold


@pytest.mark.parametrize("type_name", SIMILARITIES)
@pytest.mark.parametrize(
    "threshold",
    [
        -0.5,
        1.0001,
        7,
        pytest.param(HUGE, id="10**400"),
        pytest.param(UNPRINTABLE, id="10**5000"),
        math.inf,
        -math.inf,
        math.nan,
    ],
)
def test_a_threshold_outside_zero_to_one_is_refused(type_name: str, threshold: float) -> None:
    with pytest.raises(ConfigError) as info:
        from_config(_config(type_name, threshold))
    assert info.value.setting == f"{type_name}.threshold"
    assert info.value.accepted == "a number >= 0 and <= 1, or null"
    assert f"{type_name}.threshold" in str(info.value)


@pytest.mark.parametrize("type_name", SIMILARITIES)
@pytest.mark.parametrize("threshold", [0, 0.0, 0.5, 1, 1.0, None])
def test_thresholds_inside_the_range_are_kept(type_name: str, threshold: float | None) -> None:
    built = from_config(_config(type_name, threshold))
    assert built.threshold == threshold
    assert built.evaluate(*_same_pair(type_name)).status == "ok"


def test_levenshtein_distance_takes_any_threshold_from_zero_up() -> None:
    for bad in (-2, -0.001, HUGE, math.inf, math.nan):
        with pytest.raises(ConfigError) as info:
            from_config({"type": "levenshtein_distance", "threshold": bad})
        assert info.value.accepted == "a number >= 0, or null"
    assert from_config({"type": "levenshtein_distance", "threshold": 0}).evaluate("a", "a").passed is True
    assert from_config({"type": "levenshtein_distance", "threshold": 1e9}).evaluate("a", "b").passed is True


def test_replace_validates_the_threshold_too() -> None:
    with pytest.raises(ConfigError, match=r"levenshtein\.threshold"):
        from_config({"type": "levenshtein"}).replace(threshold=1.5)


@pytest.mark.parametrize(
    ("config", "setting", "accepted"),
    [
        ({"type": "rouge", "precision_threshold": 1.5}, "rouge.precision_threshold", ">= 0 and <= 1"),
        ({"type": "rouge", "recall_threshold": -0.1}, "rouge.recall_threshold", ">= 0 and <= 1"),
        ({"type": "rouge", "recall_threshold": HUGE}, "rouge.recall_threshold", ">= 0 and <= 1"),
        ({"type": "meteor", "alpha": 1.5}, "meteor.alpha", ">= 0 and <= 1"),
        ({"type": "meteor", "gamma": -1}, "meteor.gamma", ">= 0 and <= 1"),
        ({"type": "meteor", "beta": HUGE}, "meteor.beta", ">= 0"),
        ({"type": "meteor", "beta": -1}, "meteor.beta", ">= 0"),
        ({"type": "levenshtein", "max_chars": 0}, "levenshtein.max_chars", "an integer >= 1, or null"),
        ({"type": "rouge", "max_chars": 1.5}, "rouge.max_chars", "an integer >= 1, or null"),
        ({"type": "exact", "max_json_chars": -1}, "exact.max_json_chars", "an integer >= 1, or null"),
        ({"type": "jaccard", "timeout_s": HUGE}, "jaccard.timeout_s", "> 0"),
        ({"type": "jaccard", "sample_rate": UNPRINTABLE}, "jaccard.sample_rate", ">= 0 and <= 1"),
    ],
    ids=lambda value: None if not isinstance(value, dict) else str(sorted(value)),
)
def test_other_number_settings_are_checked(config: dict[str, Any], setting: str, accepted: str) -> None:
    with pytest.raises(ConfigError) as info:
        from_config(config)
    assert info.value.setting == setting
    assert accepted in info.value.accepted
    str(info.value)  # prints even for an int too long for repr()


def test_rouge_sub_thresholds_at_the_ends_are_accepted() -> None:
    built = Rouge("rouge1", precision_threshold=0, recall_threshold=1)
    result = built.evaluate("a b", "a c")
    assert (result.details["precision_passed"], result.details["recall_passed"]) == (True, False)


def test_custom_evaluators_take_any_finite_threshold() -> None:
    @evaluator(threshold=42)
    def length(output: str, expected: str) -> float:
        return float(len(output))

    assert length.evaluate("x" * 50, "y").passed is True
    with pytest.raises(ConfigError, match=r"function\.threshold"):
        evaluator(threshold=HUGE, name="length")(lambda output, expected: 1.0)


def test_a_subclass_can_declare_its_range() -> None:
    class Stars(Evaluator):
        type_name = "stars"
        score_range = (1.0, 5.0)

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
            return float(output)

    with pytest.raises(ConfigError) as info:
        Stars(threshold=0)
    assert info.value.accepted == "a number >= 1 and <= 5, or null"
    assert Stars(threshold=3).evaluate(4, "x").passed is True
    outside = Stars(threshold=3).evaluate(6, "x")
    assert (outside.status, outside.error_type) == ("error", "invalid_score")
    assert "outside the score range [1, 5]" in (outside.error or "")


@pytest.mark.parametrize(
    ("returned", "named"),
    [
        (math.nan, "nan"),
        (math.inf, "inf"),
        (-math.inf, "-inf"),
        pytest.param(HUGE, "too large for a float", id="10**400"),
        (Measurement(math.nan, {"why": "kept"}), "nan"),
        (Measurement(math.inf), "inf"),
        (Measurement("0.5"), "'0.5' is a str, not a number"),  # type: ignore[arg-type]
        (EvalResult(name="x", score=math.inf), "inf"),
        (EvalResult(name="x", score=-math.nan), "nan"),
    ],
)
def test_a_score_that_is_not_a_finite_number_is_an_error(returned: Any, named: str) -> None:
    @evaluator(threshold=0.5)
    def metric(output: str, expected: str) -> Any:
        return returned

    result = metric.evaluate("a", "b")
    assert (result.status, result.error_type, result.score, result.passed, result.label) == (
        "error",
        "invalid_score",
        None,
        None,
        None,
    )
    assert named in (result.error or "")
    if isinstance(returned, Measurement):
        assert result.details == returned.details


def test_an_error_result_from_a_metric_is_kept_as_it_is() -> None:
    @evaluator
    def failing(output: str, expected: str) -> EvalResult:
        return EvalResult(name="x", status="error", error="upstream failed", error_type="Upstream")

    result = failing.evaluate("a", "b")
    assert (result.status, result.error_type, result.name) == ("error", "Upstream", "failing")


def test_a_builtin_subclass_out_of_its_range_is_an_error() -> None:
    class Overshoot(from_config({"type": "jaccard"}).__class__):  # type: ignore[misc]
        def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
            return Measurement(1.0000000000000002)

    result = Overshoot().evaluate("a", "a")
    assert (result.status, result.error_type) == ("error", "invalid_score")
    assert "1.0000000000000002" in (result.error or "")


# -- the compat façades keep their vendors' inputs ------------------------------------------------


def test_agenta_similarity_match_takes_any_number_as_agenta_does() -> None:
    # Jaccard of these is 0.5; Agenta passes only when strictly greater than the threshold.
    assert agenta.similarity_match("a b c", "a b d", similarity_threshold=0) is True
    assert agenta.similarity_match("a b c", "a b c", similarity_threshold=1) is False
    assert agenta.similarity_match("a b c", "a b d", similarity_threshold=-0.5) is True
    assert agenta.similarity_match("a b c", "a b c", similarity_threshold=1.5) is False
    with pytest.raises(agenta.AgentaEvaluationError):
        agenta.similarity_match("a", "a", similarity_threshold="high")  # type: ignore[arg-type]
    assert agenta.levenshtein_distance("abc", "abd", threshold=-1) is False


def test_twosignal_takes_zero_one_and_beyond() -> None:
    assert twosignal.Levenshtein(threshold=1).evaluate("abc", "abc") == {"score": 1.0, "label": "pass"}
    assert twosignal.Levenshtein(threshold=1).evaluate("abc", "abd")["label"] == "fail"
    assert twosignal.Levenshtein(threshold=0).evaluate("abc", "xyz") == {"score": 0.0, "label": "pass"}
    assert twosignal.Levenshtein(threshold=1.5).evaluate("abc", "abc")["label"] == "fail"
    with pytest.raises(ConfigError, match=r"twosignal\.threshold"):
        twosignal.Levenshtein(threshold=HUGE)


def test_azure_and_agenttest_compare_with_any_threshold() -> None:
    def f1(threshold: float, response: str, truth: str) -> str:
        evaluator = azure.F1ScoreEvaluator(threshold=threshold, result_format="1.16")
        return str(evaluator(response=response, ground_truth=truth)["f1_result"])

    assert f1(0, "a", "b") == "pass"
    assert f1(1, "x", "x") == "pass"
    assert f1(2, "x", "x") == "fail"
    rouge = azure.RougeScoreEvaluator(
        "rouge1", precision_threshold=0.0, recall_threshold=1.0, result_format="1.16"
    )
    assert rouge(response="a b", ground_truth="a c")["rouge_recall_result"] == "fail"
    assert agenttest.StringSimilarity(method="exact", threshold=1.5).evaluate("a", "a").passed is False
