"""Differential tests: each evaluator against the library (or an independent implementation)
it must agree with, on generated text."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

import nltk
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rapidfuzz.distance import Levenshtein as RapidLevenshtein
from rouge_score import rouge_scorer

from tracesim.evaluators import from_config
from tracesim.evaluators._arithmetic import _count_py
from tracesim.evaluators._rouge import ROUGE_TYPES
from tracesim.evaluators._tfidf import tfidf_cosine
from tracesim.evaluators._word_overlap import squad_counts, squad_tokens
from tracesim.evaluators.compat import azure, mastra

WORDS = [
    "The",
    "cat",
    "sat",
    "on",
    "the",
    "mat",
    "running",
    "runs",
    "ran",
    "car",
    "auto",
    "Paris",
    "city",
    "don't",
    "it's",
    "U.S.",
    "café",
    "naïve",
    "東京",
    "🍕",
    "42",
    "3.5",
    "(x)",
    '"quoted"',
    "a",
    "I",
]
SEPARATORS = [" ", " ", " ", "\n", ", ", ". ", "! ", "? ", "\t", " - "]
any_text = st.text(st.characters(exclude_categories=("Cs",)), max_size=60)
sentences = st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(SEPARATORS)), max_size=25).map(
    lambda pairs: "".join(word + sep for word, sep in pairs).strip()
)
texts = st.one_of(sentences, sentences, any_text)


# -- cosine vs scikit-learn ----------------------------------------------------------------------


@given(a=texts, b=texts)
def test_cosine_matches_scikit_learn(a: str, b: str) -> None:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    try:
        matrix = TfidfVectorizer().fit_transform([a, b])
    except ValueError:  # "empty vocabulary"
        assert tfidf_cosine(a, b) is None
        assert from_config({"type": "cosine"}).evaluate(a, b).score == (1.0 if a == b else 0.0)
        return
    reference = float(cosine_similarity(matrix[0:1], matrix[1:2])[0][0])
    ours = tfidf_cosine(a, b)
    assert ours == pytest.approx(reference, rel=1e-12, abs=1e-15)
    assert from_config({"type": "cosine"}).evaluate(a, b).score == pytest.approx(
        min(reference, 1.0), abs=1e-15
    )


# -- content_similarity vs a straightforward port of npm string-similarity ----------------------


def npm_compare_two_strings(first: Any, second: Any) -> float:
    """Written from the algorithm's description: greedy bigram matching with a count map."""
    if first == second:
        return 1.0
    if len(first) < 2 or len(second) < 2:
        return 0.0
    counts: dict[Any, int] = {}
    for i in range(len(first) - 1):
        bigram = tuple(first[i : i + 2])
        counts[bigram] = counts.get(bigram, 0) + 1
    matched = 0
    for i in range(len(second) - 1):
        bigram = tuple(second[i : i + 2])
        if counts.get(bigram, 0) > 0:
            counts[bigram] -= 1
            matched += 1
    return (2.0 * matched) / (len(first) + len(second) - 2)


# ECMAScript WhiteSpace and LineTerminator code points (what JavaScript's \s matches).
JS_WHITESPACE = "\t\n\x0b\x0c\r \u00a0\u1680\u2028\u2029\u202f\u205f\u3000\ufeff" + "".join(
    chr(c) for c in range(0x2000, 0x200B)
)


def utf16(text: str) -> list[int]:
    data = text.encode("utf-16-le", "surrogatepass")
    return [data[i] | (data[i + 1] << 8) for i in range(0, len(data), 2)]


@given(a=texts, b=texts)
def test_content_similarity_matches_npm_algorithm(a: str, b: str) -> None:
    expected = npm_compare_two_strings("".join(a.lower().split()), "".join(b.lower().split()))
    assert from_config({"type": "content_similarity"}).evaluate(a, b).score == expected
    kept = npm_compare_two_strings(a, b)
    config = {"type": "content_similarity", "ignore_case": False, "ignore_whitespace": False}
    assert from_config(config).evaluate(a, b).score == kept


@given(a=texts, b=texts)
def test_mastra_counts_utf16_units_and_js_whitespace(a: str, b: str) -> None:
    def js_clean(text: str) -> list[int]:
        return utf16("".join(ch for ch in text.lower() if ch not in JS_WHITESPACE))

    expected = npm_compare_two_strings(js_clean(b), js_clean(a))
    assert mastra.ContentSimilarityMetric().measure(b, a)["score"] == expected


def test_mastra_emoji_is_two_units() -> None:
    # From the conformance file: code points would give 0.9166..., UTF-16 units 0.9090...
    score = mastra.ContentSimilarityMetric().measure("I love pizza 🍔", "I love pizza 🍕")["score"]
    assert score == pytest.approx(0.9090909090909091)


# -- rouge vs rouge-score ------------------------------------------------------------------------


_SCORERS: dict[tuple[str, bool], Any] = {}


@pytest.mark.parametrize("rouge_type", ROUGE_TYPES)
@pytest.mark.parametrize("use_stemmer", [False, True])
@given(a=texts, b=texts)
def test_rouge_matches_rouge_score(rouge_type: str, use_stemmer: bool, a: str, b: str) -> None:
    key = (rouge_type, use_stemmer)
    if key not in _SCORERS:
        _SCORERS[key] = (
            rouge_scorer.RougeScorer([rouge_type], use_stemmer=use_stemmer),
            from_config({"type": "rouge", "rouge_type": rouge_type, "use_stemmer": use_stemmer}),
        )
    scorer, ours = _SCORERS[key]
    reference = scorer.score(b, a)[rouge_type]
    result = ours.evaluate(a, b)
    assert (result.details["precision"], result.details["recall"], result.score) == (
        reference.precision,
        reference.recall,
        reference.fmeasure,
    )


def test_rouge_l_on_long_texts_matches_rouge_score() -> None:
    words = ("alpha beta gamma delta epsilon zeta eta theta iota kappa " * 60).split()
    a = " ".join(words[i] for i in range(0, len(words), 2)) + " " + " ".join(words[::3])
    b = " ".join(reversed(words[::2])) + " " + " ".join(words)
    reference = rouge_scorer.RougeScorer(["rougeL"]).score(b, a)["rougeL"]
    assert from_config({"type": "rouge"}).evaluate(a, b).score == reference.fmeasure


# -- BLEU / GLEU / METEOR vs NLTK on the same tokens ---------------------------------------------


def azure_tokens(text: str) -> list[str]:
    if text.isascii():
        return list(nltk.word_tokenize(text))
    from nltk.tokenize.nist import NISTTokenizer

    return list(NISTTokenizer().international_tokenize(text))


@given(a=texts, b=texts)
def test_token_metrics_match_nltk(a: str, b: str) -> None:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from nltk.translate.gleu_score import sentence_gleu
    from nltk.translate.meteor_score import meteor_score

    hyp, ref = azure_tokens(a), azure_tokens(b)
    bleu = sentence_bleu([ref], hyp, smoothing_function=SmoothingFunction().method4)
    assert from_config({"type": "bleu"}).evaluate(a, b).score == float(bleu)
    assert from_config({"type": "gleu"}).evaluate(a, b).score == sentence_gleu([ref], hyp)
    meteor = meteor_score([ref], hyp, alpha=0.9, beta=3.0, gamma=0.5)
    assert from_config({"type": "meteor"}).evaluate(a, b).score == meteor


# Few distinct tokens, so that hypothesis and reference share n-grams of every order.
token_lists = st.lists(st.sampled_from(["a", "b", "c", "the", "of", ".", "Warsaw"]), max_size=14)


@settings(max_examples=2000)
@given(reference=token_lists, hypothesis=token_lists)
def test_bleu_and_gleu_counts_equal_nltks_bit_for_bit(reference: list[str], hypothesis: list[str]) -> None:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu
    from nltk.translate.gleu_score import sentence_gleu as nltk_gleu

    from tracesim.evaluators._ngrams import sentence_bleu4, sentence_gleu

    bleu = sentence_bleu([reference], hypothesis, smoothing_function=SmoothingFunction().method4)
    assert sentence_bleu4(reference, hypothesis) == float(bleu)
    assert sentence_gleu(reference, hypothesis) == nltk_gleu([reference], hypothesis, min_len=1, max_len=4)


@given(text=texts)
def test_tokenizer_matches_nltk(text: str) -> None:
    result = from_config({"type": "gleu"}).evaluate(text, "x")
    assert result.details["tokens"]["output"] == len(azure_tokens(text))
    expected_name = "nltk.word_tokenize" if text.isascii() else "nltk.NISTTokenizer.international_tokenize"
    assert result.details["tokenizer"]["output"] == expected_name


# -- Levenshtein and F1 vs independent implementations ------------------------------------------


def dp_distance(a: str, b: str) -> int:
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


@given(a=st.text(max_size=30), b=st.text(max_size=30))
def test_levenshtein_matches_dynamic_programming(a: str, b: str) -> None:
    d = dp_distance(a, b)
    assert from_config({"type": "levenshtein_distance"}).evaluate(a, b).score == d
    longest = max(len(a), len(b))
    raw = 1.0 if longest == 0 else 1 - d / longest
    config = {"type": "levenshtein", "case_sensitive": True, "round_to": None}
    assert from_config(config).evaluate(a, b).score == raw
    assert RapidLevenshtein.distance(a, b) == d


def test_levenshtein_cuts_each_string_at_10000_chars() -> None:
    a, b = "x" * 12_000, "x" * 10_000 + "y" * 50
    result = from_config({"type": "levenshtein"}).evaluate(a, b)
    assert result.score == 1.0
    assert result.details["truncated_to"] == 10_000


def squad_f1(prediction: str, truth: str) -> float:
    def normalize(text: str) -> list[str]:
        text = "".join(ch for ch in text.lower() if ch not in set(string.punctuation))
        return " ".join(re.sub(r"\b(a|an|the)\b", " ", text).split()).split()

    p, t = normalize(prediction), normalize(truth)
    common = sum((Counter(p) & Counter(t)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(t)
    return (2.0 * precision * recall) / (precision + recall)


@given(a=texts, b=texts)
def test_f1_matches_squad(a: str, b: str) -> None:
    assert from_config({"type": "f1"}).evaluate(a, b).score == squad_f1(a, b)


# Pieces around the fast paths of squad_counts: articles touching characters that are
# neither word characters nor whitespace (so \b falls inside a word), punctuation that
# joins or splits words, non-ASCII case mappings, lone surrogates, control characters and
# Unicode whitespace. A small vocabulary repeats tokens on both sides.
F1_PIECES = [
    "a", "an", "the", "The", "A", "AN", "tHe", "cat", "cats", "an't", "the’s", "l’a", "€the",
    "the€", "thé", "the\u0301", "a_b", "the_", "_a", "x.the", "a-the", "“a”", "İ", "ǅ", "ⅻ",
    "½", "٣", "東京", "🍕", "1,000", "don't", "\x7fthe", "the\x00", "\ud800", "the\udfff",
]  # fmt: skip
F1_SEPARATORS = [" ", " ", "", "\n", "\t", "\x1c", "\x85", "\xa0", "\u2003", ", ", ".", "’", "-", "_"]
f1_texts = st.one_of(
    st.lists(st.tuples(st.sampled_from(F1_PIECES), st.sampled_from(F1_SEPARATORS)), max_size=40).map(
        lambda pairs: "".join(word + sep for word, sep in pairs)
    ),
    st.text(st.characters(codec=None, categories=None), max_size=80),
    texts,
)


# Few distinct words, many repeats: both sides usually repeat tokens (the multiset path).
repetitive_texts = st.lists(
    st.sampled_from(["cat", "dog", "Cat.", "the", "a", "l’a", "€cat", "42"]), min_size=2, max_size=30
).map(" ".join)


def squad_reference(prediction: str, truth: str) -> tuple[float, int, float, float]:
    """SQuAD F1 as written in the SQuAD v1.1 script (and Azure): f1, common, precision, recall."""

    def normalize(text: str) -> list[str]:
        text = text.lower()
        text = "".join(ch for ch in text if ch not in set(string.punctuation))
        text = re.sub(r"\b(a|an|the)\b", " ", text)
        return " ".join(text.split()).split()

    p, t = normalize(prediction), normalize(truth)
    common = sum((Counter(p) & Counter(t)).values())
    if common == 0:
        return 0.0, 0, 0.0, 0.0
    precision, recall = 1.0 * common / len(p), 1.0 * common / len(t)
    return (2.0 * precision * recall) / (precision + recall), common, precision, recall


@given(a=f1_texts, b=f1_texts)
def test_f1_matches_squad_reference_on_tricky_text(a: str, b: str) -> None:
    f1, common, precision, recall = squad_reference(a, b)
    result = from_config({"type": "f1"}).evaluate(a, b)
    assert result.score == f1
    assert result.details == {"common_tokens": common, "precision": precision, "recall": recall}
    assert azure.F1ScoreEvaluator()(response=a, ground_truth=b)["f1_score"] == f1
    for text in (a, b):
        tokens = " ".join(re.sub(r"\b(a|an|the)\b", " ", text.lower().translate(NO_PUNCTUATION)).split())
        assert squad_tokens(text) == tokens.split()
        assert squad_counts(text) == (dict(Counter(tokens.split())), len(tokens.split()))


NO_PUNCTUATION = str.maketrans("", "", string.punctuation)


@given(a=repetitive_texts, b=st.one_of(repetitive_texts, f1_texts))
def test_f1_counts_repeated_tokens_like_squad_reference(a: str, b: str) -> None:
    f1, common, precision, recall = squad_reference(a, b)
    result = from_config({"type": "f1"}).evaluate(a, b)
    assert result.score == f1
    assert result.details == {"common_tokens": common, "precision": precision, "recall": recall}
    # Swapped, the other side is the smaller token set; the common count is symmetric.
    assert from_config({"type": "f1"}).evaluate(b, a).details["common_tokens"] == common


@given(words=st.lists(st.sampled_from(F1_PIECES), max_size=30))
def test_f1_counting_fallback_counts_like_counter(words: list[str]) -> None:
    counts: dict[str, int] = {}
    _count_py(counts, words)  # used where collections has no C _count_elements
    assert counts == Counter(words)


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("", ""),
        ("a an the", "the"),
        ("the’s cat", "’s cat"),
        ("l’a l’an", "l’ l’"),
        ("€the €a", "€ €"),
        ("the\u0301 a\u0301", "\u0301 \u0301"),
        ("a_the an-the", "athe anthe"),
        ("the\x7f\x7fa", "\x7f\x7f"),
        ("the\x1ca\x85an\xa0cat", "cat"),
        ("cat cat dog", "cat dog dog"),
        ("\ud800the \ud800", "\ud800 \ud800"),
        ("İ the", "i̇"),
    ],
)
def test_f1_edge_cases_match_squad_reference(a: str, b: str) -> None:
    f1, common, _, _ = squad_reference(a, b)
    result = from_config({"type": "f1"}).evaluate(a, b)
    assert (result.score, result.details["common_tokens"]) == (f1, common)


@given(a=texts, b=texts)
def test_jaccard_matches_sets(a: str, b: str) -> None:
    sa, sb = set(a.split()), set(b.split())
    expected = 1.0 if not sa | sb else len(sa & sb) / len(sa | sb)
    assert from_config({"type": "jaccard"}).evaluate(a, b).score == expected


# -- tokenizers on the re engine vs NLTK's own ---------------------------------------------------

PIECES = [*"abcXYZ019 .,;:!?'\"`()[]{}<>-$%&*@#/\\\n\t", "n't", "'s", "--", "...", "can", "wanna", "'Tis"]
PUNCTUATED = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)
INTERNATIONAL = st.lists(
    st.one_of(
        st.characters(exclude_categories=("Cs",)),
        st.characters(categories=("Nd", "No", "Po", "Ps", "Pe", "Pd", "Sc", "Sm", "So", "Zs")),
        st.sampled_from([*"aé5,.€ <>&;", "<skipped>", "&amp;", "&#124;", "\u2028"]),
    ),
    max_size=40,
).map("".join)


@given(text=st.one_of(PUNCTUATED, sentences))
def test_azure_tokenizer_equals_nltk_word_tokenize_on_ascii(text: str) -> None:
    from tracesim.evaluators._tokenize import AzureTokenizer

    if not text.isascii():
        return
    assert AzureTokenizer("test").tokenize(text) == (nltk.word_tokenize(text), "nltk.word_tokenize")


@given(text=INTERNATIONAL)
def test_nist_on_re_equals_nltk(text: str) -> None:
    from nltk.tokenize.nist import NISTTokenizer

    from tracesim.evaluators._nist import NistInternational

    assert NistInternational("test").tokenize(text) == NISTTokenizer().international_tokenize(text)


@given(value=st.floats(min_value=0, max_value=1e6, allow_nan=False), places=st.integers(0, 6))
def test_round_half_up_equals_decimal_rounding_of_repr(value: float, places: int) -> None:
    from decimal import ROUND_HALF_UP, Decimal

    from tracesim.evaluators._arithmetic import round_half_up

    expected = float(Decimal(repr(value)).quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP))
    assert round_half_up(value, places) == expected
