"""``content_similarity``: Sørensen–Dice on character bigrams (npm string-similarity)."""

from __future__ import annotations

from collections import Counter
from typing import Any

from tracesim.evaluators._base import Evaluator, Measurement
from tracesim.evaluators._options import check_bool
from tracesim.evaluators._text import as_text

__all__ = ["ContentSimilarity", "dice_bigrams"]


def dice_bigrams(first: str, second: str) -> float:
    """Sørensen–Dice coefficient of the bigram multisets of two strings.

    The rules of npm ``string-similarity``'s ``compareTwoStrings`` without its whitespace
    removal: identical strings (including two empty ones) give 1.0, otherwise a string
    shorter than two characters gives 0.0, otherwise ``2 * |common bigrams| /
    (len(first) + len(second) - 2)``. Characters are whatever ``str`` indexes.

    Example:
        >>> dice_bigrams("night", "nacht")
        0.25
    """
    if first == second:
        return 1.0
    if len(first) < 2 or len(second) < 2:
        return 0.0
    bigrams_first = Counter(first[i : i + 2] for i in range(len(first) - 1))
    bigrams_second = Counter(second[i : i + 2] for i in range(len(second) - 1))
    common = sum((bigrams_first & bigrams_second).values())
    return 2.0 * common / (len(first) + len(second) - 2)


class ContentSimilarity(Evaluator):
    """Dice coefficient of character bigrams, as Mastra's content-similarity metric.

    Defaults: ``ignore_case=True`` (``str.lower``), ``ignore_whitespace=True`` (every
    whitespace character is deleted, as string-similarity does). Unlike Mastra,
    ``ignore_whitespace=False`` really keeps whitespace. Characters are Python code
    points (Mastra counts UTF-16 units; see ``compat.mastra``). No threshold by default.

    Example:
        >>> ContentSimilarity().evaluate("Hello, world!", "hello world").score
        0.8
    """

    type_name = "content_similarity"

    def __init__(self, *, ignore_case: bool = True, ignore_whitespace: bool = True, **shared: Any) -> None:
        key = self.type_name
        self.ignore_case = check_bool(f"{key}.ignore_case", ignore_case)
        self.ignore_whitespace = check_bool(f"{key}.ignore_whitespace", ignore_whitespace)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        a, b = as_text(output), as_text(expected)
        if self.ignore_case:
            a, b = a.lower(), b.lower()
        if self.ignore_whitespace:
            a, b = "".join(a.split()), "".join(b.split())
        details = {
            "method": "dice_bigrams",
            "ignore_case": self.ignore_case,
            "ignore_whitespace": self.ignore_whitespace,
        }
        return Measurement(dice_bigrams(a, b), details)

    def __repr__(self) -> str:
        return (
            f"ContentSimilarity(ignore_case={self.ignore_case}, ignore_whitespace={self.ignore_whitespace}, "
            f"name={self.name!r}, threshold={self.threshold!r})"
        )
