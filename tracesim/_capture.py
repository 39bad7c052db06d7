"""Any Python value -> attribute text, bounded. Never raises.

This runs on the caller's thread, so its cost must not grow with the value: a value is cut to
``max_value_chars`` *while* it is serialised, not after. Small values (the common case) take
one C ``json.dumps``; a value that a quick bounded probe finds large is written by a streaming
encoder that stops once the limit is reached, so a 1000x1000 array or a dict of a million keys
costs about as much as 32 KiB of text. Problems (cycles, NaN, objects whose conversion fails)
become visible placeholders. A cut never splits a token that could hold a secret (see
`tracesim._redact.safe_cut`).

Redaction is not done here: every exported span goes through one redaction pass in the export
path (`tracesim.exporters.RedactingExporter`), whoever created it.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import re
import uuid
from collections.abc import Callable, Iterator, Mapping, Set
from dataclasses import dataclass
from decimal import Decimal
from pathlib import PurePath
from typing import Any, NamedTuple

from opentelemetry.util.types import AttributeValue

from tracesim import _semconv as sc
from tracesim._guard import warn_once
from tracesim._redact import MARGIN, safe_cut

__all__ = [
    "CaptureOptions",
    "Captured",
    "bounded_json",
    "capture_value",
    "captured_attributes",
    "cut",
    "dumps",
    "is_small",
    "to_jsonable",
]

_MAX_DEPTH = 64
_TRUNCATED = "…[truncated: {} chars]"
_TRUNCATED_UNKNOWN = "…[truncated]"
# A value with at most this many leaves and containers is serialised in one C call.
_SMALL_NODES = 512
# An array with more elements is recorded as its shape, dtype and first values.
_ARRAY_WHOLE = _SMALL_NODES
_ARRAY_HEAD = 256


class Captured(NamedTuple):
    """A value ready to be recorded: its text, MIME type and, when cut, its original length.

    ``original_chars`` is None for a value that was not cut, and -1 for a value cut while it
    was serialised (its full length was never computed, on purpose).
    """

    text: str
    mime_type: str
    original_chars: int | None = None


@dataclass(frozen=True)
class CaptureOptions:
    """How values are captured; built once from the settings."""

    enabled: bool = True
    max_value_chars: int = 32 * 1024


# ---------------------------------------------------------------- conversion of one object


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


def _make_encode(ascii_only: bool = False) -> Callable[[Any], str]:
    """``json.dumps`` with tracesim's options, minus the encoder object it builds every call.

    ``ascii_only`` escapes every non-ASCII character: the same JSON document, and CPython's
    encoder writes pure-ASCII text about a quarter faster that way than in its UTF-8 mode.
    """
    try:
        from _json import make_encoder  # CPython's C encoder
        from json.encoder import encode_basestring, encode_basestring_ascii
    except ImportError:  # pragma: no cover - other interpreters
        options = {"ensure_ascii": ascii_only, "allow_nan": False, "separators": (",", ":")}
        return lambda value: json.dumps(value, default=_default, **options)  # type: ignore[arg-type]

    quote = encode_basestring_ascii if ascii_only else encode_basestring

    def encode(value: Any) -> str:
        if isinstance(value, str):
            return quote(value)
        # a fresh circular-reference table per call, as json.dumps has
        chunks = make_encoder({}, _default, quote, None, ":", ",", False, False, False)
        return "".join(chunks(value, 0))

    return encode


# Where the ASCII encoder escaped a character: `re` finds a two-character needle in a third of
# the time `str` takes (a ``memchr`` for the backslash comes first: most texts have none).
_UNICODE_ESCAPE = re.compile(r"\\u")
_encode = _make_encode()
_encode_ascii = _make_encode(ascii_only=True)


def dumps(value: Any, *, ascii_text: bool = False) -> str:
    """Serialise any value to JSON text, whole. Never raises.

    ``ascii_text`` says every string in ``value`` is ASCII (`is_small` finds out): the faster
    encoder then runs, and its output is kept unless it escaped something (a key, a converted
    object), in which case the text is written again with non-ASCII characters as they are.

    Example:
        >>> dumps({"city": "Warsaw", "when": __import__("datetime").date(2024, 5, 1)})
        '{"city":"Warsaw","when":"2024-05-01"}'
        >>> dumps({"miasto": "Kraków"}, ascii_text=True)
        '{"miasto":"Kraków"}'
    """
    try:
        if ascii_text:
            text = _encode_ascii(value)
            if "\\" not in text or _UNICODE_ESCAPE.search(text) is None:  # one memchr, most often
                return text
        return _encode(value)
    except (ValueError, TypeError, RecursionError):
        pass  # cycles, NaN, non-string keys, self-referencing conversions: take the careful path
    try:
        return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))
    except Exception:
        return json.dumps(_describe(value))


# ---------------------------------------------------------------- bounded serialisation


def is_small(value: Any, chars: int, nodes: int = _SMALL_NODES) -> bool:
    """Whether ``value`` has at most ``nodes`` nodes and ``chars`` characters of text.

    Stops as soon as the budget is spent, so a huge value costs a few hundred steps here.
    Objects it does not know count as one node (their conversion is bounded by the caller).

    Example:
        >>> is_small({"q": "short"}, 100), is_small(list(range(10_000)), 100)
        (True, False)
    """
    return _size(value, chars, nodes) != _LARGE


_LARGE, _ASCII, _TEXT = 0, 1, 2  # what _size finds: too large; small, all text ASCII; small


def _size(value: Any, chars: int, nodes: int = _SMALL_NODES) -> int:
    """`is_small`, telling small values whose strings are all ASCII (``_ASCII``) from the others."""
    ascii_only = True
    stack = [value]
    while stack:
        item = stack.pop()
        nodes -= 1
        if nodes < 0:
            return _LARGE
        kind = type(item)  # exact types first: the common JSON shapes skip the isinstance chain
        if kind is str:
            chars -= len(item)
            if chars < 0:
                return _LARGE
            if ascii_only and not item.isascii():  # isascii reads a flag: O(1)
                ascii_only = False
        elif kind is dict:
            if len(item) > nodes:
                return _LARGE
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            if len(item) > nodes:
                return _LARGE
            stack.extend(item)
        elif kind in _SCALARS:
            pass
        elif not _is_small_other(item, stack, nodes):
            return _LARGE
        elif isinstance(item, str):
            ascii_only = False  # a subclass: its text is what str() gives
            chars -= len(_plain(item))
            if chars < 0:
                return _LARGE
        elif isinstance(item, (bytes, bytearray)):
            chars -= len(item) * 2
            if chars < 0:
                return _LARGE
    return _ASCII if ascii_only else _TEXT


_SCALARS = frozenset({int, float, bool, type(None)})


def _is_small_other(item: Any, stack: list[Any], nodes: int) -> bool:
    """`is_small` for anything but the exact JSON types: push its children, False when too big."""
    if isinstance(item, (str, bytes, bytearray, int, float)) or item is None:
        return True  # counted by the caller (subclasses of str and bytes) or a single node
    if isinstance(item, Mapping):
        if len(item) > nodes:
            return False
        stack.extend(item.values())
    elif isinstance(item, (list, tuple, Set)):
        if len(item) > nodes:
            return False
        stack.extend(item)
    else:
        size = getattr(item, "size", None)  # numpy arrays, torch tensors have one
        if isinstance(size, int) and size > nodes:
            return False
        if hasattr(item, "model_fields") or dataclasses.is_dataclass(item):
            fields = getattr(item, "__dict__", None)
            if isinstance(fields, dict):
                if len(fields) > nodes:
                    return False
                stack.extend(fields.values())
    return True


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
        out.write(_int_text(value))
    elif isinstance(value, float):
        out.write(repr(value) if value == value and abs(value) != float("inf") else f'"{value!r}"')
    elif isinstance(value, str):
        text = _plain(value)
        out.write(json.dumps(text[: max(out.budget, 0) + 1], ensure_ascii=False))
    elif id(value) in seen:
        out.write(json.dumps(f"<cycle: {type(value).__name__}>"))
    elif depth >= _MAX_DEPTH:
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
        converted = _default(value)
        if isinstance(converted, str):
            _stream(converted, out, seen, depth + 1)
        elif converted is value:
            out.write(json.dumps(_describe(value)))
        else:
            _stream(converted, out, seen, depth + 1)


def _stream_pairs(pairs: Iterator[tuple[Any, Any]], out: _Writer, seen: set[int], depth: int) -> None:
    out.write("{")
    for index, (key, item) in enumerate(pairs):
        out.write(("," if index else "") + json.dumps(_key(key), ensure_ascii=False) + ":")
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

    ``{"ndarray": {"shape": [1000, 1000], "dtype": "float64"}, "head": [...256 values], "omitted": 999744}``
    """
    flat = getattr(array, "flat", None)  # numpy: a copy of the first values only, whatever the strides
    head = flat[:_ARRAY_HEAD] if flat is not None and array.ndim > 1 else array[:_ARRAY_HEAD]
    described: dict[str, Any] = {"shape": [int(n) for n in getattr(array, "shape", (array.size,))]}
    dtype = getattr(array, "dtype", None)
    if dtype is not None:
        described["dtype"] = str(dtype)
    out.write('{"ndarray":' + json.dumps(described, separators=(",", ":")) + ',"head":')
    _stream_vector(head, out, seen, depth + 1)
    out.write(f',"omitted":{int(array.size) - len(head)}}}')


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


def _int_text(value: int) -> str:
    try:
        return str(value)
    except ValueError:  # more digits than int-to-str conversion allows
        return json.dumps(f"<int of {value.bit_length()} bits>")


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
        size = _size(value, limit)
        if size != _LARGE:
            text = dumps(value, ascii_text=size == _ASCII)
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


# ---------------------------------------------------------------- attribute text


def cut(text: str, limit: int, original: int | None) -> str:
    """``text`` cut, never inside a token, with a visible marker: ``limit`` characters in all.

    Example:
        >>> cut("see https://example.com/a/very/long/path and more", 30, 49)
        'see …[truncated: 49 chars]'
    """
    marker = _TRUNCATED.format(original) if original is not None and original >= 0 else _TRUNCATED_UNKNOWN
    # The marker counts towards the limit: the export pass then never cuts the value again.
    return text[: safe_cut(text, max(0, limit - len(marker)))] + marker


def capture_value(value: Any, options: CaptureOptions) -> Captured:
    """Serialise and cut ``value`` for an attribute. Never raises; the cost is bounded.

    Strings are recorded as themselves (``text/plain``), other values as JSON. A value longer
    than ``max_value_chars`` is cut, with a marker; a cut JSON document is labelled as text.

    Example:
        >>> capture_value({"city": "Warsaw"}, CaptureOptions())
        Captured(text='{"city":"Warsaw"}', mime_type='application/json', original_chars=None)
    """
    limit = options.max_value_chars
    try:
        if isinstance(value, str):
            text = _plain(value)
            if len(text) <= limit:
                return Captured(text, sc.MIME_TEXT)
            return Captured(cut(text, limit, len(text)), sc.MIME_TEXT, len(text))
        if isinstance(value, (bool, int, float)) and not isinstance(value, enum.Enum):
            return Captured(_int_text(value) if isinstance(value, int) else repr(value), sc.MIME_TEXT)
        # A little past the limit, so the cut can see whether a token (or a secret) crosses it.
        text, whole = bounded_json(value, limit + MARGIN + 1)
        if whole and len(text) <= limit:
            return Captured(text, sc.MIME_JSON)
        original = len(text) if whole else -1
        return Captured(cut(text, limit, original), sc.MIME_TEXT, original)
    except Exception:
        warn_once("capture", "tracesim: could not capture a value; recorded a placeholder")
        return Captured(f"<capture failed: {type(value).__qualname__}>", sc.MIME_TEXT)


def make_options(enabled: bool, max_value_chars: int) -> CaptureOptions:
    """Build `CaptureOptions` from settings."""
    return CaptureOptions(enabled, max_value_chars)


def captured_attributes(
    value: Any, value_key: str, mime_key: str, length_key: str, options: CaptureOptions
) -> dict[str, AttributeValue]:
    """The attributes recording ``value``: text, MIME type and, when cut, the original length."""
    captured = capture_value(value, options)
    attributes: dict[str, AttributeValue] = {value_key: captured.text, mime_key: captured.mime_type}
    if captured.original_chars is not None and captured.original_chars >= 0:
        attributes[length_key] = captured.original_chars
    return attributes
