"""Word-overlap metrics: ``jaccard`` (word sets) and ``f1`` (SQuAD token F1)."""

from __future__ import annotations

import re
import string
from collections.abc import Iterable
from itertools import repeat
from typing import Any

from tracesim.evaluators._arithmetic import count_into
from tracesim.evaluators._base import DEFAULT, Evaluator, Measurement, _Default
from tracesim.evaluators._long_texts import Caps, CutsLongTexts, TextCap
from tracesim.evaluators._options import check_bool

__all__ = ["WORDS_CAPS", "F1Score", "Jaccard", "squad_counts", "squad_tokens"]

#: ``jaccard`` and ``f1``'s default caps (see ``_long_texts``): a few tens of milliseconds at
#: 100,000 characters on a host's scoring thread; under half a second at 1,000,000 elsewhere.
WORDS_CAPS = Caps(thread=100_000, worker=1_000_000)


class Jaccard(CutsLongTexts, Evaluator):
    """``|A ∩ B| / |A ∪ B|`` of the sets of whitespace-separated words.

    Words are ``str.split()`` pieces with punctuation kept (``"Paris."`` is not ``"Paris"``),
    case-sensitive unless ``lowercase=True``. Two empty texts score 1.0. ``threshold=0.5``,
    compared with ``>=``. Each text is cut to its first ``max_chars`` code points first
    (``details.truncated_to`` says so): by default 100,000 on tracesim's scoring threads in
    the host's interpreter (a few tens of milliseconds; the first cut is logged once) and
    1,000,000 anywhere else (worker processes, direct calls, offline scoring: under half a
    second). A ``max_chars`` you give applies everywhere; ``max_chars=None`` removes the cap.

    Example:
        >>> Jaccard().evaluate("the cat sat", "the cat ran").score
        0.5
    """

    type_name = "jaccard"
    default_threshold = 0.5
    score_range = (0.0, 1.0)

    def __init__(
        self, *, lowercase: bool = False, max_chars: int | _Default | None = DEFAULT, **shared: Any
    ) -> None:
        self.lowercase = check_bool(f"{self.type_name}.lowercase", lowercase)
        self._cap = TextCap(self.type_name, max_chars, WORDS_CAPS)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        a, b, cut = self._cap.cut(output, expected, self.name)
        if self.lowercase:
            a, b = a.lower(), b.lower()
        words_a, words_b = set(a.split()), set(b.split())
        union = len(words_a | words_b)
        common = len(words_a & words_b)
        score = 1.0 if union == 0 else common / union
        details: dict[str, Any] = {"intersection": common, "union": union, "lowercase": self.lowercase}
        if cut is not None:
            details["truncated_to"] = cut
        return Measurement(score, details)

    def __repr__(self) -> str:
        return (
            f"Jaccard(lowercase={self.lowercase}, max_chars={self._cap.setting!r}, name={self.name!r}, "
            f"threshold={self.threshold!r})"
        )


# ASCII punctuation is deleted from the UTF-8 bytes: UTF-8 encodes every other character
# with bytes >= 0x80 only, so bytes.translate(None, ...) deletes exactly the characters
# str.translate would, several times faster ("surrogatepass" round-trips lone surrogates).
_PUNCTUATION_BYTES = string.punctuation.encode("ascii")
_ARTICLES = re.compile(r"\b(?:the|an?)\b")
_ARTICLE_WORDS = frozenset(("a", "an", "the"))


def _squad_text(text: str) -> str:
    """``text`` lowercased, without ASCII punctuation (articles still in)."""
    data = text.lower().encode("utf-8", "surrogatepass").translate(None, _PUNCTUATION_BYTES)
    return data.decode("utf-8", "surrogatepass")


def _only_word_characters(text: str, words: Iterable[str]) -> bool:
    """True when ``words`` (those of ``text``) hold regex word characters only.

    Then ``\\b`` falls only at the ends of the whitespace-separated words, and the article
    regex removes exactly the words ``a``, ``an`` and ``the``. Lowercase printable ASCII
    without punctuation is letters, digits and spaces: the common case, checked first.
    """
    return (text.isascii() and text.isprintable()) or "".join(words).isalnum()


def squad_tokens(text: str) -> list[str]:
    """SQuAD normalisation: lowercase, drop ASCII punctuation and a/an/the, split.

    Example:
        >>> squad_tokens("The Eiffel Tower, in Paris!")
        ['eiffel', 'tower', 'in', 'paris']
    """
    text = _squad_text(text)
    words = text.split()
    if _only_word_characters(text, words):
        return [word for word in words if word not in _ARTICLE_WORDS]
    return _ARTICLES.sub(" ", text).split()


def squad_counts(text: str) -> tuple[dict[str, int], int]:
    """The :func:`squad_tokens` of ``text`` as a multiset: ``({token: count}, total)``.

    Counts the words first and removes articles per distinct word: only words with a
    character that is neither a word character nor whitespace (``’``, ``€``, a combining
    mark) can hold an article inside, and only those go through the article regex.

    Example:
        >>> squad_counts("The cat saw a cat.")
        ({'cat': 2, 'saw': 1}, 3)
    """
    # _squad_text and _only_word_characters, inlined (this runs twice per F1 score).
    data = text.lower().encode("utf-8", "surrogatepass").translate(None, _PUNCTUATION_BYTES)
    text = data.decode("utf-8", "surrogatepass")
    words = text.split()
    counts: dict[str, int] = {}
    count_into(counts, words)
    total = len(words)
    if not (text.isascii() and text.isprintable()) and not "".join(counts).isalnum():
        for word in [word for word in counts if not word.isalnum()]:
            times = counts.pop(word)
            pieces = _ARTICLES.sub(" ", word).split()
            total += times * (len(pieces) - 1)
            for piece in pieces:
                counts[piece] = counts.get(piece, 0) + times
    # Articles inside words were split off above; any article left is a whole word.
    total -= counts.pop("a", 0) + counts.pop("an", 0) + counts.pop("the", 0)
    return counts, total


class F1Score(CutsLongTexts, Evaluator):
    """SQuAD token F1, as Azure AI Evaluation's ``F1ScoreEvaluator`` computes it.

    Both texts are normalised by :func:`squad_tokens` (counted by :func:`squad_counts`);
    common tokens are counted as a multiset. No common token (including two empty texts) gives
    0.0. ``threshold=0.5``. ``details`` holds precision, recall and the common-token count.
    Each text is cut to its first ``max_chars`` code points first (``details.truncated_to``
    says so): by default 100,000 on tracesim's scoring threads in the host's interpreter (a
    few tens of milliseconds; the first cut is logged once) and 1,000,000 anywhere else
    (worker processes, direct calls, offline scoring: under half a second). A ``max_chars``
    you give applies everywhere; ``max_chars=None`` removes the cap.

    Example:
        >>> F1Score().evaluate("Paris, France", "paris").score
        0.6666666666666666
    """

    type_name = "f1"
    default_threshold = 0.5
    score_range = (0.0, 1.0)

    def __init__(self, *, max_chars: int | _Default | None = DEFAULT, **shared: Any) -> None:
        self._cap = TextCap(self.type_name, max_chars, WORDS_CAPS)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        a, b, cut = self._cap.cut(output, expected, self.name)
        f1, details = self._f1(a, b)
        if cut is not None:
            details["truncated_to"] = cut
        return Measurement(f1, details)

    @staticmethod
    def _f1(a: str, b: str) -> tuple[float, dict[str, Any]]:
        predicted, n_predicted = squad_counts(a)
        reference, n_reference = squad_counts(b)
        if len(predicted) == n_predicted or len(reference) == n_reference:
            # One side has no repeated token: each shared token counts once.
            common = len(predicted.keys() & reference.keys())
        else:
            small, large = (
                (predicted, reference) if len(predicted) <= len(reference) else (reference, predicted)
            )
            common = sum(map(min, small.values(), map(large.get, small, repeat(0))))
        if common == 0:
            return 0.0, {"common_tokens": 0, "precision": 0.0, "recall": 0.0}
        precision = common / n_predicted
        recall = common / n_reference
        f1 = 2.0 * precision * recall / (precision + recall)
        return f1, {"common_tokens": common, "precision": precision, "recall": recall}

    def __repr__(self) -> str:
        return f"F1Score(max_chars={self._cap.setting!r}, name={self.name!r}, threshold={self.threshold!r})"
