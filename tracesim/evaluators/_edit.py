"""``levenshtein`` and ``levenshtein_distance``: character edit distance (rapidfuzz)."""

from __future__ import annotations

from typing import Any

from rapidfuzz.distance import Levenshtein as _Lev

from tracesim.evaluators._base import Evaluator, Measurement
from tracesim.evaluators._options import check_bool, check_int
from tracesim.evaluators._text import as_text, round_half_up

__all__ = ["Levenshtein", "LevenshteinDistance"]

_distance = _Lev.distance


class Levenshtein(Evaluator):
    """Normalised edit similarity ``1 - d / max(len)``, as 2Signal computes it.

    Defaults: case-insensitive, each string cut to its first ``max_chars`` (10,000)
    code points before anything else, score rounded half-up to ``round_to`` (2) places
    (``round_to=None`` keeps the raw value), ``threshold=0.7`` compared with ``>=`` on
    the rounded score. Two empty strings score 1.0. ``details`` holds ``distance``,
    ``max_len`` and the raw score.

    Example:
        >>> Levenshtein().evaluate("customer service", "customer support").score
        0.63
    """

    type_name = "levenshtein"
    default_threshold = 0.7

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
        self.max_chars = check_int(f"{key}.max_chars", max_chars, low=1, allow_none=True)
        self.round_to = check_int(f"{key}.round_to", round_to, low=0, allow_none=True)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        a = output if type(output) is str else as_text(output)
        b = expected if type(expected) is str else as_text(expected)
        cut = self.max_chars
        truncated = False
        if cut is not None and (len(a) > cut or len(b) > cut):
            a, b, truncated = a[:cut], b[:cut], True
        if not self.case_sensitive:
            a, b = a.lower(), b.lower()
        longest = max(len(a), len(b))
        distance = _distance(a, b)
        raw = 1.0 if longest == 0 else 1 - distance / longest
        score = raw if self.round_to is None else round_half_up(raw, self.round_to)
        details: dict[str, Any] = {"distance": distance, "max_len": longest, "raw_score": raw}
        if truncated:
            details["truncated_to"] = cut
        return Measurement(score, details)

    def __repr__(self) -> str:
        return (
            f"Levenshtein(case_sensitive={self.case_sensitive}, max_chars={self.max_chars}, "
            f"round_to={self.round_to}, name={self.name!r}, threshold={self.threshold!r})"
        )


class LevenshteinDistance(Evaluator):
    """The raw edit distance (an int; lower is better), as Agenta's evaluator returns it.

    Case-sensitive by default, no length cap, no threshold; with a ``threshold``,
    ``passed`` is ``distance <= threshold``.

    Example:
        >>> LevenshteinDistance(threshold=2).evaluate("Pari", "Paris").passed
        True
    """

    type_name = "levenshtein_distance"
    higher_is_better = False

    def __init__(self, *, case_sensitive: bool = True, **shared: Any) -> None:
        self.case_sensitive = check_bool(f"{self.type_name}.case_sensitive", case_sensitive)
        super().__init__(**shared)

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        a = output if type(output) is str else as_text(output)
        b = expected if type(expected) is str else as_text(expected)
        if not self.case_sensitive:
            a, b = a.lower(), b.lower()
        distance = _distance(a, b)
        return Measurement(distance, {"distance": distance})

    def __repr__(self) -> str:
        return (
            f"LevenshteinDistance(case_sensitive={self.case_sensitive}, name={self.name!r}, "
            f"threshold={self.threshold!r})"
        )
