"""Turning any value into the text that text metrics compare, and half-up rounding."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
import math
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

__all__ = ["as_text", "round_half_up"]


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
