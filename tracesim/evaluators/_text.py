"""Turning any value into the text that text metrics compare, counting, half-up rounding."""

from __future__ import annotations

import collections
import dataclasses
import datetime as _dt
import json
import math
from collections.abc import Callable, Hashable, Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TypeVar

_K = TypeVar("_K", bound=Hashable)

__all__ = ["as_text", "count_into", "cut_texts", "round_half_up"]


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)  # pydantic models
    if callable(dump):
        return dump(mode="json")
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, (bytes, bytearray)):
        return bytes(value).decode("utf-8", "replace")
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, (_dt.date, _dt.time)):
        return value.isoformat()
    return str(value)


def as_text(value: Any) -> str:
    """Return the text a text metric compares for ``value``.

    A ``str`` is used as it is. Any other value becomes a stable JSON dump: keys sorted,
    non-ASCII kept, ``", "`` and ``": "`` separators; pydantic models, dataclasses, sets,
    bytes and dates are converted first, unknown objects fall back to ``str()``. So
    ``{"b": 1, "a": 2}`` and ``{"a": 2, "b": 1}`` give the same text, and ``None`` gives
    ``"null"``.

    Example:
        >>> as_text({"b": 1, "a": [1, 2]})
        '{"a": [1, 2], "b": 1}'
        >>> as_text(3.5), as_text("as is")
        ('3.5', 'as is')
    """
    if type(value) is str:
        return value
    if isinstance(value, str):
        return str(value)
    try:
        return json.dumps(value, sort_keys=True, ensure_ascii=False, default=_json_default)
    except (TypeError, ValueError):  # mixed key types, cycles
        return repr(value)


def cut_texts(output: Any, expected: Any, max_chars: int | None) -> tuple[str, str, int | None]:
    """:func:`as_text` of both values, each cut to its first ``max_chars`` code points.

    The third item is ``max_chars`` when either text was cut (evaluators record it as
    ``details["truncated_to"]``), else None. ``max_chars=None`` cuts nothing.

    Example:
        >>> cut_texts("abcdef", "abc", 4)
        ('abcd', 'abc', 4)
        >>> cut_texts("abc", {"a": 1}, 10)
        ('abc', '{"a": 1}', None)
    """
    a = output if type(output) is str else as_text(output)
    b = expected if type(expected) is str else as_text(expected)
    if max_chars is None or (len(a) <= max_chars and len(b) <= max_chars):
        return a, b, None
    return a[:max_chars], b[:max_chars], max_chars


def _count_py(counts: dict[Any, int], items: Iterable[Any]) -> None:
    for item in items:
        counts[item] = counts.get(item, 0) + 1


# The C helper behind Counter.update (present in CPython and PyPy), without Counter's
# per-call overhead; the loop above where it is missing. It runs without a Python-level
# step, so it holds the GIL for its whole input: callers feed it bounded pieces.
_count_elements: Callable[[dict[Any, int], Iterable[Any]], None] = getattr(
    collections, "_count_elements", _count_py
)


def count_into(counts: dict[_K, int], items: Iterable[_K]) -> None:
    """Add one to ``counts[item]`` for each of ``items``, at C speed.

    Example:
        >>> counts = {"a": 1}
        >>> count_into(counts, ["a", "b", "a"])
        >>> counts
        {'a': 3, 'b': 1}
    """
    _count_elements(counts, items)


_QUANTUM: dict[int, Decimal] = {}
_SCALE = [10.0**places for places in range(16)]


def round_half_up(value: float, places: int) -> float:
    """Round ``value`` to ``places`` decimals, halves away from zero, as JavaScript does.

    The decimal digits rounded are those of the float's shortest ``repr``, so ``0.625``
    rounds to ``0.63`` (Python's ``round`` gives ``0.62``).

    Example:
        >>> round_half_up(0.625, 2), round(0.625, 2)
        (0.63, 0.62)
    """
    # Only a decimal tie (repr ends in a 5 just past the kept places) can round differently
    # from round(), which rounds the exact binary value. Values far from a tie take round().
    if places < len(_SCALE):
        scaled = value * _SCALE[places]
        if scaled < 1e9 and abs(scaled - math.floor(scaled) - 0.5) > 1e-6:
            return round(value, places)
    text = repr(value)
    dot = text.find(".")
    if dot >= 0 and "e" not in text and (text[-1] != "5" or len(text) - dot - 1 != places + 1):
        return round(value, places)
    quantum = _QUANTUM.get(places)
    if quantum is None:
        quantum = _QUANTUM.setdefault(places, Decimal(1).scaleb(-places))
    return float(Decimal(text).quantize(quantum, rounding=ROUND_HALF_UP))
