"""Word-overlap metrics: ``jaccard`` (word sets) and ``f1`` (SQuAD token F1)."""

from __future__ import annotations

import re
import string
from collections import Counter
from typing import Any

from tracesim.evaluators._base import Evaluator, Measurement
from tracesim.evaluators._options import check_bool
from tracesim.evaluators._text import as_text

__all__ = ["F1Score", "Jaccard", "squad_tokens"]


class Jaccard(Evaluator):
    """``|A ∩ B| / |A ∪ B|`` of the sets of whitespace-separated words.

    Words are ``str.split()`` pieces with punctuation kept (``"Paris."`` is not
    ``"Paris"``), case-sensitive unless ``lowercase=True``. Two empty texts score 1.0.
    ``threshold=0.5``, compared with ``>=``.

    Example:
        >>> Jaccard().evaluate("the cat sat", "the cat ran").score
        0.5
    """

    type_name = "jaccard"
    default_threshold = 0.5

    def __init__(self, *, lowercase: bool = False, **shared: Any) -> None:
        self.lowercase = check_bool(f"{self.type_name}.lowercase", lowercase)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        a, b = as_text(output), as_text(expected)
        if self.lowercase:
            a, b = a.lower(), b.lower()
        words_a, words_b = set(a.split()), set(b.split())
        union = len(words_a | words_b)
        common = len(words_a & words_b)
        score = 1.0 if union == 0 else common / union
        return Measurement(score, {"intersection": common, "union": union, "lowercase": self.lowercase})

    def __repr__(self) -> str:
        return f"Jaccard(lowercase={self.lowercase}, name={self.name!r}, threshold={self.threshold!r})"


# A regex deletes ASCII punctuation faster than str.translate (same result).
_PUNCTUATION = re.compile("[" + re.escape(string.punctuation) + "]+")
_ARTICLES = re.compile(r"\b(?:the|an?)\b")


def squad_tokens(text: str) -> list[str]:
    """SQuAD normalisation: lowercase, drop ASCII punctuation and a/an/the, split.

    Example:
        >>> squad_tokens("The Eiffel Tower, in Paris!")
        ['eiffel', 'tower', 'in', 'paris']
    """
    return _ARTICLES.sub(" ", _PUNCTUATION.sub("", text.lower())).split()


class F1Score(Evaluator):
    """SQuAD token F1, as Azure AI Evaluation's ``F1ScoreEvaluator`` computes it.

    Both texts are normalised by :func:`squad_tokens`; common tokens are counted as a
    multiset. No common token (including two empty texts) gives 0.0. ``threshold=0.5``.
    ``details`` holds precision, recall and the common-token count.

    Example:
        >>> F1Score().evaluate("Paris, France", "paris").score
        0.6666666666666666
    """

    type_name = "f1"
    default_threshold = 0.5

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        predicted = squad_tokens(as_text(output))
        reference = squad_tokens(as_text(expected))
        common = sum((Counter(predicted) & Counter(reference)).values())
        if common == 0:
            return Measurement(0.0, {"common_tokens": 0, "precision": 0.0, "recall": 0.0})
        precision = common / len(predicted)
        recall = common / len(reference)
        f1 = 2.0 * precision * recall / (precision + recall)
        return Measurement(f1, {"common_tokens": common, "precision": precision, "recall": recall})
