"""Any Python object -> JSON-able data (plain dicts, lists, strings, numbers). Never raises.

Two ways in: `stand_in` replaces ONE object that JSON does not know (a pydantic model, a
dataclass, a date, an enum, bytes, a numpy array ...) by data JSON does know, a level at a time;
the JSON text writers (`tracesim._capture._json_text`) ask it for each such object they meet.
`to_jsonable` converts a WHOLE value, replacing cycles, NaN and failures with placeholders: the
careful path, for values that are small or off the hot path.

This module writes no JSON text and imports nothing of the package: it is what the writers stand on.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import uuid
from collections.abc import Mapping, Set
from decimal import Decimal
from pathlib import PurePath
from typing import Any

# Containers nested deeper than this are written as a placeholder.
MAX_DEPTH = 64


def stand_in(obj: Any) -> Any:
    """A JSON-able stand-in for one non-JSON object, one level deep; its repr when conversion fails.

    It is also the ``default`` hook of the C JSON encoder, so it must never raise.

    Example:
        >>> stand_in(__import__("datetime").date(2024, 5, 1)), stand_in(b"ok"), stand_in({3, 1, 2})
        ('2024-05-01', 'ok', [1, 2, 3])
    """
    try:
        return _converted(obj)
    except Exception:
        return describe(obj)


def _converted(obj: Any) -> Any:
    model_dump = getattr(obj, "model_dump", None)
    if callable(model_dump) and not isinstance(obj, type):
        return model_dump(mode="json")
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    if isinstance(obj, (datetime.datetime, datetime.date, datetime.time)):
        return obj.isoformat()
    if isinstance(obj, datetime.timedelta):
        return obj.total_seconds()
    if isinstance(obj, enum.Enum):
        return obj.value
    if isinstance(obj, (bytes, bytearray, memoryview)):
        return _bytes_text(bytes(obj))
    if isinstance(obj, (Decimal, uuid.UUID, PurePath)):
        return str(obj)
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, (Set, tuple)):
        return _ordered(obj)
    tolist = getattr(obj, "tolist", None)  # numpy arrays and scalars, torch tensors
    if callable(tolist):
        return tolist()
    if isinstance(obj, BaseException):
        return f"{type(obj).__name__}: {_safe_str(obj)}"
    return describe(obj)


def _ordered(items: Any) -> list[Any]:
    values = list(items)
    if isinstance(items, Set):
        try:
            return sorted(values)
        except TypeError:
            return values
    return values


def _bytes_text(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode("ascii")


def describe(obj: Any) -> str:
    """``repr(obj)``, or a placeholder naming its type when even that fails."""
    try:
        return repr(obj)
    except Exception:
        return f"<unrepresentable {type(obj).__name__} object>"


def _safe_str(obj: object) -> str:
    try:
        return str(obj)
    except Exception:
        return f"<unprintable {type(obj).__name__}>"


def exact_str(text: str) -> str:
    """A `str` subclass as an exact `str`, without calling its (possibly broken) methods."""
    return text if type(text) is str else str.__str__(text)


def key_text(key: Any) -> str:
    """A mapping key as the string JSON needs: numbers as their text, other objects as their repr."""
    if isinstance(key, str):
        return exact_str(key)
    if isinstance(key, (int, float, bool)):
        return _safe_str(key)
    return describe(key)


def to_jsonable(value: Any, _seen: frozenset[int] = frozenset(), _depth: int = 0) -> Any:
    """Convert ``value`` to plain JSON types, replacing cycles and failures with placeholders.

    Example:
        >>> loop: list[object] = [float("nan")]
        >>> loop.append(loop)
        >>> to_jsonable({1: loop})
        {'1': ['nan', '<cycle: list>']}
    """
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return exact_str(value)
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if id(value) in _seen:
        return f"<cycle: {type(value).__name__}>"
    if _depth >= MAX_DEPTH:
        return f"<max depth: {type(value).__name__}>"
    seen = _seen | {id(value)}
    if isinstance(value, dict):
        return {key_text(k): to_jsonable(v, seen, _depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [to_jsonable(v, seen, _depth + 1) for v in value]
    converted = stand_in(value)
    if isinstance(converted, str):
        return exact_str(converted)
    return to_jsonable(converted, seen, _depth + 1)
