"""2Signal's Levenshtein evaluator: ``{"score", "label"}`` with its documented defaults.

Example:
    >>> from tracesim.evaluators.compat.twosignal import Levenshtein
    >>> Levenshtein().evaluate("customer service", "customer support")
    {'score': 0.63, 'label': 'fail'}
"""

from __future__ import annotations

from typing import Any

from tracesim.evaluators._levenshtein import Levenshtein as _CoreLevenshtein
from tracesim.evaluators._options import require_number

__all__ = ["Levenshtein"]


class Levenshtein:
    """``1 - d / max(len)`` rounded half-up to 2 places; ``pass`` when ``>= threshold``.

    Config as in 2Signal: ``threshold=0.7``, ``case_sensitive=False``; strings are cut to
    10,000 characters. No expected output (``None`` or empty) scores 0.0, ``fail``. The
    threshold is any finite number, compared as 2Signal does (1 passes only identical
    texts, 0 passes everything).

    Example:
        >>> Levenshtein(threshold=0.5).evaluate("customer service", "customer support")
        {'score': 0.63, 'label': 'pass'}
    """

    def __init__(self, threshold: float = 0.7, case_sensitive: bool = False) -> None:
        self._threshold = require_number("twosignal.threshold", threshold)
        self._core = _CoreLevenshtein(threshold=None, case_sensitive=case_sensitive)

    def evaluate(self, output: Any, expected: Any = None) -> dict[str, Any]:
        """Score ``output`` against ``expected``."""
        if expected is None or expected == "":
            return {"score": 0.0, "label": "fail"}
        result = self._core.evaluate(output, expected)
        if result.status != "ok" or result.score is None:
            return {"score": 0.0, "label": "fail", "reasoning": result.error}
        return {"score": result.score, "label": "pass" if result.score >= self._threshold else "fail"}
