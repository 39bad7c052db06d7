"""``rouge``: ROUGE-N / ROUGE-L F-measure from Google's ``rouge-score``."""

from __future__ import annotations

import functools
from typing import Any

from rapidfuzz.distance import LCSseq

from tracesim.evaluators._base import Evaluator, Measurement
from tracesim.evaluators._options import check_bool, check_choice, require_number
from tracesim.evaluators._text import as_text

__all__ = ["ROUGE_TYPES", "Rouge"]

ROUGE_TYPES = ("rouge1", "rouge2", "rouge3", "rouge4", "rouge5", "rougeL", "rougeLsum")


class _Stemmer:
    """NLTK's Porter stemmer (as rouge-score uses it) with a per-process word cache."""

    def __init__(self) -> None:
        from nltk.stem import porter

        self.stem = functools.lru_cache(maxsize=65_536)(porter.PorterStemmer().stem)


@functools.cache
def _shared_stemmer() -> _Stemmer:
    return _Stemmer()


def _lcs_length(a: list[str], b: list[str]) -> int:
    # Tokens become small ints (exact, collision-free), then rapidfuzz's bit-parallel LCS.
    ids: dict[str, int] = {}
    return int(
        LCSseq.similarity([ids.setdefault(t, len(ids)) for t in a], [ids.setdefault(t, len(ids)) for t in b])
    )


class Rouge(Evaluator):
    """ROUGE F-measure of the chosen type, computed with Google's ``rouge-score``.

    ``rouge_type`` is one of rouge1 … rouge5, rougeL (default) and rougeLsum; tokens are
    rouge-score's (lowercase ``[a-z0-9]+`` runs, every other character separates; Porter
    stems with ``use_stemmer=True``). The score is F1; ``passed`` compares it with
    ``threshold`` (0.5). ``details`` holds precision, recall, F1 and a pass flag for each
    against ``precision_threshold`` / ``recall_threshold`` / ``threshold``. ROUGE-L's
    longest common subsequence is computed with rapidfuzz (same numbers, linear memory).

    Example:
        >>> r = Rouge("rouge1").evaluate("Curie was born in Warsaw, Poland.", "Curie was born in Warsaw.")
        >>> round(r.score, 4), r.details["recall"]
        (0.9091, 1.0)
    """

    type_name = "rouge"
    default_threshold = 0.5

    def __init__(
        self,
        rouge_type: str = "rougeL",
        *,
        use_stemmer: bool = False,
        precision_threshold: float = 0.5,
        recall_threshold: float = 0.5,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.rouge_type = check_choice(f"{key}.rouge_type", rouge_type, ROUGE_TYPES)
        self.use_stemmer = check_bool(f"{key}.use_stemmer", use_stemmer)
        self.precision_threshold = require_number(f"{key}.precision_threshold", precision_threshold)
        self.recall_threshold = require_number(f"{key}.recall_threshold", recall_threshold)
        super().__init__(**shared)
        from rouge_score import rouge_scorer, scoring, tokenize, tokenizers

        stemmer = _shared_stemmer() if self.use_stemmer else None

        class _Tokenizer(tokenizers.Tokenizer):  # type: ignore[misc]
            def tokenize(self, text: str) -> list[str]:
                return tokenize.tokenize(text, stemmer)  # type: ignore[no-any-return]

        tokenizer = _Tokenizer()
        self._tokenize = tokenizer.tokenize
        self._fmeasure = scoring.fmeasure
        self._scorer = rouge_scorer.RougeScorer([self.rouge_type], tokenizer=tokenizer)

    def _scores(self, target: str, prediction: str) -> tuple[float, float, float]:
        if self.rouge_type != "rougeL":
            score = self._scorer.score(target, prediction)[self.rouge_type]
            return score.precision, score.recall, score.fmeasure
        target_tokens, prediction_tokens = self._tokenize(target), self._tokenize(prediction)
        if not target_tokens or not prediction_tokens:
            return 0.0, 0.0, 0.0
        lcs = _lcs_length(target_tokens, prediction_tokens)
        precision = lcs / len(prediction_tokens)
        recall = lcs / len(target_tokens)
        return precision, recall, self._fmeasure(precision, recall)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        precision, recall, f1 = self._scores(as_text(expected), as_text(output))
        details = {
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
        }
        return Measurement(f1, details)

    def __repr__(self) -> str:
        return (
            f"Rouge({self.rouge_type!r}, use_stemmer={self.use_stemmer}, name={self.name!r}, "
            f"threshold={self.threshold!r})"
        )
