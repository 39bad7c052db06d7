"""``cosine``: cosine of TF-IDF vectors fitted on the pair (scikit-learn's defaults)."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

from tracesim.evaluators._base import DEFAULT, Evaluator, Measurement, _Default
from tracesim.evaluators._long_texts import Caps, CutsLongTexts, TextCap

__all__ = ["COSINE_CAPS", "TfidfCosine", "tfidf_cosine"]

#: ``cosine``'s default caps (see ``_long_texts``): about a tenth of a second at 100,000
#: characters on a host's scoring thread; under a second at 1,000,000 elsewhere.
COSINE_CAPS = Caps(thread=100_000, worker=1_000_000)


# scikit-learn TfidfVectorizer() defaults: lowercase, this token pattern (one-character
# tokens dropped), smooth idf, l2 norm. The idf is fitted on the two texts only.
_TOKEN = re.compile(r"(?u)\b\w\w+\b")
_N_DOCS = 2


def _idf(document_frequency: int) -> float:
    return math.log((_N_DOCS + 1) / (document_frequency + 1)) + 1.0


_IDF_BOTH = _idf(2)
_IDF_ONE = _idf(1)


def _unit(vector: list[float]) -> list[float]:
    norm = math.sqrt(sum(x * x for x in vector))
    return vector if norm == 0.0 else [x / norm for x in vector]


def tfidf_cosine(a: str, b: str) -> float | None:
    """Cosine similarity of the TF-IDF vectors of ``a`` and ``b``, or None without vocabulary.

    Equal (to float rounding) to ``cosine_similarity(TfidfVectorizer().fit_transform([a, b]))``
    in scikit-learn, which raises "empty vocabulary" where this returns None.

    Example:
        >>> round(tfidf_cosine("the cat sat", "the cat ran"), 6)
        0.503103
    """
    counts_a = Counter(_TOKEN.findall(a.lower()))
    counts_b = Counter(_TOKEN.findall(b.lower()))
    vocabulary = sorted(counts_a.keys() | counts_b.keys())
    if not vocabulary:
        return None
    vector_a: list[float] = []
    vector_b: list[float] = []
    for term in vocabulary:
        in_a, in_b = counts_a.get(term, 0), counts_b.get(term, 0)
        idf = _IDF_BOTH if in_a and in_b else _IDF_ONE
        vector_a.append(in_a * idf)
        vector_b.append(in_b * idf)
    # The vectorizer normalises each row, then cosine_similarity normalises again.
    unit_a, unit_b = _unit(_unit(vector_a)), _unit(_unit(vector_b))
    return sum(x * y for x, y in zip(unit_a, unit_b, strict=True))


class TfidfCosine(CutsLongTexts, Evaluator):
    """Cosine of TF-IDF vectors fitted on the pair, as scikit-learn's ``TfidfVectorizer()``.

    Tokens are lowercased runs of two or more word characters. When neither text has such a
    token (e.g. ``"I"`` or ``""``) there is no vocabulary: the score is 1.0 if the texts are
    identical and 0.0 otherwise, with ``details.reason`` saying so. The score is clipped to
    1.0 (float rounding can give 1.0000000000000002; ``details.cosine`` keeps the unclipped
    value). ``threshold=0.8``. Each text is cut to its first ``max_chars`` code points first
    (``details.truncated_to`` says so): by default 100,000 on tracesim's scoring threads in
    the host's interpreter (about a tenth of a second; the first cut is logged once) and
    1,000,000 anywhere else (worker processes, direct calls, offline scoring: under a second).
    A ``max_chars`` you give applies everywhere; ``max_chars=None`` removes the cap.

    Example:
        >>> TfidfCosine().evaluate("Paris is the capital", "the capital is Paris").score
        1.0
    """

    type_name = "cosine"
    default_threshold = 0.8
    score_range = (0.0, 1.0)

    def __init__(self, *, max_chars: int | _Default | None = DEFAULT, **shared: Any) -> None:
        self._cap = TextCap(self.type_name, max_chars, COSINE_CAPS)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        a, b, cut = self._cap.cut(output, expected, self.name)
        cosine = tfidf_cosine(a, b)
        details: dict[str, Any] = {"method": "tfidf"}
        if cosine is None:
            details["reason"] = "no vocabulary (no token of two or more word characters in either text)"
            score = 1.0 if a == b else 0.0
        else:
            details["cosine"] = cosine
            score = min(cosine, 1.0)
        if cut is not None:
            details["truncated_to"] = cut
        return Measurement(score, details)

    def __repr__(self) -> str:
        return (
            f"TfidfCosine(max_chars={self._cap.setting!r}, name={self.name!r}, threshold={self.threshold!r})"
        )
