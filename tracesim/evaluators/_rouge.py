"""``rouge``: ROUGE-N / ROUGE-L / ROUGE-Lsum with the numbers of Google's ``rouge-score``."""

from __future__ import annotations

import functools
from collections.abc import Callable
from itertools import repeat
from typing import Any

from rapidfuzz.distance import LCSseq

from tracesim.evaluators._arithmetic import count_into
from tracesim.evaluators._base import DEFAULT, Evaluator, Measurement, _Default
from tracesim.evaluators._gil_free import int_score, warm_up
from tracesim.evaluators._long_texts import Caps, CutsLongTexts, TextCap
from tracesim.evaluators._options import check_bool, check_choice, require_number
from tracesim.evaluators._rouge_lsum import summary_level_lcs

__all__ = ["LSUM_CAPS", "ROUGE_CAPS", "ROUGE_TYPES", "Rouge"]

# rouge-score takes any n; Azure AI Evaluation passes on rouge1 to rouge9
ROUGE_TYPES = (*(f"rouge{n}" for n in range(1, 10)), "rougeL", "rougeLsum")
#: Default caps per text (see ``_long_texts``): on a host's scoring thread, a call at the cap
#: takes ~0.1-0.2 s; anywhere else 100,000 characters take ~0.1-0.7 s (~3 s at worst: Porter
#: stems of 17,000 distinct random words). rougeL's LCS grows with the product of the token
#: counts on texts of many distinct words (7.9 s at 500,000 characters of random Unicode).
ROUGE_CAPS = Caps(thread=50_000, worker=100_000)
#: rougeLsum compares every reference line with every candidate line: its cost grows with
#: (tokens of one text) x (lines of the other), so it keeps fewer characters, and lines:
#: 10,000 and 50 lines on a host's scoring thread (~0.1 s at worst), 30,000 and 300 lines
#: anywhere else (~1.4 s at worst, 300 lines of 17 words, on a loaded machine; 500 lines of
#: 17 words took 2.7-3.4 s, 1,000 lines of 8 words 4.8 s).
LSUM_CAPS = Caps(thread=10_000, worker=30_000, lines=(50, 300))


class _Stemmer:
    """NLTK's Porter stemmer (as rouge-score uses it) with a per-process word cache."""

    def __init__(self) -> None:
        from nltk.stem import porter

        self.stem = functools.lru_cache(maxsize=65_536)(porter.PorterStemmer().stem)


@functools.cache
def _shared_stemmer() -> _Stemmer:
    return _Stemmer()


def _lcs_length(a: list[str], b: list[str]) -> int:
    # Tokens become small ints (exact, collision-free), then rapidfuzz's bit-parallel LCS
    # (without the GIL on long texts).
    ids: dict[str, int] = {}
    return int_score(
        LCSseq.similarity, [ids.setdefault(t, len(ids)) for t in a], [ids.setdefault(t, len(ids)) for t in b]
    )


def _ngram_counts(tokens: list[str], n: int) -> dict[str, int]:
    # rouge-score counts tuples of n tokens; tokens are [a-z0-9]+ runs, so joining them with
    # a space gives the same multiset. Strings keep the garbage collector out of it (tens of
    # thousands of live tuples set off full collections that stop every thread).
    counts: dict[str, int] = {}
    if n == 1:
        count_into(counts, tokens)
    else:  # zip stops at the shortest slice: the len(tokens) - n + 1 windows
        count_into(counts, map(" ".join, zip(*(tokens[i:] for i in range(n)), strict=False)))
    return counts


def _ngram_scores(
    target: list[str], prediction: list[str], n: int, fmeasure: Any
) -> tuple[float, float, float]:
    """rouge-score's ``_score_ngrams`` of the ``n``-gram multisets of two token lists."""
    target_counts, prediction_counts = _ngram_counts(target, n), _ngram_counts(prediction, n)
    common = sum(map(min, target_counts.values(), map(prediction_counts.get, target_counts, repeat(0))))
    precision = common / max(sum(prediction_counts.values()), 1)
    recall = common / max(sum(target_counts.values()), 1)
    return precision, recall, fmeasure(precision, recall)


class Rouge(CutsLongTexts, Evaluator):
    """ROUGE F-measure of the chosen type, with the numbers of Google's ``rouge-score``.

    ``rouge_type`` is one of rouge1 … rouge9, rougeL (default) and rougeLsum; tokens are
    rouge-score's (lowercase ``[a-z0-9]+`` runs, every other character separates; Porter
    stems with ``use_stemmer=True``). The score is F1; ``passed`` compares it with
    ``threshold`` (0.5). ``details`` holds precision, recall, F1 and a pass flag for each
    against ``precision_threshold`` / ``recall_threshold`` / ``threshold`` (each 0..1).
    Tokens come from rouge-score's own tokenizer; the rest is computed here with the same
    numbers: n-grams counted at C speed as strings, ROUGE-L's longest common subsequence
    with rapidfuzz (linear memory, the GIL released on long texts), rougeLsum (each
    non-empty line a sentence, as in rouge-score) with bit-vector LCS (``_rouge_lsum``).

    Each text is cut to its first ``max_chars`` code points first (``details.truncated_to``
    says so). Tokens, n-gram counts and Porter stems are pure Python, so the default cap
    depends on where the call runs: on tracesim's scoring threads in the host's interpreter
    50,000 (0.04-0.3 s; the first cut is logged once), anywhere else (worker processes, direct
    calls, offline scoring) 100,000 (0.1-0.4 s; seconds on a loaded machine). rougeLsum
    compares every line of one text with every line of the other, so it keeps 10,000
    characters and the first 50 non-empty lines of each text on a scoring thread
    (``details.truncated_to_lines``; about a tenth of a second at worst) and 30,000
    characters and 300 lines anywhere else (about 1.4 s at worst), so rouge-score's number
    on any realistic text. A ``max_chars`` you give applies everywhere (with the 50-line
    cap for rougeLsum, as before); ``max_chars=None`` removes both caps.

    Example:
        >>> r = Rouge("rouge1").evaluate("Curie was born in Warsaw, Poland.", "Curie was born in Warsaw.")
        >>> round(r.score, 4), r.details["recall"]
        (0.9091, 1.0)
    """

    type_name = "rouge"
    default_threshold = 0.5
    score_range = (0.0, 1.0)

    def __init__(
        self,
        rouge_type: str = "rougeL",
        *,
        use_stemmer: bool = False,
        precision_threshold: float = 0.5,
        recall_threshold: float = 0.5,
        max_chars: int | _Default | None = DEFAULT,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.rouge_type = check_choice(f"{key}.rouge_type", rouge_type, ROUGE_TYPES)
        self.use_stemmer = check_bool(f"{key}.use_stemmer", use_stemmer)
        low, high = self.score_range
        self.precision_threshold = require_number(
            f"{key}.precision_threshold", precision_threshold, low=low, high=high
        )
        self.recall_threshold = require_number(
            f"{key}.recall_threshold", recall_threshold, low=low, high=high
        )
        self._cap = TextCap(key, max_chars, LSUM_CAPS if self.rouge_type == "rougeLsum" else ROUGE_CAPS)
        super().__init__(**shared)

    @functools.cached_property
    def _rouge_score(self) -> tuple[Callable[[str], list[str]], Callable[[float, float], float]]:
        """rouge-score's tokenizer and F-measure, imported on the first score, in the process that
        scores: a host whose evaluators score in worker processes never imports rouge-score or
        numpy (a tenth of its heap, which each full garbage collection walks)."""
        from rouge_score import scoring, tokenize

        warm_up()  # numpy for the GIL-free LCS: now, not on the first long text
        stemmer = _shared_stemmer() if self.use_stemmer else None
        return functools.partial(tokenize.tokenize, stemmer=stemmer), scoring.fmeasure

    def _summary_scores(
        self, target: str, prediction: str, details: dict[str, Any]
    ) -> tuple[float, float, float]:
        # rouge-score: one sentence per non-empty line.
        target_lines = [line for line in target.split("\n") if line]
        prediction_lines = [line for line in prediction.split("\n") if line]
        target_lines, prediction_lines, cut = self._cap.cut_lines(target_lines, prediction_lines, self.name)
        if cut is not None:
            details["truncated_to_lines"] = cut
        tokenize = self._rouge_score[0]
        return summary_level_lcs(
            [tokenize(line) for line in target_lines], [tokenize(line) for line in prediction_lines]
        )

    def _scores(self, target: str, prediction: str) -> tuple[float, float, float]:
        tokenize, fmeasure = self._rouge_score
        target_tokens, prediction_tokens = tokenize(target), tokenize(prediction)
        if self.rouge_type != "rougeL":
            return _ngram_scores(target_tokens, prediction_tokens, int(self.rouge_type[5:]), fmeasure)
        if not target_tokens or not prediction_tokens:
            return 0.0, 0.0, 0.0
        lcs = _lcs_length(target_tokens, prediction_tokens)
        precision = lcs / len(prediction_tokens)
        recall = lcs / len(target_tokens)
        return precision, recall, fmeasure(precision, recall)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        prediction, target, cut = self._cap.cut(output, expected, self.name)
        limits: dict[str, Any] = {} if cut is None else {"truncated_to": cut}
        if self.rouge_type == "rougeLsum":
            precision, recall, f1 = self._summary_scores(target, prediction, limits)
        else:
            precision, recall, f1 = self._scores(target, prediction)
        details: dict[str, Any] = {
            "rouge_type": self.rouge_type,
            "use_stemmer": self.use_stemmer,
            "tokenizer": "rouge_score",
            "precision": precision,
            "recall": recall,
            "f1": f1,
            "precision_passed": precision >= self.precision_threshold,
            "recall_passed": recall >= self.recall_threshold,
            "f1_passed": self.passes(f1),
            "precision_threshold": self.precision_threshold,
            "recall_threshold": self.recall_threshold,
            **limits,
        }
        return Measurement(f1, details)

    def __repr__(self) -> str:
        return (
            f"Rouge({self.rouge_type!r}, use_stemmer={self.use_stemmer}, max_chars={self._cap.setting!r}, "
            f"name={self.name!r}, threshold={self.threshold!r})"
        )
