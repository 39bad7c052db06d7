"""Any value -> JSON text of bounded length. Never raises.

Two writers, one per size of value, chosen by the bounded probe (`tracesim._capture._size`):
a small value (the common case) is written whole by one C ``json.dumps`` call (`dumps`); a
large one by a streaming encoder that writes element by element and stops once the limit is
written, so its cost follows the limit, not the value. `bounded_json` chooses; both writers take
what JSON does not know from `tracesim._capture._jsonable`.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator, Mapping, Set
from typing import Any

from tracesim._capture._jsonable import MAX_DEPTH, describe, exact_str, key_text, stand_in, to_jsonable
from tracesim._capture._size import SMALL_NODES, _is_small_python, plain_small
from tracesim._internal_errors import warn_once

# An array with more elements is recorded as its shape, dtype and first values.
_ARRAY_WHOLE = SMALL_NODES
_ARRAY_HEAD = 16  # a preview: each float written costs one to two microseconds on the caller


def bounded_json(value: Any, limit: int) -> tuple[str, bool]:
    """``value`` as JSON text of at most about ``limit`` characters, and whether it is whole.

    The cost is bounded by ``limit``, not by the size of ``value``. Never raises.

    Example:
        >>> bounded_json(list(range(1_000_000)), 20)
        ('[0,1,2,3,4,5,6,7,8,9', False)
        >>> bounded_json({"a": 1}, 20)
        ('{"a":1}', True)
    """
    try:
        plain = plain_small(value, limit)
        if plain or (plain is None and _is_small_python(value, limit)):
            text = _dumps_plain(value) if plain else dumps(value)
            return (text, True) if len(text) <= limit else (text[:limit], False)
        out = _Writer(limit)
        try:
            _stream(value, out, set(), 0)
        except _Full:
            return "".join(out.parts)[:limit], False
        return "".join(out.parts), True
    except Exception:
        warn_once("capture", "tracesim: could not serialise a value; recorded a placeholder")
        return json.dumps(f"<capture failed: {type(value).__qualname__}>"), True


def int_text(value: int) -> str:
    """An int as JSON text; one with more digits than int-to-str conversion allows, as a placeholder."""
    try:
        return str(value)
    except ValueError:
        return json.dumps(f"<int of {value.bit_length()} bits>")


# ---------------------------------------------------------------- whole: one C call (small values)


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
        return json.dumps(describe(value))


def _dumps_plain(value: Any) -> str:
    """`dumps` for a small tree of the exact JSON types (`plain_small`): no cycle is possible,
    so the circular-reference table is left out (a tenth of the C encoder's time on the 10 KB
    chat of ``benchmarks/_workload.py``: every container was entered into and removed from it)."""
    try:
        return _encode_plain(value)
    except (ValueError, TypeError, RecursionError):  # NaN, keys JSON cannot hold, a deep tree
        return dumps(value)


def _make_encode(check_circular: bool = True) -> Callable[[Any], str]:
    """``json.dumps`` with tracesim's options, minus the encoder object it builds every call.

    Non-ASCII text is written as it is (``ensure_ascii=False``): in CPython 3.11 that mode
    also runs fewer instructions on pure-ASCII text than the escaping one (about 9 % fewer on
    the 10 KB chat of ``benchmarks/_workload.py``, counted with cachegrind). Without
    ``check_circular`` the C encoder keeps no state between calls: one is built, once.
    """
    try:
        from _json import make_encoder  # CPython's C encoder
        from json.encoder import encode_basestring
    except ImportError:  # pragma: no cover - other interpreters
        options = {"ensure_ascii": False, "allow_nan": False, "separators": (",", ":")}
        return lambda value: json.dumps(value, default=stand_in, **options)  # type: ignore[arg-type]

    if not check_circular:
        chunks = make_encoder(None, stand_in, encode_basestring, None, ":", ",", False, False, False)

        def encode_tree(value: Any) -> str:
            if isinstance(value, str):
                return encode_basestring(value)
            return "".join(chunks(value, 0))

        return encode_tree

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return encode_basestring(value)
        # a fresh circular-reference table per call, as json.dumps has
        chunks = make_encoder({}, stand_in, encode_basestring, None, ":", ",", False, False, False)
        return "".join(chunks(value, 0))

    return encode


_encode = _make_encode()
_encode_plain = _make_encode(check_circular=False)


# ---------------------------------------------------------------- streamed: stops at the limit (large values)


class _Full(Exception):
    """The streaming encoder has written as much as it may."""


class _Writer:
    __slots__ = ("budget", "parts")

    def __init__(self, budget: int) -> None:
        self.parts: list[str] = []
        self.budget = budget

    def write(self, text: str) -> None:
        self.parts.append(text)
        self.budget -= len(text)
        if self.budget < 0:
            raise _Full


def _stream(value: Any, out: _Writer, seen: set[int], depth: int) -> None:
    """Write ``value`` as JSON, element by element, until ``out`` is full."""
    if value is None or isinstance(value, bool):
        out.write("null" if value is None else "true" if value else "false")
    elif isinstance(value, int):
        out.write(int_text(value))
    elif isinstance(value, float):
        out.write(repr(value) if value == value and abs(value) != float("inf") else f'"{value!r}"')
    elif isinstance(value, str):
        text = exact_str(value)
        out.write(json.dumps(text[: max(out.budget, 0) + 1], ensure_ascii=False))
    elif id(value) in seen:
        out.write(json.dumps(f"<cycle: {type(value).__name__}>"))
    elif depth >= MAX_DEPTH:
        out.write(json.dumps(f"<max depth: {type(value).__name__}>"))
    else:
        seen.add(id(value))
        try:
            _stream_container(value, out, seen, depth)
        finally:
            seen.discard(id(value))


def _stream_container(value: Any, out: _Writer, seen: set[int], depth: int) -> None:
    if isinstance(value, Mapping):
        _stream_pairs(iter(value.items()), out, seen, depth)
    elif isinstance(value, (list, tuple, Set)):
        _stream_items(iter(value), out, seen, depth)
    elif hasattr(value, "model_fields") and isinstance(getattr(value, "__dict__", None), dict):
        _stream_pairs(iter(vars(value).items()), out, seen, depth)  # large pydantic model: field by field
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        pairs = ((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
        _stream_pairs(pairs, out, seen, depth)
    elif _is_array(value):
        if value.size > _ARRAY_WHOLE:
            _stream_summary(value, out, seen, depth)
        elif value.ndim == 1:
            _stream_vector(value, out, seen, depth)
        else:
            _stream_items(iter(value), out, seen, depth)  # a large array: row by row, never tolist() whole
    else:
        converted = stand_in(value)
        if converted is value:  # a conversion that hands the object back: its repr
            out.write(json.dumps(describe(value)))
        else:
            _stream(converted, out, seen, depth + 1)


def _stream_pairs(pairs: Iterator[tuple[Any, Any]], out: _Writer, seen: set[int], depth: int) -> None:
    out.write("{")
    for index, (key, item) in enumerate(pairs):
        out.write(("," if index else "") + json.dumps(key_text(key), ensure_ascii=False) + ":")
        _stream(item, out, seen, depth + 1)
    out.write("}")


def _stream_items(items: Iterator[Any], out: _Writer, seen: set[int], depth: int) -> None:
    out.write("[")
    for index, item in enumerate(items):
        if index:
            out.write(",")
        _stream(_scalar(item), out, seen, depth + 1)
    out.write("]")


def _stream_vector(vector: Any, out: _Writer, seen: set[int], depth: int) -> None:
    """A 1-D array: only as many elements as can fit, converted and written in one C call each."""
    count = min(len(vector), max(1, out.budget // 2) + 1)  # a number and its comma take 2+ characters
    try:
        text = json.dumps(vector[:count].tolist(), allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError):  # NaN, or objects: element by element, with placeholders
        _stream_items(iter(vector), out, seen, depth)
        return
    out.write(text if count == len(vector) else text[:-1])  # a cut vector stays open


def _stream_summary(array: Any, out: _Writer, seen: set[int], depth: int) -> None:
    """A large array as its shape, dtype and first values: formatting numbers is the cost
    (a float takes about a microsecond), so a million of them are never all written.

    ``{"ndarray": {"shape": [1000, 1000], "dtype": "float64"}, "head": [...16 values], "omitted": 999984}``
    """
    flat = getattr(array, "flat", None)  # numpy: a copy of the first values only, whatever the strides
    head = flat[:_ARRAY_HEAD] if flat is not None and array.ndim > 1 else array[:_ARRAY_HEAD]
    shape = ",".join(str(int(n)) for n in getattr(array, "shape", (array.size,)))
    dtype = getattr(array, "dtype", None)
    dtype_text = "" if dtype is None else ',"dtype":' + json.dumps(_dtype_name(dtype))
    out.write('{"ndarray":{"shape":[' + shape + "]" + dtype_text + '},"head":')
    _stream_vector(head, out, seen, depth + 1)
    out.write(f',"omitted":{int(array.size) - len(head)}}}')


_DTYPE_NAMES: dict[Any, str] = {}


def _dtype_name(dtype: Any) -> str:
    """``str(dtype)``, remembered for plain dtypes: numpy computes it in Python each time (about
    10 us). Structured and sub-array dtypes are not remembered: equal ones may print differently
    (an aligned record equals the packed one)."""
    if getattr(dtype, "fields", None) is not None or getattr(dtype, "subdtype", None) is not None:
        return str(dtype)
    try:
        name = _DTYPE_NAMES.get(dtype)
    except TypeError:  # an unhashable dtype-like object
        return str(dtype)
    if name is None:
        name = str(dtype)
        if len(_DTYPE_NAMES) < 256:
            _DTYPE_NAMES[dtype] = name
    return name


def _is_array(value: Any) -> bool:
    """numpy-like: an int ``size``, ``ndim`` >= 1 and ``tolist`` (pandas frames iterate column names)."""
    return (
        isinstance(getattr(value, "size", None), int)
        and isinstance(getattr(value, "ndim", None), int)
        and value.ndim >= 1
        and callable(getattr(value, "tolist", None))
    )


def _scalar(item: Any) -> Any:
    """A numpy scalar as a Python number; anything else unchanged."""
    if getattr(item, "ndim", None) == 0:
        tolist = getattr(item, "tolist", None)
        if callable(tolist):
            return tolist()
    return item
