"""Conversion of any Python value to JSON-able data and to JSON text; never raises."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import uuid
from collections.abc import Callable, Mapping, Set
from decimal import Decimal
from pathlib import PurePath
from typing import Any

_MAX_DEPTH = 64
_TRUNCATED = "…[truncated: {} chars]"
_TRUNCATED_UNKNOWN = "…[truncated]"
# A value with at most this many leaves and containers is serialised in one C call.
_SMALL_NODES = 512
# An array with more elements is recorded as its shape, dtype and first values.
_ARRAY_WHOLE = _SMALL_NODES
_ARRAY_HEAD = 16  # a preview: each float written costs one to two microseconds on the caller


def _default(obj: Any) -> Any:
    """``json.dumps`` hook: a JSON-able stand-in for a non-JSON value."""
    try:
        return _convert(obj)
    except Exception:
        return _describe(obj)


def _convert(obj: Any) -> Any:
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
        return _bytes(bytes(obj))
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
    return _describe(obj)


def _ordered(items: Any) -> list[Any]:
    values = list(items)
    if isinstance(items, Set):
        try:
            return sorted(values)
        except TypeError:
            return values
    return values


def _bytes(data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "base64:" + base64.b64encode(data).decode("ascii")


def _describe(obj: Any) -> str:
    try:
        return repr(obj)
    except Exception:
        return f"<unrepresentable {type(obj).__name__} object>"


def _safe_str(obj: object) -> str:
    try:
        return str(obj)
    except Exception:
        return f"<unprintable {type(obj).__name__}>"


def _plain(text: str) -> str:
    """A `str` subclass as an exact `str`, without calling its (possibly broken) methods."""
    return text if type(text) is str else str.__str__(text)


# ---------------------------------------------------------------- whole values (small, or not on a hot path)


def to_jsonable(value: Any, _seen: frozenset[int] = frozenset(), _depth: int = 0) -> Any:
    """Convert ``value`` to plain JSON types, replacing cycles and failures with placeholders."""
    if value is None or isinstance(value, (bool, int)):
        return value
    if isinstance(value, str):
        return _plain(value)
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
    if id(value) in _seen:
        return f"<cycle: {type(value).__name__}>"
    if _depth >= _MAX_DEPTH:
        return f"<max depth: {type(value).__name__}>"
    seen = _seen | {id(value)}
    if isinstance(value, dict):
        return {_key(k): to_jsonable(v, seen, _depth + 1) for k, v in value.items()}
    if isinstance(value, list):
        return [to_jsonable(v, seen, _depth + 1) for v in value]
    converted = _default(value)
    if isinstance(converted, str):
        return _plain(converted)
    return to_jsonable(converted, seen, _depth + 1)


def _key(key: Any) -> str:
    if isinstance(key, str):
        return _plain(key)
    if isinstance(key, (int, float, bool)):
        return _safe_str(key)
    return _describe(key)


def _make_encode() -> Callable[[Any], str]:
    """``json.dumps`` with tracesim's options, minus the encoder object it builds every call.

    Non-ASCII text is written as it is (``ensure_ascii=False``): in CPython 3.11 that mode
    also runs fewer instructions on pure-ASCII text than the escaping one (about 9 % fewer on
    the 10 KB chat of ``benchmarks/_workload.py``, counted with cachegrind).
    """
    try:
        from _json import make_encoder  # CPython's C encoder
        from json.encoder import encode_basestring
    except ImportError:  # pragma: no cover - other interpreters
        options = {"ensure_ascii": False, "allow_nan": False, "separators": (",", ":")}
        return lambda value: json.dumps(value, default=_default, **options)  # type: ignore[arg-type]

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return encode_basestring(value)
        # a fresh circular-reference table per call, as json.dumps has
        chunks = make_encoder({}, _default, encode_basestring, None, ":", ",", False, False, False)
        return "".join(chunks(value, 0))

    return encode


_encode = _make_encode()


def dumps(value: Any) -> str:
    """Serialise any value to JSON text, whole. Never raises.

    Example:
        >>> dumps({"city": "Warsaw", "when": __import__("datetime").date(2024, 5, 1)})
        '{"city":"Warsaw","when":"2024-05-01"}'
        >>> dumps({"miasto": "Kraków"})
        '{"miasto":"Kraków"}'
    """
    try:
        return _encode(value)
    except (ValueError, TypeError, RecursionError):
        pass  # cycles, NaN, non-string keys, self-referencing conversions: take the careful path
    try:
        return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))
    except Exception:
        return json.dumps(_describe(value))
