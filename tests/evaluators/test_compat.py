"""Compat façades: the interfaces, defaults and edge cases of each product."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tracesim.evaluators.compat import agenta, agenttest, azure, mastra, twosignal

MARIE_R = "According to wikipedia, Marie Curie was not born in Paris but in Warsaw."
MARIE_E = "Marie Curie was born in Warsaw."


def test_azure_documented_example() -> None:
    # Both releases' keys by default, one release's on request (the golden cases in
    # test_compat_azure.py check every key).
    old = azure.F1ScoreEvaluator(result_format="1.16")(response=MARIE_R, ground_truth=MARIE_E)
    assert list(old.items()) == [
        ("f1_score", 0.631578947368421),
        ("f1_result", "pass"),
        ("f1_threshold", 0.5),
    ]
    out = azure.F1ScoreEvaluator()(response=MARIE_R, ground_truth=MARIE_E)
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
    old_rouge = azure.RougeScoreEvaluator(azure.RougeType.ROUGE_L, result_format="1.16")(
        response=MARIE_R, ground_truth=MARIE_E
    )
    flat = {
        f"rouge_{metric}{suffix}"
        for metric in ("precision", "recall", "f1_score")
        for suffix in ("", "_result", "_threshold")
    }
    newer = {
        f"rouge{suffix}"
        for suffix in ("", "_score", "_passed", "_result", "_reason", "_status", "_threshold")
    }
    assert set(rouge) == newer | {"rouge_properties"} | flat
    assert set(old_rouge) == flat
    assert rouge["rouge_properties"]["rouge_f1_score"] == old_rouge["rouge_f1_score"] == rouge["rouge_score"]
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
    assert azure.RougeScoreEvaluator("rougeL")(**lines)["rouge_properties"]["rouge_recall"] == 0.5
    assert azure.RougeScoreEvaluator("rougeLsum")(**lines)["rouge_properties"]["rouge_recall"] == 1.0


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
    assert result.score == pytest.approx(0.6666666666666666)
    assert result.passed is False
    assert result.details["actual"] == "Python, Java, JavaScript, C++, Go"
    cosine = agenttest.StringSimilarity().evaluate(
        "ML is a subset of AI that enables computers to learn from data",
        "Machine learning allows computers to learn patterns from data automatically",
    )
    assert cosine.score == pytest.approx(0.29876, abs=1e-5)
    assert agenttest.StringSimilarity().evaluate("x", None) == agenttest.EvaluationResult(
        passed=True, score=1.0, threshold=None, details={"reason": "No expected value provided"}, error=None
    )
    assert agenttest.StringSimilarity().evaluate(None, "x").error == "No 'actual' value found in test output"
    empty = agenttest.StringSimilarity().evaluate("a b", "I")
    assert empty.score is None
    assert "empty vocabulary" in empty.error
    assert agenttest.StringSimilarity(method="jaccard").evaluate("", "").score == 0.0
    typo = agenttest.StringSimilarity(method="cosin").evaluate("the cat", "the cat")
    assert typo.details["method"] == "cosin"
    assert typo.passed is True
    many = agenttest.StringSimilarity(method="exact").evaluate_output(
        {
            "test_cases": [
                {"actual": "a", "expected": "a"},
                {"actual": "b", "expected": "c"},
                {"expected": "d"},
            ]
        }
    )
    assert many.score == pytest.approx(1 / 3)
    assert many.passed is False
    assert many.details["passed_cases"] == 1
    assert agenttest.StringSimilarity().evaluate_output("scalar").score == 1.0
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
    assert configured.evaluate(output).score == pytest.approx(4 / 7)
    assert configured.evaluate([{"actual": "a", "expected": "a"}]).details["total_cases"] == 1
    assert configured.evaluate("bare value").details == {"reason": "No expected value provided"}
    # similarity_config, which AgentTest documents but ignores, overrides method and threshold.
    override = {**output, "similarity_config": {"method": "exact", "threshold": 1}}
    assert configured.evaluate(override).score == 0.0
    assert configured.evaluate(override).threshold == 1
    cases = configured.evaluate_output(
        {
            "similarity_config": {"threshold": 0.9},
            "test_cases": [
                {"actual": "kitten", "expected": "kitten"},
                {"actual": "kitten", "expected": "sitting", "similarity_config": {"method": "jaccard"}},
            ],
        }
    )
    individual = cases.details["individual_results"]
    assert [(r["details"]["method"], r["threshold"]) for r in individual] == [
        ("levenshtein", 0.9),
        ("jaccard", 0.9),
    ]
    # As in AgentTest, a metric error on one case fails the whole evaluation.
    stop_words = agenttest.StringSimilarity().evaluate({"test_cases": [{"actual": "a b", "expected": "I"}]})
    assert stop_words.score is None
    assert stop_words.error.startswith("String similarity evaluation failed: empty vocabulary")


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


# -- AgentTest's contains, regex, metrics and llm_judge -----------------------------------------
# The examples come from AgentTest's examples/tests/test_examples_comprehensive.py (0.1.0).

SECURITY = "Your data is protected with end-to-end Encryption and GDPR-compliant privacy controls."


def test_agenttest_contains() -> None:
    contains = agenttest.Contains()
    # Case-insensitive substrings; the score is the fraction found; all must be found; no threshold.
    assert contains.evaluate(
        {"actual": SECURITY, "contains": ["encryption", "secure", "privacy", "GDPR"]}
    ).to_dict() == {
        "passed": False,
        "score": 0.75,
        "threshold": None,
        "details": {
            "contains": ["encryption", "secure", "privacy", "GDPR"],
            "found": ["encryption", "privacy", "GDPR"],
            "missing": ["secure"],
            "actual": SECURITY,
        },
        "error": None,
    }
    assert contains.evaluate({"actual": SECURITY, "contains": "gdpr"}).passed is True  # one value
    assert contains.evaluate({"actual": 30, "contains": [3]}).score == 1.0  # compared as str()
    assert contains.evaluate({"actual": "x", "contains": []}).passed is False  # score 0.0
    assert contains.evaluate({"actual": "x"}).to_dict() == {
        "passed": False,
        "score": 0.0,
        "threshold": None,
        "details": {"error": "No 'contains' field specified"},
        "error": None,
    }
    # The options AgentTest documents (and ignores), from the config or per test.
    out = {"actual": "NumPy and pytorch", "contains": ["NumPy", "PyTorch", "TensorFlow"]}
    assert agenttest.Contains({"case_sensitive": True}).evaluate(out).details["found"] == ["NumPy"]
    assert contains.evaluate({**out, "contains_config": {"match_all": False}}).passed is True
    assert contains.evaluate({**out, "contains_config": {"min_matches": 3}}).passed is False
    whole = {
        "actual": "concatenate the cat",
        "contains": ["cat", "cate"],
        "contains_config": {"partial_match": False},
    }
    assert contains.evaluate(whole).details["missing"] == ["cate"]


def test_agenttest_regex() -> None:
    regex = agenttest.Regex()
    out = {"actual": "Call (555) 123-4567 about ORD-2024-000123", "pattern": r"\(\d{3}\)\s\d{3}-\d{4}"}
    assert regex.evaluate(out).details["pattern_results"] == [
        {"pattern": r"\(\d{3}\)\s\d{3}-\d{4}", "matched": True, "match": "(555) 123-4567"}
    ]
    # The score is the fraction that match; one match passes; a bad pattern counts as unmatched.
    many = regex.evaluate({"actual": out["actual"], "patterns": [r"ORD-\d{4}-\d{6}", r"\$\d+\.\d{2}", "("]})
    assert (many.score, many.passed, many.threshold) == (pytest.approx(1 / 3), True, None)
    assert many.details["pattern_results"][2]["error"].startswith("missing ), unterminated subpattern")
    assert regex.evaluate({"actual": "ord-2024-000123", "patterns": r"ORD-\d+"}).passed is False
    assert regex.evaluate({"actual": "x"}).details == {"error": "No regex pattern(s) specified"}
    # Documented options: flags, match_all, min_matches, extract_groups.
    upper = {"actual": "ord-2024-000123", "patterns": [r"ORD-(\d+)"]}
    configured = agenttest.Regex({"flags": ["IGNORECASE"], "extract_groups": True}).evaluate(upper)
    assert configured.details["pattern_results"][0]["groups"] == ["2024"]
    assert (
        regex.evaluate({**many.details, "actual": out["actual"], "regex_config": {"match_all": True}}).passed
        is False
    )


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: agenttest.Contains({"case_sensitive": "yes"}), TypeError, "must be true or false"),
        (lambda: agenttest.Contains({"mode": "all"}), ValueError, "accepts the keys case_sensitive"),
        (lambda: agenttest.Regex().evaluate({"actual": "a", "patterns": [1]}), TypeError, r"patterns\[0\]"),
        (lambda: agenttest.Regex({"flags": ["IGNORE"]}), ValueError, "IGNORECASE, MULTILINE"),
        (lambda: agenttest.Metrics({"bertscore": {}}), ValueError, "accepts the metrics rouge, bleu, meteor"),
        (
            lambda: agenttest.Metrics().evaluate(
                {"actual": "a", "reference": "b", "metrics": {"bleu": {"n": 2}}}
            ),
            ValueError,
            r"metrics\['bleu'\] accepts the keys min_score, smoothing",
        ),
        (
            lambda: agenttest.Metrics().evaluate({"actual": 5, "reference": "b"}),
            TypeError,
            "'actual' must be a str",
        ),
        (lambda: agenttest.LLMJudge({"provider": "acme"}), ValueError, "provider must be one of openai"),
        (lambda: agenttest.LLMJudge({"api_key": "k", "max_tokens": 4}), TypeError, "integer >= 16"),
    ],
)
def test_agenttest_more_wrong_types_say_what_to_pass(call: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        call()


def _agenttest_rouge(reference: str, actual: str, variants: list[str]) -> float:
    from rouge_score import rouge_scorer  # AgentTest's call: stems on, F1 averaged over the variants

    scores = rouge_scorer.RougeScorer(variants, use_stemmer=True).score(reference, actual)
    return sum(scores[v].fmeasure for v in variants) / len(variants)


def _agenttest_bleu(reference: str, actual: str) -> float:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    tokens = [reference.lower().split()], actual.lower().split()
    return float(sentence_bleu(*tokens, smoothing_function=SmoothingFunction().method1))


def _agenttest_meteor(reference: str, actual: str) -> float:
    from nltk.translate.meteor_score import meteor_score

    return float(meteor_score([reference.lower().split()], actual.lower().split()))


CLOUD_R = (
    "Cloud computing offers scalability, cost savings, accessibility, and improved collaboration for "
    "businesses."
)
CLOUD_A = (
    "Cloud computing provides scalable resources, reduces costs, enables remote access, and enhances team "
    "collaboration."
)
ENERGY_R = (
    "Renewable energy reduces carbon emissions, lowers electricity costs, creates jobs, and provides "
    "sustainable power for the future."
)
ENERGY_A = (
    "Renewable energy sources cut carbon footprint, decrease power bills, generate employment "
    "opportunities, and ensure sustainable electricity supply."
)


def test_agenttest_metrics_give_agenttests_numbers() -> None:
    metrics = agenttest.Metrics()
    rouge = metrics.evaluate(
        {
            "actual": CLOUD_A,
            "reference": CLOUD_R,
            "metrics": {"rouge": {"min_score": 0.4, "variants": ["rouge-1", "rouge-2", "rouge-l"]}},
        }
    )
    assert (
        rouge.score
        == _agenttest_rouge(CLOUD_R, CLOUD_A, ["rouge1", "rouge2", "rougeL"])
        == 0.41452991452991456
    )
    assert (rouge.passed, rouge.threshold) == (True, 0.4)
    assert rouge.details["metric_results"]["rouge"]["details"]["rouge_scores"]["rouge2"] == {
        "precision": 2 / 13,
        "recall": 2 / 11,
        "f1": pytest.approx(1 / 6),
    }
    bleu = metrics.evaluate(
        {
            "actual": "Hola, ¿cómo está usted?",
            "reference": "Hola, ¿cómo estás?",
            "metrics": {"bleu": {"min_score": 0.3, "smoothing": True}},
        }
    )
    assert (
        bleu.score == _agenttest_bleu("Hola, ¿cómo estás?", "Hola, ¿cómo está usted?") == 0.16990442448471224
    )
    assert bleu.passed is False
    # Three metrics: the mean score, the mean min_score, all must pass; `expected` stands in for `reference`.
    three = metrics.evaluate(
        {
            "actual": ENERGY_A,
            "expected": ENERGY_R,
            "metrics": {
                "rouge": {"min_score": 0.5},
                "bleu": {"min_score": 0.3},
                "meteor": {"min_score": 0.4},
            },
        }
    )
    parts = {name: r["score"] for name, r in three.details["metric_results"].items()}
    assert parts == {
        "rouge": _agenttest_rouge(ENERGY_R, ENERGY_A, ["rouge1", "rouge2", "rougeL"]),
        "bleu": _agenttest_bleu(ENERGY_R, ENERGY_A),
        "meteor": _agenttest_meteor(ENERGY_R, ENERGY_A),
    }
    assert (three.score, three.threshold, three.passed) == (
        sum(parts.values()) / 3,
        pytest.approx(0.4),
        False,
    )
    # AgentTest's errors: an unknown metric scores 0 and fails; a bad ROUGE variant; missing inputs.
    odd = metrics.evaluate({"actual": "a b", "reference": "a b", "metrics": {"bleu": {}, "cider": {}}})
    assert odd.details["metric_results"]["cider"] == {
        "passed": False,
        "error": "Unknown metric: cider",
        "score": 0.0,
    }
    bleu_alone = odd.details["metric_results"]["bleu"]
    assert (odd.score, odd.threshold, odd.passed) == (bleu_alone["score"] / 2, 0.3, False)
    bad = metrics.evaluate({"actual": "a", "reference": "a", "metrics": {"rouge": {"variants": ["rougeW"]}}})
    assert (
        bad.details["metric_results"]["rouge"]["error"]
        == "ROUGE evaluation failed: Invalid rouge type: rougeW"
    )
    assert metrics.evaluate({"actual": "a", "metrics": {"bleu": {}}}).error == (
        "Both 'actual' and 'reference' texts are required for metrics evaluation"
    )
    assert (
        metrics.evaluate({"actual": "a", "reference": "a"}).error
        == "No metrics configuration found in test output"
    )


def test_agenttest_metrics_honour_documented_options() -> None:
    # The evaluator entry's config: stands in when the test names no metrics (AgentTest: an error).
    configured = agenttest.Metrics({"rouge": {"variants": ["rouge1"], "use_stemmer": False}, "bleu": None})
    result = configured.evaluate({"actual": "the cats sat", "reference": "the cat sat"})
    assert result.details["metric_results"]["rouge"]["score"] == pytest.approx(2 / 3)  # "cats" is not "cat"
    # BLEU without smoothing (NLTK's warning is not raised: warnings are errors here), and with weights.
    spec = {"actual": "the cat sat on a mat", "reference": "the cat sat on the mat"}
    unsmoothed = agenttest.Metrics().evaluate({**spec, "metrics": {"bleu": {"smoothing": False}}}).score
    from nltk.translate.bleu_score import sentence_bleu

    tokens = [spec["reference"].split()], spec["actual"].split()
    assert unsmoothed == sentence_bleu(*tokens, weights=(0.25, 0.25, 0.25, 0.25))
    bigrams = agenttest.Metrics().evaluate({**spec, "metrics": {"bleu": {"n_grams": [1, 2]}}}).score
    assert bigrams == pytest.approx(sentence_bleu(*tokens, weights=(0.5, 0.5)))
    # METEOR: WordNet synonyms count unless wordnet: false ("auto" and "car" are synonyms).
    car = {"actual": "the auto is red", "reference": "the car is red"}
    with_synonyms = agenttest.Metrics().evaluate({**car, "metrics": {"meteor": {}}}).score
    without = agenttest.Metrics().evaluate({**car, "metrics": {"meteor": {"wordnet": False}}}).score
    assert with_synonyms == _agenttest_meteor(car["reference"], car["actual"]) > without


def test_agenttest_metric() -> None:
    # AgentTest's numeric `metric`: mse by default, pass when the error is at most the threshold (0.1).
    assert agenttest.Metric().evaluate({"actual": "4.2", "expected": 4}).to_dict() == {
        "passed": True,
        "score": pytest.approx(0.96),
        "threshold": 0.1,
        "details": {"actual": 4.2, "expected": 4.0, "error": pytest.approx(0.04), "metric_type": "mse"},
        "error": None,
    }
    assert agenttest.Metric({"type": "relative"}).evaluate({"actual": 0.5, "expected": 0}).passed is False
    assert agenttest.Metric({"type": "mae"}).evaluate({"actual": 9, "expected": 4}).score == 0
    assert agenttest.Metric().evaluate({"actual": "four", "expected": 4}).error == (
        "Values must be numeric for metric evaluation"
    )
    with pytest.raises(ValueError, match="must be one of mse, mae, relative; got 'rmse'"):
        agenttest.Metric({"type": "rmse"})


def test_agenttest_llm_judge(llm_server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    def grade(request: dict[str, Any]) -> str:
        prompt = request["messages"][-1]["content"]
        if "banana" in prompt:
            return "Looks fine to me, I suppose."  # no grade in it
        return json.dumps({"reason": "Right city.", "score": 8 if "Paris" in prompt else 6})

    llm_server.judge = grade
    monkeypatch.setenv("JUDGE_KEY", "secret")
    config = {"model": "judge-model", "api_base": llm_server.base_url, "api_key": "${JUDGE_KEY}"}
    judge = agenttest.LLMJudge(config)
    # The grade (0-10) / 10 is AgentTest's 0.0-1.0 score; it passes at 0.7.
    result = judge.evaluate({"input": "Capital of France?", "actual": "Paris.", "expected": "Paris"})
    assert (result.passed, result.score, result.threshold, result.error) == (True, 0.8, 0.7, None)
    assert {k: result.details[k] for k in ("criteria", "reasoning", "grade", "model")} == {
        "criteria": ["accuracy", "relevance"],
        "reasoning": "Right city.",
        "grade": 8,
        "model": "judge-model",
    }
    sent = llm_server.requests[-1]
    assert sent.headers["authorization"] == "Bearer secret"
    prompt = sent.body["messages"][-1]["content"]
    assert "- accuracy: what the response states is correct" in prompt
    assert "<reference>\nParis" in prompt
    # The test's evaluation_criteria replace the configured ones, with their descriptions.
    lyon = {
        "input": "Capital?",
        "actual": "Lyon",
        "evaluation_criteria": {"empathy": "acknowledges the worry"},
    }
    lyon_result = judge.evaluate(lyon)
    assert (lyon_result.score, lyon_result.passed) == (0.6, False)
    prompt = llm_server.requests[-1].body["messages"][-1]["content"]
    assert "- empathy: acknowledges the worry" in prompt
    assert "<reference>" not in prompt
    # An answer without a grade: a failed result saying so, with the answer kept; never a score.
    unreadable = judge.evaluate({"input": "Fruit?", "actual": "banana"})
    assert (unreadable.passed, unreadable.score) == (False, None)
    assert unreadable.error.startswith("LLM judge evaluation failed: unparseable: no usable score")
    assert unreadable.details["raw"] == "Looks fine to me, I suppose."
    # test_cases: the mean score, every case must pass (an unreadable case scores nothing).
    cases = judge.evaluate([{"actual": "Paris"}, {"actual": "banana"}])
    assert (cases.score, cases.passed, cases.details["passed_cases"]) == (0.4, False, 1)
    # Provider defaults and the API key from the environment, as AgentTest reads them.
    monkeypatch.setenv("GEMINI_API_KEY", "g")
    assert agenttest.LLMJudge({"provider": "gemini"}).base_url == (
        "https://generativelanguage.googleapis.com/v1beta/openai/"
    )
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(
        ValueError, match=r"set llm\.api_key in \.agenttest/config\.yaml or the environment variable"
    ):
        agenttest.LLMJudge({"model": "m"})
