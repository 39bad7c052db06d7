"""Mastra's ``ContentSimilarityMetric`` with its exact numbers.

Mastra runs in JavaScript: text is compared as UTF-16 code units (an emoji counts twice),
``ignore_case`` uses full Unicode lowercasing, and string-similarity deletes all
whitespace whatever ``ignore_whitespace`` says. This façade reproduces all of that; use
the core ``content_similarity`` evaluator for code points and a working whitespace flag.

Example:
    >>> from tracesim.evaluators.compat.mastra import ContentSimilarityMetric
    >>> ContentSimilarityMetric().measure("hello world", "Hello, world!")
    {'score': 0.8, 'info': {'similarity': 0.8}}
"""

from __future__ import annotations

import re
from array import array
from typing import Any

from tracesim.evaluators._content_similarity import DICE_CAPS, dice_bigrams
from tracesim.evaluators._long_texts import DEFAULT, TextCap

__all__ = ["ContentSimilarityMetric"]


# JavaScript's \s (ECMAScript WhiteSpace + LineTerminator), which differs from Python's.
_JS_SPACES = re.compile("[\t\n\x0b\x0c\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+")


def _utf16_units(text: str) -> str:
    """One character per UTF-16 code unit (astral characters become surrogate pairs)."""
    return "".join(map(chr, array("H", text.encode("utf-16-le", "surrogatepass"))))


def compare_two_strings(first: str, second: str) -> float:
    """npm string-similarity's ``compareTwoStrings``: whitespace deleted, Dice over UTF-16 bigrams.

    Example:
        >>> compare_two_strings("night", "nacht")
        0.25
    """
    first, second = _JS_SPACES.sub("", first), _JS_SPACES.sub("", second)
    return dice_bigrams(_utf16_units(first), _utf16_units(second))


class ContentSimilarityMetric:
    """``measure(input, output)`` → ``{"score": s, "info": {"similarity": s}}`` (reference first).

    Each text is first cut where the core ``content_similarity`` evaluator cuts it by
    default (1,000,000 code points; 100,000 on tracesim's scoring threads in the host's
    interpreter); then ``info.truncated_to`` says so.

    Example:
        >>> ContentSimilarityMetric(ignore_case=False).measure("Hello World", "hello world")
        {'score': 0.6666666666666666, 'info': {'similarity': 0.6666666666666666}}
    """

    def __init__(self, ignore_case: bool = True, ignore_whitespace: bool = True) -> None:
        self.ignore_case = ignore_case
        self.ignore_whitespace = ignore_whitespace
        self._cap = TextCap("mastra.ContentSimilarity", DEFAULT, DICE_CAPS)

    def measure(self, input: str, output: str) -> dict[str, Any]:
        """Similarity of the reference text ``input`` and the text to evaluate ``output``."""
        input, output, cut = self._cap.cut(input, output, "mastra.ContentSimilarity")
        if self.ignore_case:
            input, output = input.lower(), output.lower()
        if self.ignore_whitespace:
            # JavaScript's trim(): only what \s matched, now single spaces (str.strip() would
            # also drop \x1c-\x1f and \x85, which JavaScript keeps).
            input, output = _JS_SPACES.sub(" ", input).strip(" "), _JS_SPACES.sub(" ", output).strip(" ")
        score = compare_two_strings(input, output)
        info: dict[str, Any] = {"similarity": score}
        if cut is not None:
            info["truncated_to"] = cut
        return {"score": score, "info": info}
