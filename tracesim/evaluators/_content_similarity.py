"""``content_similarity``: Sørensen–Dice on character bigrams (npm string-similarity)."""

from __future__ import annotations

import operator
from itertools import repeat
from typing import Any

from tracesim.evaluators._arithmetic import count_into
from tracesim.evaluators._base import DEFAULT, Evaluator, Measurement, _Default
from tracesim.evaluators._long_texts import Caps, CutsLongTexts, TextCap
from tracesim.evaluators._options import check_bool

__all__ = ["DICE_CAPS", "ContentSimilarity", "dice_bigrams"]

#: ``content_similarity``'s default caps (see ``_long_texts``): about a tenth of a second at
#: 100,000 characters on a host's scoring thread; about half a second at 1,000,000 elsewhere.
DICE_CAPS = Caps(thread=100_000, worker=1_000_000)

# Characters counted per C call: a few milliseconds with the GIL held, then other threads run.
_PIECE = 1 << 14


def _bigrams(text: str) -> dict[str, int]:
    """The multiset of adjacent character pairs of ``text``.

    Counted at C speed (no Python step per pair), a piece at a time. The pairs are
    two-character strings, which the garbage collector does not track (tuples it would).
    """
    counts: dict[str, int] = {}
    for start in range(0, len(text) - 1, _PIECE):
        piece = text[start : start + _PIECE + 1]
        count_into(counts, map(operator.add, piece, piece[1:]))
    return counts


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
    bigrams_first, bigrams_second = _bigrams(first), _bigrams(second)
    small, large = sorted((bigrams_first, bigrams_second), key=len)
    common = sum(map(min, small.values(), map(large.get, small, repeat(0))))
    return 2.0 * common / (len(first) + len(second) - 2)


class ContentSimilarity(CutsLongTexts, Evaluator):
    """Dice coefficient of character bigrams, as Mastra's content-similarity metric.

    Defaults: ``ignore_case=True`` (``str.lower``), ``ignore_whitespace=True`` (every
    whitespace character is deleted, as string-similarity does). Unlike Mastra,
    ``ignore_whitespace=False`` really keeps whitespace. Characters are Python code points
    (Mastra counts UTF-16 units; see ``compat.mastra``). No threshold by default. Each text is
    cut to its first ``max_chars`` code points first (``details.truncated_to`` says so): by
    default 100,000 on tracesim's scoring threads in the host's interpreter (about a tenth of
    a second; the first cut is logged once) and 1,000,000 anywhere else (worker processes,
    direct calls, offline scoring: about half a second). A ``max_chars`` you give applies
    everywhere; ``max_chars=None`` removes the cap.

    Example:
        >>> ContentSimilarity().evaluate("Hello, world!", "hello world").score
        0.8
    """

    type_name = "content_similarity"
    score_range = (0.0, 1.0)

    def __init__(
        self,
        *,
        ignore_case: bool = True,
        ignore_whitespace: bool = True,
        max_chars: int | _Default | None = DEFAULT,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.ignore_case = check_bool(f"{key}.ignore_case", ignore_case)
        self.ignore_whitespace = check_bool(f"{key}.ignore_whitespace", ignore_whitespace)
        self._cap = TextCap(key, max_chars, DICE_CAPS)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        a, b, cut = self._cap.cut(output, expected, self.name)
        if self.ignore_case:
            a, b = a.lower(), b.lower()
        if self.ignore_whitespace:
            a, b = "".join(a.split()), "".join(b.split())
        details: dict[str, Any] = {
            "method": "dice_bigrams",
            "ignore_case": self.ignore_case,
            "ignore_whitespace": self.ignore_whitespace,
        }
        if cut is not None:
            details["truncated_to"] = cut
        return Measurement(dice_bigrams(a, b), details)

    def __repr__(self) -> str:
        return (
            f"ContentSimilarity(ignore_case={self.ignore_case}, ignore_whitespace={self.ignore_whitespace}, "
            f"max_chars={self._cap.setting!r}, name={self.name!r}, threshold={self.threshold!r})"
        )
