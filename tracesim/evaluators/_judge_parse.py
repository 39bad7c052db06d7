"""Reading a judge's answer: one verdict, or a refusal that says why; never a made-up score.

The rules, in the order they apply (docs/evaluators.md, "Prompt injection and how a judge's
answer is read", says the same for users):

1. **Bounded.** An answer over `MAX_ANSWER_CHARS` characters is refused unread. JSON objects
   are found by an iterative scan (no recursion), nested at most `MAX_DEPTH` deep, and the
   scan's work is capped; past either limit the answer is refused.
2. **JSON first.** Every complete top-level ``{...}`` in the answer (fenced or not) is decoded.
   One holding a score key (``score``, ``rating``, ``grade``; for a pass/fail judge also
   ``verdict``, ``passed``, ``pass``) is a *verdict*; one that also holds a string reason
   (``reason``, ``reasoning``, ``explanation``, ``justification``, ``rationale``) *follows the
   schema*. The last verdict that follows the schema decides (with none, the last verdict).
   Its score must be valid: an out-of-range, fractional or non-finite number, a boolean where
   a number is due, or two score keys that differ refuse the answer; an earlier verdict never
   stands in for it, and nothing re-reads it as text.
   Earlier verdicts are overruled (kept in ``Verdict.overruled``). A verdict or a
   ``score: N`` phrase after the deciding one that says something else refuses the answer:
   which of the two is the judge's own cannot be told.
3. **Then prose.** With no JSON verdict, phrases such as ``Score: 4``, ``rating = 4/5`` or
   ``**Grade:** pass`` are read; the last one decides and must be valid. The value is the
   whole token after the colon, so ``Score: 1e308`` is the number 1e308 (refused), never 1.
4. **Then a bare answer.** With neither, an answer that is only a score is read: once
   surrounding whitespace and the characters in `BARE_PUNCTUATION` are stripped, what remains
   is an integer written in ASCII digits (with a ``-`` for a negative one; ``4.0`` and
   ``four`` are not bare) in the scale, or for pass/fail one of ``true false pass fail yes no
   1 0`` (any case).

A valid score: on a ``(low, high)`` scale, an integer from low to high (a JSON ``4.0`` or a
string ``"4"`` / ``"4/5"`` with ``high`` as the denominator count); for pass/fail, a boolean,
0 or 1, or a word: ``true pass passed yes y`` / ``false fail failed no n`` (any case).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["BARE_PUNCTUATION", "MAX_ANSWER_CHARS", "MAX_DEPTH", "Refusal", "Verdict", "parse_verdict"]

MAX_ANSWER_CHARS = 100_000
"""A longer answer is refused unread (a grade with ``max_tokens=400`` is about 2,000 characters)."""
MAX_DEPTH = 32
"""Brackets nested deeper than this in an answer's JSON refuse the answer (no grade needs 3)."""
BARE_PUNCTUATION = " \t\r\n.,;:!?\"'`*_()[]{}<>"
"""What may surround a bare score: ``**4**``, ``"4".``, ``[4]`` are read as 4."""

# The scan's work: characters walked plus _STEP_COST per regex step, at most _WORK_PER_CHAR per
# character of the answer (plus _WORK_BASE). An honest answer uses a few per character.
_WORK_PER_CHAR = 20
_WORK_BASE = 20_000
_STEP_COST = 32
_OVERRULED_KEPT = 8
_NUMBER_KEYS = ("score", "rating", "grade")
_SCORE_KEYS = (*_NUMBER_KEYS, "verdict", "passed", "pass")  # a pass/fail judge's
_REASON_KEYS = ("reason", "reasoning", "explanation", "justification", "rationale")
_TRUE = frozenset({"true", "pass", "passed", "yes", "y", "1"})
_FALSE = frozenset({"false", "fail", "failed", "no", "n", "0"})
_BARE_WORDS = frozenset({"true", "false", "pass", "fail", "yes", "no", "1", "0"})
_PROSE = re.compile(
    r"\b(?:score|rating|grade)\b[\"'*\s]*[:=][\"'*\s]*(?P<value>[^\s,;)\]}\"'*`]+)", re.IGNORECASE
)
_INTEGER = re.compile(r"[-+]?[0-9]{1,18}(?:\.0+)?(?:/(?P<of>[0-9]{1,18}))?", re.ASCII)
_BARE_INTEGER = re.compile(r"-?[0-9]{1,18}", re.ASCII)
_SIGNIFICANT = re.compile(r'[{}\[\]"]')
_STRING_STOP = re.compile(r'["\\]')
_SHOWN = 40  # characters of a value quoted in a refusal


@dataclass(frozen=True)
class Verdict:
    """A score read from the answer: ``source`` is ``"json"``, ``"prose"`` or ``"bare"``."""

    score: float
    reason: str | None
    source: str
    overruled: tuple[str, ...] = ()
    """The scores of the earlier verdicts the deciding one overruled, as written (the last 8)."""
    overruled_count: int = 0
    """How many earlier verdicts it overruled."""


@dataclass(frozen=True)
class Refusal:
    """No score: ``why`` says what in the answer made it unusable."""

    why: str


class _Refused(Exception):
    """Raised inside the parser; becomes a `Refusal`."""


def parse_verdict(answer: str | None, scale: tuple[int, int] | None) -> Verdict | Refusal:
    """The judge's verdict, or a `Refusal` saying why the answer holds none that can be trusted.

    ``scale`` is ``(low, high)`` for an integer score, None for pass/fail (1.0 / 0.0).

    Example:
        >>> parse_verdict('```json\\n{"reason": "Same city.", "score": 5}\\n```', (1, 5))
        Verdict(score=5.0, reason='Same city.', source='json', overruled=(), overruled_count=0)
        >>> parse_verdict("Score: 4/5 - close", (1, 5)).score
        4.0
        >>> parse_verdict("**4**", (1, 5)).source
        'bare'
        >>> print(parse_verdict('{"score": 5e-1}', (1, 5)).why)
        the verdict's score 0.5 is not a whole number from 1 to 5
    """
    if answer is None or not answer.strip():
        return Refusal("the answer is empty")
    if len(answer) > MAX_ANSWER_CHARS:
        return Refusal(f"the answer is {len(answer):,} characters, over the limit of {MAX_ANSWER_CHARS:,}")
    try:
        return _verdict(answer, scale)
    except _Refused as refused:
        return Refusal(str(refused))


def _verdict(answer: str, scale: tuple[int, int] | None) -> Verdict | Refusal:
    keys = _SCORE_KEYS if scale is None else _NUMBER_KEYS
    found = [(end, obj) for end, obj in _objects(answer) if _values(obj, keys)]
    if found:
        return _from_json(answer, found, scale, keys)
    phrases = list(_PROSE.finditer(answer))
    if phrases:
        *earlier, last = phrases
        score = _valid(last["value"].rstrip("."), scale, "the last 'score:' phrase")
        shown = tuple(_show(m["value"]) for m in earlier[-_OVERRULED_KEPT:])
        return Verdict(score, None, "prose", shown, len(earlier))
    bare = answer.strip(BARE_PUNCTUATION)
    if scale is None and bare.lower() in _BARE_WORDS:
        return Verdict(_valid(bare, scale, "the bare answer"), None, "bare")
    if scale is not None and _BARE_INTEGER.fullmatch(bare):
        return Verdict(_valid(bare, scale, "the bare answer"), None, "bare")
    return Refusal("it holds no verdict: no JSON object with a score, no 'score:' phrase, no bare score")


def _from_json(
    answer: str,
    found: list[tuple[int, dict[str, Any]]],
    scale: tuple[int, int] | None,
    keys: tuple[str, ...],
) -> Verdict:
    schema = [i for i, (_, obj) in enumerate(found) if _reason(obj) is not None]
    deciding = schema[-1] if schema else len(found) - 1
    end, obj = found[deciding]
    score = _object_score(_values(obj, keys), scale)
    for _, later in found[deciding + 1 :]:
        values = _values(later, keys)
        if any(_quiet(value, scale) != score for value in values):
            raise _Refused(
                f"a later verdict ({_show(values[0])}) disagrees with the last one that has a reason "
                f"({_show(score)}): which is the judge's own cannot be told"
            )
    for phrase in _PROSE.finditer(answer, end):
        if _quiet(phrase["value"].rstrip("."), scale) != score:
            raise _Refused(
                f"a 'score:' phrase after the verdict ({_show(phrase['value'])}) disagrees with it "
                f"({_show(score)}): which is the judge's own cannot be told"
            )
    shown = tuple(_show(_values(other, keys)[0]) for _, other in found[:deciding][-_OVERRULED_KEPT:])
    reason = (_reason(obj) or "").strip() or None
    return Verdict(score, reason, "json", shown, deciding)


def _object_score(values: list[Any], scale: tuple[int, int] | None) -> float:
    scores = [_valid(value, scale, "the verdict") for value in values]
    if len(set(scores)) > 1:
        shown = ", ".join(_show(value) for value in values)
        raise _Refused(f"the verdict gives different scores ({shown})")
    return scores[0]


def _values(obj: dict[str, Any], keys: tuple[str, ...]) -> list[Any]:
    """The values of ``keys`` in ``obj``, matched without case, repeated keys included."""
    values: list[Any] = []
    for key in keys:
        value = obj.get(key)
        if isinstance(value, _Repeated):
            values.extend(value.values)
        elif key in obj:
            values.append(value)
    return values


def _reason(obj: dict[str, Any]) -> str | None:
    """The object's reason as written (``""`` included), or None when it has no string reason."""
    return next((value for value in _values(obj, _REASON_KEYS) if isinstance(value, str)), None)


# ---------------------------------------------------------------- scores


def _valid(value: Any, scale: tuple[int, int] | None, what: str) -> float:
    score = _quiet(value, scale)
    if score is None:
        if scale is None:
            raise _Refused(
                f"{what}'s score {_show(value)} is not a pass/fail (true, false, 1, 0, pass, fail)"
            )
        low, high = scale
        raise _Refused(f"{what}'s score {_show(value)} is not a whole number from {low} to {high}")
    return score


def _quiet(value: Any, scale: tuple[int, int] | None) -> float | None:
    """The score ``value`` stands for on ``scale``, or None when it is not a valid one."""
    if scale is None:
        return _pass_fail(value)
    if isinstance(value, str):
        match = _INTEGER.fullmatch(value.strip())
        if match is None or (match["of"] is not None and int(match["of"]) != scale[1]):
            return None
        value = float(match[0].split("/")[0])
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value) or value != int(value):
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


def _show(value: Any) -> str:
    if isinstance(value, float) and math.isfinite(value) and abs(value) < 1e15 and value == int(value):
        value = int(value)
    text = value if isinstance(value, str) else json.dumps(value, default=str, allow_nan=True)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


# ---------------------------------------------------------------- finding JSON objects


@dataclass(frozen=True)
class _Repeated:
    """A key given more than once in one object (``{"score": 5, "score": 1}``)."""

    values: tuple[Any, ...]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        lowered = key.lower()
        if lowered in obj:
            held = obj[lowered]
            value = _Repeated((*(held.values if isinstance(held, _Repeated) else (held,)), value))
        obj[lowered] = value
    return obj


def _integer(text: str) -> int | float:
    # Python refuses to convert ints over 4,300 digits (a ValueError mid-decode): any int this
    # long is out of every scale, so it stands as infinity, which no scale accepts.
    return int(text) if len(text) <= 30 else math.inf


def _objects(answer: str) -> list[tuple[int, dict[str, Any]]]:
    """``(end, object)`` for each complete top-level JSON object in the answer, in order."""
    found: list[tuple[int, dict[str, Any]]] = []
    budget = [_WORK_PER_CHAR * len(answer) + _WORK_BASE]
    start = answer.find("{")
    while start >= 0:
        decoded = _decoded(answer, start, budget)
        if decoded is None:
            start = answer.find("{", start + 1)
        else:
            found.append(decoded)
            start = answer.find("{", decoded[0])
    return found


def _decoded(answer: str, start: int, budget: list[int]) -> tuple[int, dict[str, Any]] | None:
    """``(end, object)`` when a JSON object opens at ``start`` and closes; else None."""
    end = _closing(answer, start, budget)
    if end is None:
        return None
    _spend(budget, end - start)  # what the decoder reads
    try:
        value = json.loads(answer[start:end], object_pairs_hook=_pairs, parse_int=_integer)
    except ValueError:
        return None
    return (end, value) if isinstance(value, dict) else None


def _closing(text: str, start: int, budget: list[int]) -> int | None:
    """The end of the bracketed span opening at ``start``, or None when it never closes.

    Iterative and string-aware; brackets of either kind count toward the depth (a mismatched
    pair is left to the JSON decoder to reject). Raises `_Refused` past `MAX_DEPTH` or when the
    scan's total work (``budget``: characters walked, a little more per step) runs out.
    """
    depth, at = 0, start
    while True:
        match = _SIGNIFICANT.search(text, at)
        if match is None:
            end = None
            break
        _spend(budget, match.end() - at)
        at = match.end()
        char = match[0]
        if char == '"':
            at = _string_end(text, at, budget)
            if at < 0:
                end = None
                break
        elif char in "{[":
            depth += 1
            if depth > MAX_DEPTH:
                raise _Refused(f"its JSON is nested more than {MAX_DEPTH} deep")
        else:
            depth -= 1
            if depth == 0:
                end = at
                break
    return end


def _string_end(text: str, at: int, budget: list[int]) -> int:
    """Just past the closing quote of the JSON string whose body starts at ``at``; -1 if none."""
    while True:
        stop = _STRING_STOP.search(text, at)
        if stop is None:
            return -1
        _spend(budget, stop.end() - at)
        if stop[0] == '"':
            return stop.end()
        at = stop.end() + 1  # a backslash escapes the next character


def _spend(budget: list[int], walked: int) -> None:
    budget[0] -= walked + _STEP_COST
    if budget[0] < 0:
        raise _Refused("it holds too many unclosed brackets or quotes to read safely")
