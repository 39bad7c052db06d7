"""Reading a judge's answer: structured first, then tolerant, never a made-up score."""

from __future__ import annotations

import json
import math
import re
from typing import Any

__all__ = ["parse_verdict"]

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL | re.IGNORECASE)
_SCORE_TEXT = re.compile(
    r"\b(?:score|rating|grade)\b[\"'*\s]*[:=]\s*[\"']?(-?\d+(?:\.\d+)?|true|false|pass|fail)", re.I
)
_SCORE_KEYS = ("score", "rating", "grade", "verdict", "passed", "pass")
_REASON_KEYS = ("reason", "reasoning", "explanation", "justification", "rationale")
_TRUE = {"true", "pass", "passed", "yes", "y", "1"}
_FALSE = {"false", "fail", "failed", "no", "n", "0"}


def parse_verdict(answer: str | None, scale: tuple[int, int] | None) -> tuple[float, str | None] | None:
    """``(score, reason)`` read from a judge's answer, or None when it holds no usable score.

    ``scale`` is ``(low, high)`` for an integer score, None for pass/fail (1.0 / 0.0). A score
    outside the scale, or not a whole number, is not usable.

    Example:
        >>> parse_verdict('```json\\n{"reason": "Same city.", "score": 5}\\n```', (1, 5))
        (5.0, 'Same city.')
        >>> parse_verdict("Score: 4/5 - close", (1, 5))
        (4.0, None)
        >>> parse_verdict('{"passed": "yes", "reason": "polite"}', None)
        (1.0, 'polite')
        >>> parse_verdict("I cannot grade this.", (1, 5)) is None
        True
    """
    if not answer or not answer.strip():
        return None
    for candidate in _objects(answer):
        score = _score(_first(candidate, _SCORE_KEYS), scale)
        if score is not None:
            reason = _first(candidate, _REASON_KEYS)
            return score, reason.strip() if isinstance(reason, str) and reason.strip() else None
    match = _SCORE_TEXT.search(answer)
    if match:
        score = _score(match.group(1), scale)
        if score is not None:
            return score, None
    return None


def _objects(answer: str) -> list[dict[str, Any]]:
    """Every JSON object in the answer: the whole text, fenced blocks, then any ``{...}`` in it."""
    found: list[dict[str, Any]] = []
    texts = [answer.strip(), *(block.strip() for block in _FENCE.findall(answer))]
    decoder = json.JSONDecoder()
    for text in texts:
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            found.append(value)
    start = answer.find("{")
    while start >= 0 and len(found) < 8:
        try:
            value, end = decoder.raw_decode(answer, start)
        except ValueError:
            start = answer.find("{", start + 1)
            continue
        if isinstance(value, dict):
            found.append(value)
        start = answer.find("{", end)
    return found


def _first(candidate: dict[str, Any], keys: tuple[str, ...]) -> Any:
    lowered = {str(key).lower(): value for key, value in candidate.items()}
    for key in keys:
        if key in lowered:
            return lowered[key]
    return None


def _score(value: Any, scale: tuple[int, int] | None) -> float | None:
    if scale is None:
        return _pass_fail(value)
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str):
        text = value.strip().split("/")[0].strip()  # "4/5"
        try:
            value = float(text)
        except ValueError:
            return None
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value != int(value):
        return None
    low, high = scale
    return float(value) if low <= value <= high else None


def _pass_fail(value: Any) -> float | None:
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)) and value in (0, 1):
        return float(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return 1.0
        if word in _FALSE:
            return 0.0
    return None
