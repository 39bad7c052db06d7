"""The text a text metric compares: any value as stable text, and both texts of a pair cut to a limit."""

from __future__ import annotations

import dataclasses
import datetime as _dt
import json
from typing import Any

__all__ = ["as_text", "cut_texts"]


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
