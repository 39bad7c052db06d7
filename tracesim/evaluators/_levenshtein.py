"""``levenshtein`` and ``levenshtein_distance``: character edit distance (rapidfuzz)."""

from __future__ import annotations

from typing import Any

from rapidfuzz.distance import Levenshtein as _Lev

from tracesim.evaluators._arithmetic import round_half_up
from tracesim.evaluators._base import DEFAULT, Evaluator, Measurement, _Default
from tracesim.evaluators._compared_text import cut_texts
from tracesim.evaluators._gil_free import int_score, warm_up
from tracesim.evaluators._long_texts import Caps, CutsLongTexts, TextCap
from tracesim.evaluators._options import check_bool, check_int, check_max_chars

__all__ = ["DISTANCE_CAPS", "Levenshtein", "LevenshteinDistance", "edit_distance"]

#: ``levenshtein_distance``'s default caps (see ``_long_texts``), two unrelated texts at the
#: cap, the interpreter lock released: ~0.15 s at 40,000 characters on a host's scoring
#: thread, ~1 s at 100,000 elsewhere.
DISTANCE_CAPS = Caps(thread=40_000, worker=100_000)

_distance = _Lev.distance


def edit_distance(a: str, b: str) -> int:
    """The Levenshtein distance of ``a`` and ``b``, computed without holding the GIL when long.

    rapidfuzz's bit-parallel algorithm costs about ``len(a) * len(b) / 64`` word operations;
    on long texts it runs with the GIL released, so other threads keep running.

    Example:
        >>> edit_distance("kitten", "sitting")
        3
    """
    return int_score(_distance, a, b)


class Levenshtein(Evaluator):
    """Normalised edit similarity ``1 - d / max(len)``, as 2Signal computes it.

    Defaults: case-insensitive, each string cut to its first ``max_chars`` (10,000, as
    2Signal does) code points before anything else, score rounded half-up to
    ``round_to`` (2) places (``round_to=None`` keeps the raw value), ``threshold=0.7``
    compared with ``>=`` on the rounded score. Two empty strings score 1.0. ``details``
    holds ``distance``, ``max_len``, the raw score and, when a text was cut,
    ``truncated_to``. At the cap a call takes a few milliseconds, without holding the GIL.

    Example:
        >>> Levenshtein().evaluate("customer service", "customer support").score
        0.63
    """

    type_name = "levenshtein"
    default_threshold = 0.7
    score_range = (0.0, 1.0)

    def __init__(
        self,
        *,
        case_sensitive: bool = False,
        max_chars: int | None = 10_000,
        round_to: int | None = 2,
        **shared: Any,
    ) -> None:
        key = self.type_name
        self.case_sensitive = check_bool(f"{key}.case_sensitive", case_sensitive)
        self.max_chars = check_max_chars(key, max_chars)
        self.round_to = check_int(f"{key}.round_to", round_to, low=0, allow_none=True)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        warm_up()  # numpy for the GIL-free distance, once, where scoring runs (not in a host that hands off)
        a, b, cut = cut_texts(output, expected, self.max_chars)
        if not self.case_sensitive:
            a, b = a.lower(), b.lower()
        longest = max(len(a), len(b))
        distance = edit_distance(a, b)
        raw = 1.0 if longest == 0 else 1 - distance / longest
        score = raw if self.round_to is None else round_half_up(raw, self.round_to)
        details: dict[str, Any] = {"distance": distance, "max_len": longest, "raw_score": raw}
        if cut is not None:
            details["truncated_to"] = cut
        return Measurement(score, details)

    def __repr__(self) -> str:
        return (
            f"Levenshtein(case_sensitive={self.case_sensitive}, max_chars={self.max_chars}, "
            f"round_to={self.round_to}, name={self.name!r}, threshold={self.threshold!r})"
        )


class LevenshteinDistance(CutsLongTexts, Evaluator):
    """The raw edit distance (lower is better), as Agenta's evaluator returns it.

    The score is that whole number as a float (``3.0``), like every score; ``details.distance``
    holds the int.

    Case-sensitive by default, no threshold; with a ``threshold`` (any number >= 0),
    ``passed`` is ``distance <= threshold``. Each text is cut to its first ``max_chars``
    code points first, and ``details.truncated_to`` says so: Agenta has no cap, but the
    cost grows with the product of the lengths (two unrelated 1 MB texts take about a
    minute). By default the cap is 40,000 on tracesim's scoring threads in the host's
    interpreter (~0.15 s at worst, without holding the GIL; the first cut is logged once)
    and 100,000 anywhere else (worker processes, direct calls, offline scoring: ~1 s at
    worst). A ``max_chars`` you give applies everywhere; ``max_chars=None`` removes the cap.

    Example:
        >>> LevenshteinDistance(threshold=2).evaluate("Pari", "Paris").passed
        True
    """

    type_name = "levenshtein_distance"
    higher_is_better = False
    score_range = (0.0, float("inf"))

    def __init__(
        self, *, case_sensitive: bool = True, max_chars: int | _Default | None = DEFAULT, **shared: Any
    ) -> None:
        self.case_sensitive = check_bool(f"{self.type_name}.case_sensitive", case_sensitive)
        self._cap = TextCap(self.type_name, max_chars, DISTANCE_CAPS)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        warm_up()
        a, b, cut = self._cap.cut(output, expected, self.name)
        if not self.case_sensitive:
            a, b = a.lower(), b.lower()
        distance = edit_distance(a, b)
        details: dict[str, Any] = {"distance": distance}
        if cut is not None:
            details["truncated_to"] = cut
        return Measurement(distance, details)

    def __repr__(self) -> str:
        return (
            f"LevenshteinDistance(case_sensitive={self.case_sensitive}, max_chars={self._cap.setting!r}, "
            f"name={self.name!r}, threshold={self.threshold!r})"
        )
