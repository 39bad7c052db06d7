"""The arithmetic text metrics share: counting items at C speed, and rounding halves up as JavaScript does."""

from __future__ import annotations

import collections
import math
from collections.abc import Callable, Hashable, Iterable
from decimal import ROUND_HALF_UP, Decimal
from typing import Any, TypeVar

_K = TypeVar("_K", bound=Hashable)

__all__ = ["count_into", "round_half_up"]


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
