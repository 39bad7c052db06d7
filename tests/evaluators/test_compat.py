"""Compat façades: the interfaces, defaults and edge cases of each product."""

from __future__ import annotations

from typing import Any

import pytest

from tracesim.evaluators.compat import agenta, agenttest, azure, mastra, twosignal

MARIE_R = "According to wikipedia, Marie Curie was not born in Paris but in Warsaw."
MARIE_E = "Marie Curie was born in Warsaw."


def test_azure_documented_example() -> None:
    # The 1.16 dict, then what 1.18 adds (the golden cases in test_compat_azure.py check every key).
    out = azure.F1ScoreEvaluator()(response=MARIE_R, ground_truth=MARIE_E)
    assert list(out.items())[:3] == [
        ("f1_score", 0.631578947368421),
        ("f1_result", "pass"),
        ("f1_threshold", 0.5),
    ]
    assert (out["f1_score_score"], out["f1_score_passed"], out["f1_score_status"]) == (
        0.631578947368421,
        True,
        "completed",
    )
    assert (
        azure.BleuScoreEvaluator(threshold=0.1)(response=MARIE_R, ground_truth=MARIE_E)["bleu_result"]
        == "pass"
    )
    rouge = azure.RougeScoreEvaluator(azure.RougeType.ROUGE_L)(response=MARIE_R, ground_truth=MARIE_E)
    flat = {
        f"rouge_{metric}{suffix}"
        for metric in ("precision", "recall", "f1_score")
        for suffix in ("", "_result", "_threshold")
    }
    newer = {
        f"rouge{suffix}"
        for suffix in ("", "_score", "_passed", "_result", "_reason", "_status", "_threshold")
    }
    assert set(rouge) == flat | newer | {"rouge_properties"}
    assert rouge["rouge_properties"]["rouge_f1_score"] == rouge["rouge_f1_score"] == rouge["rouge_score"]
    assert (
        azure.MeteorScoreEvaluator()(response=MARIE_R, ground_truth=MARIE_E)["meteor_score"]
        == 0.8621140763997908
    )


def test_azure_edge_cases() -> None:
    bleu = azure.BleuScoreEvaluator()(response="x", ground_truth="y")
    assert bleu["bleu_score"] == bleu["bleu"] == 0
    assert type(bleu["bleu_score"]) is int
    for evaluator in (azure.F1ScoreEvaluator(), azure.GleuScoreEvaluator(), azure.MeteorScoreEvaluator()):
        out = evaluator(response="", ground_truth="")
        assert next(iter(out.values())) == 0.0
    with pytest.raises(azure.EvaluationException, match="precision_threshold must be a float"):
        azure.RougeScoreEvaluator("rouge1", precision_threshold=1)  # type: ignore[arg-type]
    with pytest.raises(azure.EvaluationException, match="Either 'conversation' or individual inputs"):
        azure.F1ScoreEvaluator()(response=None, ground_truth="a")
    with pytest.raises(ValueError, match="Invalid rouge type: rougeLsummary"):
        azure.RougeScoreEvaluator("rougeLsummary")
    # rougeLsum (one sentence per line) is taken as Azure takes it: here it finds both halves.
    lines = {"response": "c d a b", "ground_truth": "a b\nc d"}
    assert azure.RougeScoreEvaluator("rougeL")(**lines)["rouge_recall"] == 0.5
    assert azure.RougeScoreEvaluator("rougeLsum")(**lines)["rouge_recall"] == 1.0


def test_agenta() -> None:
    # Jaccard 2/4 = 0.5: passes only when strictly greater than the threshold.
    assert agenta.similarity_match("a b c", "a b d", similarity_threshold=0.5) is False
    assert agenta.similarity_match("a b c", "a b d", similarity_threshold=0.49) is True
    assert agenta.levenshtein_distance("abc", "") == 3
    assert agenta.levenshtein_distance({"content": "abc"}, "abd") == 1
    with pytest.raises(agenta.AgentaEvaluationError):
        agenta.similarity_match("", "  ")
    with pytest.raises(agenta.AgentaEvaluationError):
        agenta.levenshtein_distance(42, "x")


def test_twosignal_documented_examples() -> None:
    lev = twosignal.Levenshtein()
    assert lev.evaluate("The quick brown fox", "The quick brown fox") == {"score": 1.0, "label": "pass"}
    assert lev.evaluate("The quick brown dog", "The quick brown fox") == {"score": 0.89, "label": "pass"}
    assert lev.evaluate("Something entirely different", "The quick brown fox")["score"] == 0.18
    assert twosignal.Levenshtein(case_sensitive=True).evaluate("hello world", "Hello World")["score"] == 0.82
    assert twosignal.Levenshtein(threshold=0.5).evaluate("customer service", "customer support") == {
        "score": 0.63,
        "label": "pass",
    }
    assert lev.evaluate("anything", None) == {"score": 0.0, "label": "fail"}
    assert lev.evaluate("anything", "") == {"score": 0.0, "label": "fail"}


def test_mastra_documented_examples() -> None:
    metric = mastra.ContentSimilarityMetric()
    assert metric.measure(
        "The quick brown fox jumps over the lazy dog.", "A quick brown fox jumped over a lazy dog."
    )["score"] == pytest.approx(0.7761194029850746)
    assert metric.measure("Hello, world!", "hello world")["score"] == 0.8
    assert mastra.ContentSimilarityMetric(ignore_case=False).measure("Hello World", "hello world")[
        "score"
    ] == pytest.approx(0.6666666666666666)
    assert metric.measure("", "") == {"score": 1.0, "info": {"similarity": 1.0}}
    assert metric.measure("abc", "")["score"] == 0.0
    # ignore_whitespace=False changes nothing in Mastra: string-similarity deletes whitespace.
    assert mastra.ContentSimilarityMetric(ignore_whitespace=False).measure("a b c", "abc")["score"] == 1.0


def test_agenttest() -> None:
    sim = agenttest.StringSimilarity(method="jaccard")
    result = sim.evaluate("Python, Java, JavaScript, C++, Go", "JavaScript, Python, Java, C++, Rust")
    assert result["score"] == pytest.approx(0.6666666666666666)
    assert result["passed"] is False
    assert result["details"]["actual"] == "Python, Java, JavaScript, C++, Go"
    cosine = agenttest.StringSimilarity().evaluate(
        "ML is a subset of AI that enables computers to learn from data",
        "Machine learning allows computers to learn patterns from data automatically",
    )
    assert cosine["score"] == pytest.approx(0.29876, abs=1e-5)
    assert agenttest.StringSimilarity().evaluate("x", None) == {
        "passed": True,
        "score": 1.0,
        "threshold": None,
        "details": {"reason": "No expected value provided"},
        "error": None,
    }
    assert (
        agenttest.StringSimilarity().evaluate(None, "x")["error"] == "No 'actual' value found in test output"
    )
    empty = agenttest.StringSimilarity().evaluate("a b", "I")
    assert empty["score"] is None
    assert "empty vocabulary" in empty["error"]
    assert agenttest.StringSimilarity(method="jaccard").evaluate("", "")["score"] == 0.0
    typo = agenttest.StringSimilarity(method="cosin").evaluate("the cat", "the cat")
    assert typo["details"]["method"] == "cosin"
    assert typo["passed"] is True
    many = agenttest.StringSimilarity(method="exact").evaluate_output(
        {
            "test_cases": [
                {"actual": "a", "expected": "a"},
                {"actual": "b", "expected": "c"},
                {"expected": "d"},
            ]
        }
    )
    assert many["score"] == pytest.approx(1 / 3)
    assert many["passed"] is False
    assert many["details"]["passed_cases"] == 1
    assert agenttest.StringSimilarity().evaluate_output("scalar")["score"] == 1.0
    assert agenttest.StringSimilarity.from_config({"method": "exact"}).threshold == 0.8


def test_agenttest_call_shapes() -> None:
    # AgentTest's StringSimilarityEvaluator(config): the mapping is a config, not a method name.
    configured = agenttest.StringSimilarity({"method": "levenshtein", "threshold": 0.5})
    assert (configured.method, configured.threshold) == ("levenshtein", 0.5)
    assert (agenttest.StringSimilarity(None).method, agenttest.StringSimilarity({}).threshold) == (
        "cosine",
        0.8,
    )
    # evaluate(test_output), AgentTest's own call, scores actual against expected.
    output = {"input": "q", "actual": "kitten", "expected": "sitting"}
    assert configured.evaluate(output) == configured.evaluate("kitten", "sitting")
    assert configured.evaluate(output)["score"] == pytest.approx(4 / 7)
    assert configured.evaluate([{"actual": "a", "expected": "a"}])["details"]["total_cases"] == 1
    assert configured.evaluate("bare value")["details"] == {"reason": "No expected value provided"}
    # similarity_config, which AgentTest documents but ignores, overrides method and threshold.
    override = {**output, "similarity_config": {"method": "exact", "threshold": 1}}
    assert configured.evaluate(override)["score"] == 0.0
    assert configured.evaluate(override)["threshold"] == 1
    cases = configured.evaluate_output(
        {
            "similarity_config": {"threshold": 0.9},
            "test_cases": [
                {"actual": "kitten", "expected": "kitten"},
                {"actual": "kitten", "expected": "sitting", "similarity_config": {"method": "jaccard"}},
            ],
        }
    )
    individual = cases["details"]["individual_results"]
    assert [(r["details"]["method"], r["threshold"]) for r in individual] == [
        ("levenshtein", 0.9),
        ("jaccard", 0.9),
    ]
    # As in AgentTest, a metric error on one case fails the whole evaluation.
    stop_words = agenttest.StringSimilarity().evaluate({"test_cases": [{"actual": "a b", "expected": "I"}]})
    assert stop_words["score"] is None
    assert stop_words["error"].startswith("String similarity evaluation failed: empty vocabulary")


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: agenttest.StringSimilarity({"method": "exact"}, 0.5), TypeError, "not both"),
        (lambda: agenttest.StringSimilarity(threshold="0.8"), TypeError, "must be a number such as 0.8"),
        (lambda: agenttest.StringSimilarity(method=3), TypeError, "must be one of cosine, levenshtein"),
        (
            lambda: agenttest.StringSimilarity({"methd": "exact"}),
            ValueError,
            "keys method, threshold; got methd",
        ),
        (
            lambda: agenttest.StringSimilarity({"name": "similarity", "type": "string_similarity"}),
            ValueError,
            "pass the entry's 'config:' mapping",
        ),
        (
            lambda: agenttest.StringSimilarity().evaluate({"test_cases": "x"}),
            TypeError,
            "test_cases must be a list",
        ),
        (
            lambda: agenttest.StringSimilarity().evaluate([{"actual": "a"}, "b"]),
            TypeError,
            r"test_cases\[1\]",
        ),
        (
            lambda: agenttest.StringSimilarity().evaluate({"actual": "a", "similarity_config": "exact"}),
            TypeError,
            "similarity_config must be a dict",
        ),
        (
            lambda: agenttest.StringSimilarity().evaluate(
                {"actual": "a", "similarity_config": {"method": "levenstein"}}
            ),
            ValueError,
            "must be one of cosine, levenshtein, jaccard, exact; got 'levenstein'",
        ),
    ],
)
def test_agenttest_wrong_types_say_what_to_pass(call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()
