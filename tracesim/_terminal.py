"""Untrusted text made harmless to print: the one place that decides what a terminal may see.

Span names, attribute values, evaluator names and labels, status messages and service names
come from trace files that anyone may have written. Printed raw, ``\\x1b]0;title\\x07`` retitles
the window, ``\\x1b[2J`` clears the screen, ``\\r`` overwrites a line, ``\\x9b`` is an 8-bit
CSI, and U+202E reverses the text after it. `visible` shows every such character instead of
obeying it: C0 controls and DEL as their Unicode control pictures (``\\x1b`` → ``␛``), everything
else (C1 controls, bidirectional overrides, line separators, lone surrogates) as Python escape
text (``\\x9b``, ``\\u202e``). `tracesim show`, the console exporter and `tracesim report` (tables
and HTML page) all call it, so they agree on what is shown.

`json_for_terminal` keeps ``--json`` output exact while making it as harmless: it escapes the
same characters as JSON ``\\u`` escapes, which decode back to the original text.
"""

from __future__ import annotations

__all__ = ["json_for_terminal", "visible"]

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_SEPARATORS = (0x2028, 0x2029)


def _table() -> dict[int, str]:
    table: dict[int, str] = {c: chr(0x2400 + c) for c in range(0x20)}  # ␀ … ␟
    table[0x7F] = "\u2421"  # ␡
    for c in (*range(0x80, 0xA0), *_BIDI, *_SEPARATORS, *range(0xD800, 0xE000)):
        table[c] = f"\\x{c:02x}" if c < 0x100 else f"\\u{c:04x}"
    return table


_VISIBLE = _table()
_JSON = {c: f"\\u{c:04x}" for c in _VISIBLE if c >= 0x7F}  # json.dumps escapes C0 itself


def visible(text: str) -> str:
    """``text`` with every character that could steer a terminal or reorder text made visible.

    Example:
        >>> visible("\\x1b]0;pwned\\x07ok\\r\\x9b\\u202eevil")
        '␛]0;pwned␇ok␍\\\\x9b\\\\u202eevil'
        >>> visible("Grüße, 東京 🍕")
        'Grüße, 東京 🍕'
    """
    if text.isprintable():  # every character we rewrite is non-printable: the common fast path
        return text
    return text.translate(_VISIBLE)


def json_for_terminal(dumped: str) -> str:
    """JSON text (from ``json.dumps(..., ensure_ascii=False)``) with the same characters ``\\u``-escaped.

    Such characters can only occur inside JSON strings, where the escape means the same
    character, so the document decodes to exactly the same value.

    Example:
        >>> import json
        >>> text = json_for_terminal(json.dumps({"name": "a\\u202eb\\x9b"}, ensure_ascii=False))
        >>> text
        '{"name": "a\\\\u202eb\\\\u009b"}'
        >>> json.loads(text)["name"] == "a\\u202eb\\x9b"
        True
    """
    if dumped.isprintable():
        return dumped
    return dumped.translate(_JSON)
