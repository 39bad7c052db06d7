"""The façades as their vendors' own tests read them: AgentTest's result objects, Azure 1.18's keys.

AgentTest 0.1.0's tests (``tests/test_agenttest_core.py``) read ``result.passed``,
``result.score`` and ``result.error`` and check ``isinstance(result, EvaluationResult)``;
its ``EvaluationResult`` (``agent_test/evaluators/base.py``) is a dataclass with ``to_dict()``.
azure-ai-evaluation 1.17-1.18's ``SimilarityEvaluator`` (``_base_prompty_eval.py``) returns
exactly eight ``similarity*`` keys; 1.13-1.16 returned eleven others. What each release does
with an answer it cannot fully read was read in the 1.18.0 and 1.16.0 wheels: 1.18
``json.loads`` the answer (``_legacy/prompty/_utils.py`` ``format_llm_response``: not JSON
raises ``JSONDecodeError``) and takes ``float(score)`` with no range check, NaN / ``unknown`` /
passed ``False`` when the object has no score (``_base_prompty_eval.py`` ``_do_eval``); 1.16
reads the first digit and raises when there is none. The NLP evaluators' 1.18 dicts are
exactly eight keys too (``_f1_score.py``, ``_bleu.py``, ``_gleu.py``, ``_meteor.py``,
``_rouge.py``).
"""

from __future__ import annotations

import dataclasses
import json
import math
from typing import Any

import pytest
from llm_server import LLMServer

from tracesim.evaluators.compat import agenttest, azure
from tracesim.evaluators.compat.agenttest import EvaluationResult, StringSimilarity
from tracesim.evaluators.compat.azure import EvaluationException, SimilarityEvaluator

FIELDS = ["passed", "score", "threshold", "details", "error"]

# -- AgentTest: results are EvaluationResult objects ---------------------------------------------


def test_exact_match_results_are_read_by_attribute() -> None:
    evaluator = StringSimilarity({"method": "exact", "threshold": 1.0})
    same = evaluator.evaluate({"input": "test", "actual": "hello world", "expected": "hello world"})
    assert isinstance(same, EvaluationResult)
    assert (same.passed, same.score, same.threshold, same.error) == (True, 1.0, 1.0, None)
    assert same.details == {
        "actual": "hello world",
        "expected": "hello world",
        "similarity": 1.0,
        "method": "exact",
    }
    other = evaluator.evaluate({"input": "test", "actual": "hello world", "expected": "goodbye world"})
    assert (other.passed, other.score) == (False, 0.0)


def test_no_expected_value_passes_with_score_one_and_no_threshold() -> None:
    result = StringSimilarity().evaluate({"input": "test", "actual": "some response"})
    assert result.passed is True
    assert (result.score, result.threshold, result.error) == (1.0, None, None)
    assert result.details == {"reason": "No expected value provided"}
    # expected given as None is the same as no expected (AgentTest reads it with .get)
    assert StringSimilarity().evaluate({"actual": "x", "expected": None}) == result.__class__(
        passed=True, score=1.0, details={"reason": "No expected value provided"}
    )


@pytest.mark.parametrize(
    "output",
    [
        {"input": "test", "expected": "something"},
        {"actual": None, "expected": "something"},
        {"input": "test"},  # neither: the missing actual is what AgentTest reports
        None,
    ],
)
def test_no_actual_fails_with_an_error_naming_actual(output: Any) -> None:
    result = StringSimilarity().evaluate(output)
    assert result.passed is False
    assert result.error is not None
    assert "actual" in result.error
    assert (result.score, result.threshold, result.details) == (None, None, {})


def test_a_bare_value_is_an_evaluation_result() -> None:
    assert isinstance(StringSimilarity().evaluate("invalid output"), EvaluationResult)


def test_the_result_is_agenttests_dataclass_and_not_a_mapping() -> None:
    result = StringSimilarity(method="levenshtein").evaluate({"actual": "kitten", "expected": "sitting"})
    assert dataclasses.is_dataclass(result)
    assert [f.name for f in dataclasses.fields(result)] == FIELDS
    assert result.to_dict() == {name: getattr(result, name) for name in FIELDS}
    assert list(result.to_dict()) == FIELDS
    with pytest.raises(TypeError):
        result["score"]  # type: ignore[index]  # AgentTest's result has no item access either
    # Built as AgentTest builds it: only passed is required; details None becomes {}.
    assert EvaluationResult(passed=False).to_dict() == dict.fromkeys(FIELDS) | {
        "passed": False,
        "details": {},
    }
    assert EvaluationResult(True, 1.0, None, None).details == {}  # type: ignore[arg-type]


def test_cases_keep_each_result_as_a_dict_as_agenttest_does() -> None:
    result = StringSimilarity(method="exact").evaluate(
        [{"actual": "a", "expected": "a"}, {"expected": "b"}, {"actual": "c"}]
    )
    assert isinstance(result, EvaluationResult)
    assert (result.passed, result.score, result.threshold, result.error) == (False, 2 / 3, 0.8, None)
    individual = result.details["individual_results"]
    assert all(type(r) is dict and list(r) == FIELDS for r in individual)
    assert [r["passed"] for r in individual] == [True, False, True]
    assert individual[1]["error"] == "No 'actual' value found in test output"
    assert (result.details["total_cases"], result.details["passed_cases"]) == (3, 2)


def test_every_agenttest_evaluator_returns_the_result_object() -> None:
    judge = agenttest.LLMJudge({"api_key": "k", "api_base": "http://127.0.0.1:9/v1"})
    results = [
        agenttest.Contains().evaluate({"actual": "Refunds in 30 days", "contains": ["refund"]}),
        agenttest.Regex().evaluate({"actual": "ORD-1", "pattern": r"ORD-\d"}),
        agenttest.Metric().evaluate({"actual": 4.1, "expected": 4}),
        agenttest.Metrics().evaluate({"actual": "a b c", "reference": "a b c", "metrics": {"rouge": {}}}),
        judge.evaluate({"input": "2+2?"}),  # no actual: no call is made
    ]
    assert all(isinstance(r, EvaluationResult) for r in results)
    assert [r.passed for r in results] == [True, True, True, True, False]


def test_the_other_evaluators_follow_agenttests_rules_for_missing_values() -> None:
    # contains / regex: a missing actual is "" (no error); a missing list fails with details["error"].
    contains = agenttest.Contains().evaluate({"contains": ["x"]})
    assert (contains.passed, contains.score, contains.error, contains.details["actual"]) == (
        False,
        0.0,
        None,
        "",
    )
    no_list = agenttest.Contains().evaluate({"actual": "x"})
    assert (no_list.passed, no_list.score, no_list.error) == (False, 0.0, None)
    assert no_list.details == {"error": "No 'contains' field specified"}
    regex = agenttest.Regex().evaluate({"actual": "x"})
    assert (regex.passed, regex.score, regex.error) == (False, 0.0, None)
    # metric: both actual and expected are needed.
    for output in ({"actual": 4}, {"expected": 4}):
        metric = agenttest.Metric().evaluate(output)
        assert (metric.passed, metric.score, metric.threshold) == (False, None, None)
        assert metric.error == "Both 'actual' and 'expected' values required for metric evaluation"
    # metrics: an empty or missing actual or reference (expected stands in) is an error.
    for output in ({"reference": "a"}, {"actual": "a", "reference": ""}, {"actual": "a"}):
        metrics = agenttest.Metrics().evaluate({**output, "metrics": {"bleu": {}}})
        assert (metrics.passed, metrics.score) == (False, None)
        assert metrics.error == "Both 'actual' and 'reference' texts are required for metrics evaluation"
    # llm_judge: no actual is an error before any call.
    judge = agenttest.LLMJudge({"api_key": "k", "api_base": "http://127.0.0.1:9/v1"})
    graded = judge.evaluate({"expected": "4"})
    assert (graded.passed, graded.score, graded.error) == (
        False,
        None,
        "No 'actual' value found in test output",
    )


# -- Azure AI Evaluation 1.18: SimilarityEvaluator's eight keys -----------------------------------

KEYS_1_18 = {
    "similarity",
    "similarity_score",
    "similarity_passed",
    "similarity_result",
    "similarity_reason",
    "similarity_status",
    "similarity_threshold",
    "similarity_properties",
}
PROPERTIES_1_18 = {
    "prompt_tokens",
    "completion_tokens",
    "total_tokens",
    "finish_reason",
    "model",
    "sample_input",
    "sample_output",
}
KEYS_1_16 = {
    "similarity",
    "gpt_similarity",
    "similarity_result",
    "similarity_threshold",
    "similarity_prompt_tokens",
    "similarity_completion_tokens",
    "similarity_total_tokens",
    "similarity_finish_reason",
    "similarity_model",
    "similarity_sample_input",
    "similarity_sample_output",
}
QUERY = "Where was Marie Curie born?"
TRUTH = "Marie Curie was born in Warsaw, Poland."


def _similarity(server: LLMServer, grade: int, **options: Any) -> dict[str, Any]:
    server.judge = lambda request: json.dumps({"reason": "Both name Warsaw.", "score": grade})
    config = {"base_url": server.base_url, "api_key": "k", "model": "gpt-4o-mini"}
    evaluator = SimilarityEvaluator(model_config=config, **options)
    out: dict[str, Any] = evaluator(query=QUERY, response="In Warsaw.", ground_truth=TRUTH)
    return out


def test_similarity_returns_exactly_azure_1_18s_keys(llm_server: LLMServer) -> None:
    out = _similarity(llm_server, 4)
    assert set(out) == KEYS_1_18
    assert "gpt_similarity" not in out
    assert out["similarity"] == out["similarity_score"] == 4.0
    assert type(out["similarity"]) is float
    assert type(out["similarity_score"]) is float
    assert out["similarity_passed"] is True
    assert out["similarity_result"] == "pass"
    assert out["similarity_reason"] == "Both name Warsaw."
    assert out["similarity_status"] == "completed"
    assert out["similarity_threshold"] == 3
    assert type(out["similarity_threshold"]) is int


def test_similarity_properties_have_azure_1_18s_keys_and_types(llm_server: LLMServer) -> None:
    properties = _similarity(llm_server, 4)["similarity_properties"]
    assert set(properties) == PROPERTIES_1_18
    tokens = [properties[k] for k in ("prompt_tokens", "completion_tokens", "total_tokens")]
    assert all(type(n) is int for n in tokens)
    assert tokens[0] > 0
    assert tokens[2] == tokens[0] + tokens[1]
    assert properties["model"] == "gpt-4o-mini"
    assert all(type(properties[k]) is str for k in ("finish_reason", "sample_input", "sample_output"))


@pytest.mark.parametrize(
    ("grade", "threshold", "passed", "result"),
    [(2, 3, False, "fail"), (3, 3, True, "pass"), (4, 5, False, "fail"), (5, 5, True, "pass")],
)
def test_similarity_passes_at_or_above_the_threshold(
    llm_server: LLMServer, grade: int, threshold: int, passed: bool, result: str
) -> None:
    out = _similarity(llm_server, grade, threshold=threshold)
    assert (out["similarity_score"], out["similarity_passed"], out["similarity_result"]) == (
        float(grade),
        passed,
        result,
    )
    assert out["similarity_threshold"] == threshold
    assert not math.isnan(out["similarity"])


def test_similarity_gives_azure_1_16s_keys_when_asked(llm_server: LLMServer) -> None:
    out = _similarity(llm_server, 2, result_format="1.16")
    assert set(out) == KEYS_1_16
    assert out["similarity"] == out["gpt_similarity"] == 2.0
    assert (out["similarity_result"], out["similarity_threshold"]) == ("fail", 3)
    assert out["similarity_model"] == "gpt-4o-mini"
    assert type(out["similarity_total_tokens"]) is int
    assert out["similarity_total_tokens"] > 0


def test_similarity_refuses_an_unknown_result_format() -> None:
    config = {"base_url": "http://127.0.0.1:9/v1", "api_key": "k", "model": "m"}
    with pytest.raises(ValueError, match=r"result_format must be one of '1\.18', '1\.16'.*got '1\.17\.0'"):
        SimilarityEvaluator(config, result_format="1.17.0")  # type: ignore[arg-type]


# -- what each release does with answers it cannot fully read ------------------------------------


def _answered(server: LLMServer, answer: str, **options: Any) -> dict[str, Any]:
    server.judge = lambda request: answer
    config = {"base_url": server.base_url, "api_key": "k", "model": "gpt-4o-mini"}
    out: dict[str, Any] = SimilarityEvaluator(config, **options)(
        query=QUERY, response="In Warsaw.", ground_truth=TRUTH
    )
    return out


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ('{"reason": "No grade given."}', "No grade given."),
        ('{"reason": "Null grade.", "score": null}', "Null grade."),
        ("{}", ""),
        ("4", ""),  # JSON, but not an object: 1.18 reads no score from it
        ("[4]", ""),
    ],
)
def test_1_18_answer_without_a_score_is_nan_unknown_not_an_exception(
    llm_server: LLMServer, answer: str, reason: str
) -> None:
    out = _answered(llm_server, answer)
    assert list(out) == [
        "similarity",
        "similarity_score",
        "similarity_passed",
        "similarity_result",
        "similarity_reason",
        "similarity_status",
        "similarity_threshold",
        "similarity_properties",
    ]
    assert math.isnan(out["similarity"])
    assert math.isnan(out["similarity_score"])
    assert type(out["similarity_score"]) is float
    assert out["similarity_passed"] is False
    assert (out["similarity_result"], out["similarity_status"]) == ("unknown", "completed")
    assert (out["similarity_reason"], out["similarity_threshold"]) == (reason, 3)
    assert set(out["similarity_properties"]) == PROPERTIES_1_18
    assert out["similarity_properties"]["total_tokens"] > 0


@pytest.mark.parametrize(
    ("answer", "score", "result"),
    [
        ('{"reason": "Off the scale.", "score": 7}', 7.0, "pass"),
        ('{"reason": "Below it.", "score": 0}', 0.0, "fail"),
        ('{"reason": "A string.", "score": "4"}', 4.0, "pass"),
        ('{"reason": "Half.", "score": 5e-1}', 0.5, "fail"),
    ],
)
def test_1_18_takes_any_number_as_the_score_with_no_range_check(
    llm_server: LLMServer, answer: str, score: float, result: str
) -> None:
    out = _answered(llm_server, answer)
    assert (out["similarity"], out["similarity_score"], out["similarity_result"]) == (score, score, result)
    assert out["similarity_passed"] is (result == "pass")


@pytest.mark.parametrize(
    "answer", ["It is quite similar.", "", "Score: 4", '{"reason": "x", "score": 4} {"score": 1}']
)
def test_1_18_answer_that_is_not_json_raises_json_decode_error(llm_server: LLMServer, answer: str) -> None:
    with pytest.raises(json.JSONDecodeError) as caught:
        _answered(llm_server, answer)
    assert isinstance(caught.value, EvaluationException)  # tracesim's and Azure's except both catch it
    assert caught.value.target.value == "SimilarityEvaluator"
    assert repr(answer) in caught.value.args[0]


def test_1_18_score_that_is_not_a_number_raises_value_error(llm_server: LLMServer) -> None:
    with pytest.raises(ValueError, match="could not convert string to float: 'high'") as caught:
        _answered(llm_server, '{"reason": "x", "score": "high"}')
    assert isinstance(caught.value, EvaluationException)


def test_1_18_skipped_grade_is_azures_not_applicable_result(llm_server: LLMServer) -> None:
    out = _answered(llm_server, '{"status": "skipped", "reason": "the ground truth is empty", "score": null}')
    assert out == {
        "similarity": None,
        "similarity_score": None,
        "similarity_passed": None,
        "similarity_result": "not_applicable",
        "similarity_reason": "Not applicable: the ground truth is empty",
        "similarity_status": "skipped",
        "similarity_threshold": 3,
        "similarity_properties": None,
    }


def test_1_18_properties_samples_are_written_as_azure_writes_them(llm_server: LLMServer) -> None:
    answer = '{"reason": "Both name Warsaw.", "score": 4}'
    properties = _answered(llm_server, answer)["similarity_properties"]
    inputs = {"query": QUERY, "response": "In Warsaw.", "ground_truth": TRUTH}
    assert properties["sample_input"] == json.dumps([{"role": "user", "content": json.dumps(inputs)}])
    assert properties["sample_output"] == json.dumps([{"role": "assistant", "content": answer}])
    assert properties["finish_reason"] == "stop"


@pytest.mark.parametrize(
    ("answer", "score", "result"),
    [
        ('{"reason": "Off the scale.", "score": 7}', 7.0, "pass"),
        ("4", 4.0, "pass"),  # a server ignoring response_format: 1.16's own one-digit answer
        ('{"reason": "Two digits.", "score": 10}', 1.0, "fail"),  # 1.16 reads the first digit
    ],
)
def test_1_16_reads_the_first_digit_of_the_grade(
    llm_server: LLMServer, answer: str, score: float, result: str
) -> None:
    out = _answered(llm_server, answer, result_format="1.16")
    assert set(out) == KEYS_1_16
    assert (out["similarity"], out["gpt_similarity"], out["similarity_result"]) == (score, score, result)


@pytest.mark.parametrize("answer", ["It is quite similar.", "", '{"reason": "No grade."}', '{"score": null}'])
def test_1_16_raises_when_the_grade_has_no_digit(llm_server: LLMServer, answer: str) -> None:
    with pytest.raises(EvaluationException, match=r"1\.16 cannot read the model's answer") as caught:
        _answered(llm_server, answer, result_format="1.16")
    assert (caught.value.blame.value, caught.value.category.value) == ("SystemError", "FAILED_EXECUTION")


# -- the NLP evaluators: exactly 1.18's or 1.16's keys when asked, both by default -----------------------

NLP = [
    (azure.F1ScoreEvaluator, "f1_score", ["f1_score", "f1_result", "f1_threshold"]),
    (azure.BleuScoreEvaluator, "bleu", ["bleu_score", "bleu_result", "bleu_threshold"]),
    (azure.GleuScoreEvaluator, "gleu", ["gleu_score", "gleu_result", "gleu_threshold"]),
    (azure.MeteorScoreEvaluator, "meteor", ["meteor_score", "meteor_result", "meteor_threshold"]),
]
SUFFIXES_1_18 = ["", "_score", "_passed", "_result", "_reason", "_status", "_threshold", "_properties"]


@pytest.mark.parametrize(("cls", "metric", "keys_1_16"), NLP)
def test_nlp_evaluators_return_exactly_one_releases_keys(cls: Any, metric: str, keys_1_16: list[str]) -> None:
    pair = {
        "response": "Marie Curie was born in Warsaw, Poland.",
        "ground_truth": "Marie Curie was born in Warsaw.",
    }
    out = cls(result_format="1.18")(**pair)
    assert list(out) == [f"{metric}{suffix}" for suffix in SUFFIXES_1_18]
    both = cls()(**pair)
    assert list(both) == list(out) + [key for key in keys_1_16 if key not in out]
    assert (out[f"{metric}_reason"], out[f"{metric}_status"], out[f"{metric}_properties"]) == (
        None,
        "completed",
        None,
    )
    old = cls(result_format="1.16")(**pair)
    assert list(old) == keys_1_16
    assert old[keys_1_16[0]] == out[f"{metric}_score"]


def test_rouge_returns_exactly_one_releases_keys() -> None:
    pair = {
        "response": "Marie Curie was born in Warsaw, Poland.",
        "ground_truth": "Marie Curie was born in Warsaw.",
    }
    out = azure.RougeScoreEvaluator(azure.RougeType.ROUGE_1, result_format="1.18")(**pair)
    assert list(out) == [f"rouge{suffix}" for suffix in SUFFIXES_1_18]
    flat = [
        f"rouge_{m}{suffix}"
        for suffix in ("", "_result", "_threshold")
        for m in ("precision", "recall", "f1_score")
    ]
    passed = [f"rouge_{m}_passed" for m in ("precision", "recall", "f1_score")]
    assert list(out["rouge_properties"]) == flat[:6] + passed + flat[6:]
    old = azure.RougeScoreEvaluator(azure.RougeType.ROUGE_1, result_format="1.16")(**pair)
    assert list(old) == flat
    assert {k: old[k] for k in flat} == {k: out["rouge_properties"][k] for k in flat}
    both = azure.RougeScoreEvaluator(azure.RougeType.ROUGE_1)(**pair)
    assert list(both) == list(out) + flat
    assert {k: both[k] for k in flat} == {k: old[k] for k in flat}


@pytest.mark.parametrize("cls", [c for c, _, _ in NLP])
def test_nlp_evaluators_refuse_an_unknown_result_format(cls: Any) -> None:
    accepted = r"result_format must be one of '1\.18', '1\.16', 'both'.*got '1\.17'"
    with pytest.raises(ValueError, match=accepted):
        cls(result_format="1.17")


@pytest.mark.parametrize(("threshold", "result"), [(0, "pass"), (10, "fail")])
def test_similarity_takes_any_threshold_as_azure_does(
    llm_server: LLMServer, threshold: int, result: str
) -> None:
    out = _answered(llm_server, '{"reason": "Close.", "score": 4}', threshold=threshold)
    assert (out["similarity_threshold"], out["similarity_result"]) == (threshold, result)
