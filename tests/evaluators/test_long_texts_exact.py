"""Exact numbers on long texts: off the host's scoring threads every evaluator scores the whole
text and gives the reference tool's number; on them the default caps stay, and say so once.

The reference tools are the real packages (NLTK, rouge-score, scikit-learn, rapidfuzz); the
texts come from ``long_texts.answer_pair`` (seeded, built in the test).
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Callable
from typing import Any

import nltk
import pytest
from long_texts import answer_pair, on_scoring_thread
from rapidfuzz.distance import Levenshtein as RapidLevenshtein
from rouge_score import rouge_scorer

import tracesim
from tracesim.evaluators import Meteor, Rouge, from_config
from tracesim.evaluators._long_texts import DEFAULT, Caps, CutsLongTexts, TextCap
from tracesim.evaluators.compat import azure
from tracesim.testing import capture_spans
from tracesim.tracefile import SpanRecord

Reference = Callable[[str, str], float]


def nltk_meteor(output: str, expected: str) -> float:
    from nltk.translate.meteor_score import meteor_score

    # ASCII texts: Azure's tokenizer (and so tracesim's) is NLTK's word_tokenize
    hypothesis, reference = nltk.word_tokenize(output), nltk.word_tokenize(expected)
    return float(meteor_score([reference], hypothesis, alpha=0.9, beta=3.0, gamma=0.5))


def nltk_bleu(output: str, expected: str) -> float:
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    hypothesis, reference = nltk.word_tokenize(output), nltk.word_tokenize(expected)
    return float(sentence_bleu([reference], hypothesis, smoothing_function=SmoothingFunction().method4))


def nltk_gleu(output: str, expected: str) -> float:
    from nltk.translate.gleu_score import sentence_gleu

    return float(sentence_gleu([nltk.word_tokenize(expected)], nltk.word_tokenize(output)))


def rouge_score_f1(rouge_type: str) -> Reference:
    def score(output: str, expected: str) -> float:
        return float(rouge_scorer.RougeScorer([rouge_type]).score(expected, output)[rouge_type].fmeasure)

    return score


def sklearn_cosine(output: str, expected: str) -> float:
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.metrics.pairwise import cosine_similarity

    matrix = TfidfVectorizer().fit_transform([output, expected])
    return min(float(cosine_similarity(matrix[0:1], matrix[1:2])[0][0]), 1.0)


def rapidfuzz_distance(output: str, expected: str) -> float:
    return float(RapidLevenshtein.distance(output, expected))


# Each evaluator whose default cap differs by place, its cap on a host's scoring thread and the
# reference tool's number (None: the evaluator with max_chars=None, which the differential tests
# hold to its reference). Its texts are 9 % over that cap (METEOR's and ROUGE-Lsum's: the
# issue's 10.9 KB).
CASES: dict[str, tuple[dict[str, Any], int, Reference | None]] = {
    "meteor": ({"type": "meteor"}, 10_000, nltk_meteor),
    "rougeLsum": ({"type": "rouge", "rouge_type": "rougeLsum"}, 10_000, rouge_score_f1("rougeLsum")),
    "bleu": ({"type": "bleu"}, 20_000, nltk_bleu),
    "gleu": ({"type": "gleu"}, 20_000, nltk_gleu),
    "rouge2": ({"type": "rouge", "rouge_type": "rouge2"}, 50_000, rouge_score_f1("rouge2")),
    "levenshtein_distance": ({"type": "levenshtein_distance"}, 40_000, rapidfuzz_distance),
    "cosine": ({"type": "cosine"}, 100_000, sklearn_cosine),
    "jaccard": ({"type": "jaccard"}, 100_000, None),
    "f1": ({"type": "f1"}, 100_000, None),
    "content_similarity": ({"type": "content_similarity"}, 100_000, None),
}


@functools.cache
def _pair(size: int) -> tuple[str, str]:
    return answer_pair(size)


def _texts(name: str) -> tuple[str, str]:
    return _pair(CASES[name][1] * 109 // 100)


def _equal(name: str, score: float | None, reference: float | None) -> bool:
    # scikit-learn's cosine sums in another order: equal to 1e-12 (as test_differential holds it)
    return score == (pytest.approx(reference, rel=1e-12, abs=1e-15) if name == "cosine" else reference)


def _reference(name: str, output: str, expected: str) -> float:
    config, _, reference = CASES[name]
    if reference is None:
        score = from_config({**config, "max_chars": None}).evaluate(output, expected).score
        assert score is not None
        return score
    return reference(output, expected)


@pytest.mark.parametrize("name", sorted(CASES))
def test_off_the_hosts_threads_the_whole_text_gives_the_reference_number(name: str) -> None:
    config, thread_cap, _ = CASES[name]
    output, expected = _texts(name)
    assert min(len(output), len(expected)) > thread_cap  # both texts over the thread's cap
    result = from_config(config).evaluate(output, expected)
    assert result.status == "ok", result.error
    assert "truncated_to" not in result.details
    assert _equal(name, result.score, _reference(name, output, expected))


@pytest.mark.parametrize("name", sorted(CASES))
def test_on_a_scoring_thread_the_default_cap_stays_and_is_marked(name: str) -> None:
    config, thread_cap, _ = CASES[name]
    output, expected = _texts(name)
    evaluator = from_config(config)
    assert isinstance(evaluator, CutsLongTexts)
    result = on_scoring_thread(lambda: evaluator.evaluate(output, expected))
    assert result.details["truncated_to"] == thread_cap
    assert on_scoring_thread(lambda: evaluator.max_chars) == thread_cap
    head, tail = output[:thread_cap], expected[:thread_cap]
    if name == "rougeLsum":  # and the first 50 lines
        head, tail = "\n".join(head.split("\n")[:50]), "\n".join(tail.split("\n")[:50])
    assert _equal(name, result.score, _reference(name, head, tail))


def test_the_issues_numbers_meteor_and_rouge_lsum_on_a_10_9_kb_answer() -> None:
    output, expected = _pair(10_900)
    meteor, lsum = Meteor(), Rouge("rougeLsum")
    assert meteor.evaluate(output, expected).score == nltk_meteor(output, expected)
    assert lsum.evaluate(output, expected).score == rouge_score_f1("rougeLsum")(output, expected)
    on_thread = on_scoring_thread(
        lambda: (meteor.evaluate(output, expected), lsum.evaluate(output, expected))
    )
    assert on_thread[0].score != nltk_meteor(output, expected)  # the cap changes the number
    assert on_thread[1].score != rouge_score_f1("rougeLsum")(output, expected)
    # and the Azure façades follow their core evaluators
    direct = azure.MeteorScoreEvaluator(result_format="1.18")(response=output, ground_truth=expected)
    assert direct["meteor_score"] == nltk_meteor(output, expected)
    rouge = azure.RougeScoreEvaluator("rougeLsum", result_format="1.18")
    threaded = on_scoring_thread(lambda: rouge(response=output, ground_truth=expected))
    assert threaded["rouge_score"] == on_thread[1].score


@pytest.mark.parametrize("given", [5_000, None])
def test_a_max_chars_you_give_is_used_in_both_places(
    given: int | None, caplog: pytest.LogCaptureFixture
) -> None:
    output, expected = _pair(10_900)
    evaluator = Meteor(max_chars=given)
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        threaded = on_scoring_thread(lambda: evaluator.evaluate(output, expected))
    direct = evaluator.evaluate(output, expected)
    assert threaded.score == direct.score
    assert threaded.details.get("truncated_to") == direct.details.get("truncated_to") == given
    assert on_scoring_thread(lambda: evaluator.max_chars) == evaluator.max_chars == given
    if given is None:
        assert direct.score == nltk_meteor(output, expected)
    assert not [r for r in caplog.records if "max_chars=None" in r.getMessage()]  # a choice: not said


def test_a_default_cap_that_cuts_on_the_host_is_said_once_per_evaluator(
    caplog: pytest.LogCaptureFixture,
) -> None:
    output, expected = _pair(10_900)
    first, second = Meteor(name="meteor_a"), Meteor(name="meteor_b")
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        on_scoring_thread(lambda: first.evaluate(expected[:9_000], expected[:9_000]))  # under the cap
        first.evaluate(output, expected)  # off the host's threads: whole
        for _ in range(3):
            on_scoring_thread(lambda: first.evaluate(output, expected))
        on_scoring_thread(lambda: second.evaluate(output, expected))
    said = [r.getMessage() for r in caplog.records if "scoring_processes" in r.getMessage()]
    assert len(said) == 2, said
    assert "'meteor_a'" in said[0]
    assert "'meteor_b'" in said[1]
    for needed in ("10,000", f"{len(output):,}", f"{len(expected):,}", "max_chars=None", "scoring_processes"):
        assert needed in said[0]


def test_rouge_lsum_lines_cut_on_the_host_are_said_too(caplog: pytest.LogCaptureFixture) -> None:
    lines = "\n".join(f"line {i}" for i in range(80))
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        result = on_scoring_thread(lambda: Rouge("rougeLsum").evaluate(lines, lines))
    assert result.details["truncated_to_lines"] == 50
    said = [r.getMessage() for r in caplog.records if "scoring_processes" in r.getMessage()]
    assert len(said) == 1
    assert "the first 50 lines of texts of 80 and 80 lines" in said[0]


def test_the_worker_bound_still_holds_off_the_host() -> None:
    words = " ".join(f"w{i}" for i in range(200_000))  # about 1.3 MB
    assert len(words) > 1_000_000
    evaluator = from_config({"type": "jaccard"})
    assert isinstance(evaluator, CutsLongTexts)
    assert evaluator.max_chars == 1_000_000
    assert evaluator.evaluate(words, words[::-1]).details["truncated_to"] == 1_000_000


def test_text_cap_resolves_the_place_at_call_time() -> None:
    cap = TextCap("bleu", DEFAULT, Caps(thread=3, worker=5))
    assert cap.limit() == 5
    assert on_scoring_thread(cap.limit) == 3
    assert cap.cut("abcdefg", "ab", "bleu") == ("abcde", "ab", 5)
    assert on_scoring_thread(lambda: cap.cut("abcdefg", "ab", "bleu")) == ("abc", "ab", 3)
    assert TextCap("bleu", None, Caps(3, 5)).cut("abcdefg", "ab", "bleu") == ("abcdefg", "ab", None)


# -- through tracesim's own scoring ----------------------------------------------------------------


def _result(span: SpanRecord, name: str) -> tuple[float, dict[str, Any]]:
    for event in span.event("gen_ai.evaluation.result"):
        if event.attributes["gen_ai.evaluation.name"] == name:
            details = json.loads(str(event.attributes.get("tracesim.evaluation.details", "{}")))
            return float(event.attributes["gen_ai.evaluation.score.value"]), details
    raise AssertionError(f"no {name} result on {span.name}")


def _scored_online(output: str, expected: str, **settings: Any) -> tuple[float, dict[str, Any]]:
    with capture_spans(**settings) as captured:

        @tracesim.trace(evaluators=[Meteor()], expected=expected)
        def answer() -> str:
            return output

        answer()
        # generous: a worker process starts and loads WordNet first, on a shared machine
        assert tracesim.force_flush(timeout_s=240), "scores still pending after 240 s"
        return _result(captured.by_name("answer"), "meteor")


def test_online_scoring_threads_keep_the_cap_inline_and_processes_score_whole_texts(
    caplog: pytest.LogCaptureFixture,
) -> None:
    output, expected = _pair(10_900)
    exact = nltk_meteor(output, expected)
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        threads = _scored_online(output, expected, scoring_mode="background", scoring_processes=0)
    assert threads[1]["truncated_to"] == 10_000
    assert threads[0] == pytest.approx(nltk_meteor(output[:10_000], expected[:10_000]), abs=1e-12)
    assert any("'meteor'" in r.getMessage() and "scoring_processes" in r.getMessage() for r in caplog.records)
    inline = _scored_online(output, expected, scoring_mode="inline", scoring_processes=0)
    assert "truncated_to" not in inline[1]
    assert inline[0] == pytest.approx(exact, abs=1e-12)
    processes = _scored_online(
        output, expected, scoring_mode="background", scoring_processes=1, max_defer_s=240
    )
    assert "truncated_to" not in processes[1], processes
    assert processes[0] == pytest.approx(exact, abs=1e-12)
