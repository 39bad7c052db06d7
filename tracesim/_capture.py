"""Any Python value -> attribute text. Truncation, redaction. Never raises.

The fast path is one ``json.dumps`` with a ``default`` hook for non-JSON types. Values it
cannot handle (cycles, non-string keys, NaN, objects whose conversion fails) take a slower
walk that replaces each problem with a visible placeholder, so nothing is dropped silently
and user code never sees an exception from here.
"""

from __future__ import annotations

import base64
import dataclasses
import datetime
import enum
import json
import re
import uuid
from collections.abc import Mapping, Set
from dataclasses import dataclass
from decimal import Decimal
from pathlib import PurePath
from typing import Any, NamedTuple

from tracesim import _semconv as sc
from tracesim._config import Redactor
from tracesim._guard import warn_once

__all__ = ["CaptureOptions", "Captured", "capture_value", "to_jsonable", "to_text"]

_MAX_DEPTH = 64
_REDACT_MARGIN = 256
_TRUNCATED = "…[truncated: {} chars]"


class Captured(NamedTuple):
    """A value ready to be recorded: its text, MIME type and, when cut, its original length."""

    text: str
    mime_type: str
    original_chars: int | None = None


@dataclass(frozen=True)
class CaptureOptions:
    """How values are captured; built once from the settings."""

    enabled: bool = True
    max_value_chars: int = 32 * 1024
    redact: Redactor | None = None
    patterns: tuple[Pattern, ...] = ()


# ---------------------------------------------------------------- built-in redaction patterns


@dataclass(frozen=True)
class Pattern:
    """A built-in redaction rule.

    Cheap checks come first, so that text with no secret, the common case, costs a few
    substring searches instead of a regex scan per rule: ``requires`` holds single
    characters of which a match needs at least one (a ``memchr`` each), ``guards`` literal
    substrings of which a match contains at least one (checked on lower-cased text when
    ``fold`` is set).
    """

    guards: tuple[str, ...]
    regex: re.Pattern[str]
    replacement: str
    fold: bool = False
    requires: tuple[str, ...] = ()


_KEY = "[REDACTED:api_key]"
_PATTERNS: dict[str, tuple[Pattern, ...]] = {
    "bearer": (
        Pattern(
            ("bearer",),
            re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}"),
            "Bearer [REDACTED:token]",
            fold=True,
        ),
    ),
    "api_key": (
        Pattern(("sk-",), re.compile(r"\bsk-[A-Za-z0-9_-]{16,}"), _KEY, requires=("-",)),
        Pattern(("AKIA",), re.compile(r"\bAKIA[0-9A-Z]{16}\b"), _KEY, requires=("A",)),
        Pattern(
            ("gh",),
            re.compile(r"\bgh[pousr]_[A-Za-z0-9]{30,}"),
            _KEY,
            requires=("_",),
        ),
        Pattern(("xox",), re.compile(r"\bxox[abprs]-[A-Za-z0-9-]{10,}"), _KEY, requires=("-",)),
        Pattern(("AIza",), re.compile(r"\bAIza[0-9A-Za-z_-]{35}"), _KEY, requires=("A",)),
        Pattern(("eyJ",), re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"), _KEY),
        Pattern(
            ("key", "secret", "token", "passw"),
            re.compile(
                r"(?i)(\b(?:api[_-]?key|secret|token|password)\b[\"']?\s*[:=]\s*[\"']?)[^\s\"',;]{8,}"
            ),
            r"\1" + _KEY,
            fold=True,
            requires=(":", "="),
        ),
    ),
    "email": (
        Pattern(
            ("@",),
            re.compile(r"[A-Za-z0-9._%+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}"),
            "[REDACTED:email]",
        ),
    ),
}


def compile_patterns(names: tuple[str, ...]) -> tuple[Pattern, ...]:
    """The built-in patterns for the given names, in a fixed order (most specific first)."""
    return tuple(p for name in ("bearer", "api_key", "email") if name in names for p in _PATTERNS[name])


# ---------------------------------------------------------------- conversion


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
        return f"{type(obj).__name__}: {obj}"
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


def to_jsonable(value: Any, _seen: frozenset[int] = frozenset(), _depth: int = 0) -> Any:
    """Convert ``value`` to plain JSON types, replacing cycles and failures with placeholders."""
    if value is None or isinstance(value, (str, bool, int)):
        return value
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
        return converted
    return to_jsonable(converted, seen, _depth + 1)


def _key(key: Any) -> str:
    return (
        key
        if isinstance(key, str)
        else _describe(key)
        if not isinstance(key, (int, float, bool))
        else str(key)
    )


def dumps(value: Any) -> str:
    """Serialise any value to JSON text. Never raises."""
    try:
        return json.dumps(value, default=_default, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError):
        pass  # cycles, NaN, non-string keys, self-referencing conversions: take the careful path
    try:
        return json.dumps(to_jsonable(value), ensure_ascii=False, separators=(",", ":"))
    except Exception:
        return json.dumps(_describe(value))


def to_text(value: Any) -> tuple[str, str]:
    """A value as attribute text and its MIME type: strings as themselves, the rest as JSON."""
    if isinstance(value, str):
        return value, sc.MIME_TEXT
    if isinstance(value, (bool, int, float)) and not isinstance(value, enum.Enum):
        return str(value), sc.MIME_TEXT
    return dumps(value), sc.MIME_JSON


# ---------------------------------------------------------------- truncation and redaction


def _redact(text: str, attribute: str, options: CaptureOptions) -> str:
    folded: str | None = None
    for rule in options.patterns:
        if rule.requires:
            for char in rule.requires:
                if char in text:
                    break
            else:
                continue
        if rule.fold:
            if folded is None:
                folded = text.lower()
            haystack = folded
        else:
            haystack = text
        for guard in rule.guards:  # a plain loop: a generator here doubles the cost
            if guard in haystack:
                text = rule.regex.sub(rule.replacement, text)
                folded = None
                break
    if options.redact is not None:
        try:
            result = options.redact(text, attribute)
        except Exception:
            warn_once("redact", "tracesim: the redact hook raised; the value was withheld")
            return "[REDACTED: redact hook failed]"
        checked: object = result  # hooks are user code: do not trust the annotation
        if not isinstance(checked, str):
            warn_once(
                "redact-type", "tracesim: the redact hook returned a non-string; the value was withheld"
            )
            return "[REDACTED: redact hook returned a non-string]"
        text = result
    return text


def capture_value(value: Any, attribute: str, options: CaptureOptions) -> Captured:
    """Serialise, cut and redact ``value`` for ``attribute``. Never raises.

    Long values are cut to ``max_value_chars`` with a visible marker, and the original length
    is kept. Redaction runs on a window slightly wider than what is kept, so a secret that
    straddles the cut is still found, while a 5 MB value costs no 5 MB regex scan.
    """
    try:
        text, mime = to_text(value)
        limit = options.max_value_chars
        original = len(text)
        if original <= limit:
            return Captured(_redact(text, attribute, options), mime)
        end = limit + _REDACT_MARGIN
        window = _redact(text[:end], attribute, options)
        # When the window itself cut the text, its tail may hold the start of a secret that
        # no pattern could match: keep clear of it.
        keep = limit if original <= end else max(0, min(limit, len(window) - _REDACT_MARGIN))
        # A cut JSON document is no longer JSON, so it is labelled as text.
        return Captured(window[:keep] + _TRUNCATED.format(original), sc.MIME_TEXT, original)
    except Exception:
        warn_once("capture", "tracesim: could not capture a value; recorded a placeholder")
        return Captured(f"<capture failed: {type(value).__qualname__}>", sc.MIME_TEXT)


def make_options(
    enabled: bool, max_value_chars: int, redact: Redactor | None, pattern_names: tuple[str, ...]
) -> CaptureOptions:
    """Build `CaptureOptions` from settings."""
    return CaptureOptions(enabled, max_value_chars, redact, compile_patterns(pattern_names))
