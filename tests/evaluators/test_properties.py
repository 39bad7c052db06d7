"""Property tests: every evaluator takes any Unicode text (no lone surrogates) without raising,
keeps its score in range, and gives its top score to identical inputs where it has one."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tracesim.evaluators import from_config
from tracesim.evaluators._rouge import ROUGE_TYPES
from tracesim.evaluators.compat import agenta, agenttest, azure, mastra, twosignal

WORDS = [
    "the",
    "cat",
    "sat",
    "on",
    "mat",
    "Paris",
    "is",
    "capital",
    "don't",
    "café",
    "東京",
    "🍕",
    "a",
    "I",
    "42",
]
SEPARATORS = [" ", "  ", "\n", ", ", ". ", "\t", "! "]

any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=80)
sentences = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=14).map(
    lambda pairs: "".join(word + sep for word, sep in pairs).strip()
)
texts = st.one_of(any_text, sentences)

CONFIGS: list[dict[str, Any]] = [
    {"type": "exact"},
    {"type": "exact", "case_sensitive": False, "strip": True},
    {"type": "exact", "json": True},
    {"type": "levenshtein"},
    {"type": "levenshtein", "round_to": None, "case_sensitive": True},
    {"type": "levenshtein", "max_chars": 5},
    {"type": "jaccard"},
    {"type": "jaccard", "lowercase": True},
    {"type": "cosine"},
    {"type": "content_similarity"},
    {"type": "content_similarity", "ignore_case": False, "ignore_whitespace": False},
    {"type": "f1"},
    {"type": "bleu"},
    {"type": "gleu"},
    {"type": "meteor"},
    {"type": "meteor", "synonyms": False},
    *({"type": "rouge", "rouge_type": t} for t in ROUGE_TYPES),
    {"type": "rouge", "rouge_type": "rougeL", "use_stemmer": True},
]
EVALUATORS = {str(sorted(c.items())): from_config(c) for c in CONFIGS}
IDS = list(EVALUATORS)


@pytest.mark.parametrize("key", IDS)
@given(output=texts, expected=texts)
def test_any_text_scores_in_range(key: str, output: str, expected: str) -> None:
    result = EVALUATORS[key].evaluate(output, expected)
    if result.status == "error":  # by design: exact(json=True) with a reference that is not JSON
        assert "json" in key, result.error
        assert result.error_type == "JSONDecodeError", result.error
        return
    assert result.status == "ok", result.error
    assert result.score is not None
    assert 0.0 <= result.score <= 1.0


@given(output=texts, expected=texts)
def test_levenshtein_distance_range(output: str, expected: str) -> None:
    result = from_config({"type": "levenshtein_distance"}).evaluate(output, expected)
    assert result.status == "ok"
    assert result.score == int(result.score or 0)
    assert abs(len(output) - len(expected)) <= result.score <= max(len(output), len(expected))


TOP_SCORE_ALWAYS = ["exact", "levenshtein", "jaccard", "content_similarity", "cosine"]


@pytest.mark.parametrize("type_name", TOP_SCORE_ALWAYS)
@given(text=texts)
def test_identical_inputs_get_the_top_score(type_name: str, text: str) -> None:
    assert from_config({"type": type_name}).evaluate(text, text).score == pytest.approx(1.0, abs=1e-12)


@given(text=texts)
def test_identical_distance_is_zero(text: str) -> None:
    assert from_config({"type": "levenshtein_distance"}).evaluate(text, text).score == 0


@given(text=texts)
def test_identical_token_metrics(text: str) -> None:
    f1 = EVALUATORS[str(sorted({"type": "f1"}.items()))].evaluate(text, text)
    gleu = EVALUATORS[str(sorted({"type": "gleu"}.items()))].evaluate(text, text)
    bleu = EVALUATORS[str(sorted({"type": "bleu"}.items()))].evaluate(text, text)
    meteor = EVALUATORS[str(sorted({"type": "meteor"}.items()))].evaluate(text, text)
    tokens = gleu.details["tokens"]["output"]
    # F1 is 1 when something survives SQuAD normalisation, else 0 (Azure: "" vs "" is 0).
    assert f1.score in (0.0, 1.0)
    assert gleu.score == (1.0 if tokens else 0.0)
    if tokens >= 4:  # BLEU's 4-gram precision exists only from four tokens on
        assert bleu.score == pytest.approx(1.0)
    # METEOR of identical texts: all words match in one chunk -> 1 - gamma * (1/n)^beta.
    expected_meteor = 1 - 0.5 * (1 / tokens) ** 3 if tokens else 0.0
    assert meteor.score == pytest.approx(expected_meteor)


@pytest.mark.parametrize("rouge_type", ROUGE_TYPES)
@given(text=texts)
def test_identical_rouge(rouge_type: str, text: str) -> None:
    result = EVALUATORS[str(sorted({"type": "rouge", "rouge_type": rouge_type}.items()))].evaluate(text, text)
    assert result.score in (0.0, 1.0) or result.score == pytest.approx(1.0)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | any_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(any_text, children, max_size=4),
    max_leaves=10,
)


@pytest.mark.parametrize("key", IDS)
@given(output=json_values, expected=json_values.filter(lambda v: v is not None))
def test_any_value_never_raises(key: str, output: Any, expected: Any) -> None:
    result = EVALUATORS[key].evaluate(output, expected)
    assert result.status in ("ok", "error")
    if result.status == "error":  # only a JSON comparison with an unparseable reference
        assert "json" in key


AZURE = [
    azure.F1ScoreEvaluator(),
    azure.BleuScoreEvaluator(),
    azure.GleuScoreEvaluator(),
    azure.MeteorScoreEvaluator(),
    azure.RougeScoreEvaluator(azure.RougeType.ROUGE_L),
]


@given(response=texts, ground_truth=texts)
def test_compat_facades_never_raise(response: str, ground_truth: str) -> None:
    for evaluator in AZURE:
        out = evaluator(response=response, ground_truth=ground_truth)
        assert all(v in ("pass", "fail") for k, v in out.items() if k.endswith("_result"))
    assert isinstance(agenta.levenshtein_distance(response, ground_truth), int)
    if response.split() or ground_truth.split():
        assert isinstance(agenta.similarity_match(response, ground_truth), bool)
    two = twosignal.Levenshtein().evaluate(response, ground_truth)
    assert 0.0 <= two["score"] <= 1.0
    assert two["label"] in ("pass", "fail")
    dice = mastra.ContentSimilarityMetric().measure(ground_truth, response)
    assert 0.0 <= dice["score"] <= 1.0
    for method in agenttest.METHODS:
        result = agenttest.StringSimilarity(method=method).evaluate(response, ground_truth)
        assert result.error is None or "empty vocabulary" in result.error
