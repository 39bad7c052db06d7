"""The paths taken on long inputs give the reference numbers: GIL-free rapidfuzz calls,
chunked bigram counts, and ROUGE-Lsum's bit-vector LCS against rouge-score's tables."""

from __future__ import annotations

import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from long_texts import on_scoring_thread
from rapidfuzz.distance import Indel, LCSseq
from rapidfuzz.distance import Levenshtein as RapidLevenshtein
from rouge_score import rouge_scorer, tokenize
from stall_meter import english, random_unicode

from tracesim.evaluators import Rouge, from_config
from tracesim.evaluators._content_similarity import _PIECE, dice_bigrams
from tracesim.evaluators._gil_free import _RELEASE_ABOVE, int_score
from tracesim.evaluators._levenshtein import edit_distance
from tracesim.evaluators._rouge_lsum import lcs_indices

# -- rapidfuzz with the GIL released --------------------------------------------------------------


@pytest.mark.parametrize("make", [english, random_unicode])
def test_long_distances_equal_the_direct_rapidfuzz_call(make: object) -> None:
    a, b = make(3_000, 1), make(2_500, 2)  # type: ignore[operator]
    assert len(a) * len(b) > _RELEASE_ABOVE  # the cdist path
    assert edit_distance(a, b) == RapidLevenshtein.distance(a, b)
    assert int_score(LCSseq.similarity, a, b) == LCSseq.similarity(a, b)
    assert int_score(Indel.distance, a, b) == Indel.distance(a, b)
    ids_a = [ord(c) % 50 for c in a]
    ids_b = [ord(c) % 50 for c in b]
    assert int_score(LCSseq.similarity, ids_a, ids_b) == LCSseq.similarity(ids_a, ids_b)


def test_long_rouge_l_equals_the_direct_lcs() -> None:
    a, b = english(20_000, 1), english(20_000, 2)
    tokens_a, tokens_b = tokenize.tokenize(a, None), tokenize.tokenize(b, None)
    assert len(tokens_a) * len(tokens_b) > _RELEASE_ABOVE  # the cdist path
    ids: dict[str, int] = {}
    lcs = LCSseq.similarity(
        [ids.setdefault(t, len(ids)) for t in tokens_b], [ids.setdefault(t, len(ids)) for t in tokens_a]
    )
    result = Rouge("rougeL").evaluate(a, b)
    assert (result.details["precision"], result.details["recall"]) == (
        lcs / len(tokens_a),
        lcs / len(tokens_b),
    )


# -- content similarity counted in pieces ----------------------------------------------------------


def counter_dice(first: str, second: str) -> float:
    if first == second:
        return 1.0
    if len(first) < 2 or len(second) < 2:
        return 0.0
    a = Counter(first[i : i + 2] for i in range(len(first) - 1))
    b = Counter(second[i : i + 2] for i in range(len(second) - 1))
    return 2.0 * sum((a & b).values()) / (len(first) + len(second) - 2)


@pytest.mark.parametrize("length", [_PIECE - 1, _PIECE, _PIECE + 1, _PIECE + 2, 2 * _PIECE + 7])
def test_bigrams_across_piece_boundaries(length: int) -> None:
    a, b = random_unicode(length, 1), random_unicode(length + 3, 2)
    assert dice_bigrams(a, b) == counter_dice(a, b)
    assert dice_bigrams(a, a[:-1] + "x") == counter_dice(a, a[:-1] + "x")


# -- ROUGE-Lsum: bit vectors against rouge-score's tables -----------------------------------------

small_tokens = st.lists(st.sampled_from("abcd"), max_size=40)


@given(ref=small_tokens, can=small_tokens)
def test_lcs_indices_pick_rouge_scores_lcs(ref: list[str], can: list[str]) -> None:
    assert lcs_indices(ref, can) == rouge_scorer.lcs_ind(ref, can)


LINE_WORDS = ["the", "cat", "sat", "on", "mat", "a", "dog", "ran", "runs", "running", "x1", "Paris"]
multiline = st.lists(st.lists(st.sampled_from(LINE_WORDS), max_size=12).map(" ".join), max_size=12).map(
    "\n".join
)


@pytest.mark.parametrize("use_stemmer", [False, True])
@given(a=multiline, b=multiline)
def test_rouge_lsum_matches_rouge_score_on_lines(use_stemmer: bool, a: str, b: str) -> None:
    reference = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=use_stemmer).score(b, a)["rougeLsum"]
    result = from_config({"type": "rouge", "rouge_type": "rougeLsum", "use_stemmer": use_stemmer}).evaluate(
        a, b
    )
    assert (result.details["precision"], result.details["recall"], result.score) == (
        reference.precision,
        reference.recall,
        reference.fmeasure,
    )


def test_rouge_lsum_on_a_long_summary_matches_rouge_score() -> None:
    rng = random.Random(7)

    def summary() -> str:
        return "\n".join(" ".join(rng.choices(LINE_WORDS, k=rng.randint(5, 40))) for _ in range(30))

    a, b = summary(), summary()
    assert max(len(a), len(b)) < 10_000  # under the default cap
    reference = rouge_scorer.RougeScorer(["rougeLsum"]).score(b, a)["rougeLsum"]
    result = Rouge("rougeLsum").evaluate(a, b)
    assert "truncated_to" not in result.details
    assert (result.details["precision"], result.details["recall"], result.score) == (
        reference.precision,
        reference.recall,
        reference.fmeasure,
    )


def test_rouge_lsum_keeps_the_first_50_lines_on_a_scoring_thread_and_300_elsewhere() -> None:
    lines = [f"line {i} of the text" for i in range(80)]
    output, expected = "\n".join(lines), "\n".join(lines[:50])
    result = on_scoring_thread(lambda: Rouge("rougeLsum").evaluate(output, expected))
    assert result.details["truncated_to_lines"] == 50
    assert result.score == 1.0
    short = on_scoring_thread(lambda: Rouge("rougeLsum").evaluate(expected, expected))
    assert "truncated_to_lines" not in short.details
    given = Rouge("rougeLsum", max_chars=5_000).evaluate(output, expected)  # a cap you give: 50 lines
    assert given.details["truncated_to_lines"] == 50
    uncapped = on_scoring_thread(lambda: Rouge("rougeLsum", max_chars=None).evaluate(output, expected))
    assert "truncated_to_lines" not in uncapped.details
    assert uncapped.score is not None
    assert uncapped.score < 1.0
    direct = Rouge("rougeLsum").evaluate(output, expected)  # off the host's threads: 300 lines
    assert "truncated_to_lines" not in direct.details
    assert direct.score == uncapped.score
    many = [f"line {i}" for i in range(400)]
    bounded = Rouge("rougeLsum").evaluate("\n".join(many), "\n".join(many[:350]))
    assert (bounded.details["truncated_to_lines"], bounded.score) == (300, 1.0)
