"""Any Python value -> attribute text, bounded. Never raises.

This runs on the caller's thread, so its cost must not grow with the value: a value is cut to
``max_value_chars`` *while* it is serialised, not after. Small values (the common case) take
one C ``json.dumps``; a value that a quick bounded probe finds large is written by a streaming
encoder that stops once the limit is reached, so a 1000x1000 array or a dict of a million keys
costs about as much as 32 KiB of text. Problems (cycles, NaN, objects whose conversion fails)
become visible placeholders. A cut never splits a token that could hold a secret (see
`tracesim._redact.safe_cut`).

The pieces, each calling only those after it: this module (JSON text -> attribute values: the
cut, its marker, the MIME type), `_json_text` (any value -> bounded JSON text: `bounded_json`,
which picks the one-call `dumps` or the streaming encoder), `_size` (the bounded probe that tells
small values from large ones) and `_jsonable` (any object -> JSON-able data: `to_jsonable`, and
the stand-ins both writers use for what JSON does not know).

Redaction is not done here: every exported span goes through one redaction pass in the export
path (`tracesim.exporters.RedactingExporter`), whoever created it.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, NamedTuple

from opentelemetry.util.types import AttributeValue

from tracesim import _semconv as sc
from tracesim._capture._json_text import bounded_json, dumps, int_text
from tracesim._capture._jsonable import exact_str, to_jsonable
from tracesim._capture._size import is_small
from tracesim._internal_errors import warn_once
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


# The marker that ends a cut value; it counts towards the limit.
_TRUNCATED = "…[truncated: {} chars]"
_TRUNCATED_UNKNOWN = "…[truncated]"  # cut while serialised: the full length was never computed


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
            text = exact_str(value)
            if len(text) <= limit:
                return Captured(text, sc.MIME_TEXT)
            return Captured(cut(text, limit, len(text)), sc.MIME_TEXT, len(text))
        if isinstance(value, (bool, int, float)) and not isinstance(value, enum.Enum):
            return Captured(int_text(value) if isinstance(value, int) else repr(value), sc.MIME_TEXT)
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
    if type(value) is str and len(value) <= options.max_value_chars:  # most outputs: as `capture_value`
        return {value_key: value, mime_key: sc.MIME_TEXT}
    captured = capture_value(value, options)
    attributes: dict[str, AttributeValue] = {value_key: captured.text, mime_key: captured.mime_type}
    if captured.original_chars is not None and captured.original_chars >= 0:
        attributes[length_key] = captured.original_chars
    return attributes
