"""One data row in, one record or one bad row out: the reading rules `tracesim eval` and batch share.

A record is ``(line number, id, output, expected, input)``; a bad row is ``(line number,
message)``. Both the local ``tracesim eval`` and the partitioned sources of `tracesim.batch`
turn rows into records here, so a file reads the same whichever engine scores it: JSONL lines
come from `tracesim._inputs.json_lines` on both, and a line over its 64 MiB limit or nested
more than `READ_DEPTH` levels is a bad row naming the limit. Nothing in this module needs pandas.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tracesim import _inputs

__all__ = [
    "READ_DEPTH",
    "BadRow",
    "Columns",
    "Row",
    "csv_row",
    "json_row",
    "json_rows",
    "not_utf8",
    "reason_of",
]

# Row = (line number, id, output, expected, input); a bad row is (line number, message).
Row = tuple[int, Any, Any, Any, Any]
BadRow = tuple[int, str]

_UNDECODED = re.compile("[\udc80-\udcff]")  # bytes kept by errors="surrogateescape"

READ_DEPTH = 900
"""Deeper rows are bad rows, whatever the stack they are read on. Not `tracesim._inputs.MAX_DEPTH`
(256): a row is scored as deep as ``json`` reads it (about 1,000 levels), its deep values
written as ``null`` in the results."""


@dataclass(frozen=True)
class Columns:
    """Which fields of a row hold the output to score, the reference, the input and the row's id.

    Example:
        >>> Columns(output="answer").expected
        'expected'
    """

    output: str = "output"
    expected: str = "expected"
    input: str = "input"
    id: str = "id"


def json_row(number: int, raw: bytes | None, cols: Columns) -> Row | BadRow | None:
    """The record of one line `tracesim._inputs.json_lines` gave, a bad row saying what is wrong
    with it, or None for a blank line. ``raw`` is None for a line over `_inputs.MAX_LINE_BYTES`.

    Example:
        >>> json_row(3, b'{"output": "Paris", "expected": "Paris"}', Columns())
        (3, None, 'Paris', 'Paris', None)
        >>> json_row(4, b'[1, 2]', Columns())
        (4, 'expected a JSON object, got list')
        >>> json_row(5, None, Columns())
        (5, 'a line longer than 67,108,864 bytes (the limit on lines)')
        >>> json_row(6, b"[" * 901, Columns())
        (6, 'JSON nested deeper than 900 levels (the limit on nesting)')
    """
    # The problem only: the file is named once by whoever reports the bad row.
    if raw is None:
        return number, _inputs.too_long("", number, _inputs.MAX_LINE_BYTES).problem
    if _inputs.deeper_than(raw, READ_DEPTH):
        return number, _inputs.too_deep("", number, READ_DEPTH).problem
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return number, f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
    if not text.strip():
        return None
    try:
        row = json.loads(text)
    except ValueError as exc:
        return number, f"invalid JSON ({exc})"
    except RecursionError:
        return number, "invalid JSON (nested too deeply to read)"
    if not isinstance(row, dict):
        return number, f"expected a JSON object, got {type(row).__name__}"
    if cols.output not in row:
        return number, f"no {cols.output!r} field (fields: {_names(row)})"
    return number, row.get(cols.id), row[cols.output], row.get(cols.expected), row.get(cols.input)


def json_rows(lines: Iterable[tuple[int, int, bytes | None]], cols: Columns) -> Iterator[Row | BadRow]:
    """The records and bad rows of the lines `tracesim._inputs.json_lines` gives (blank lines skipped)."""
    for number, _, raw in lines:
        row = json_row(number, raw, cols)
        if row is not None:
            yield row


def csv_row(number: int, row: Mapping[str | None, Any], cols: Columns) -> Row | BadRow:
    """The record of one CSV row read by ``csv.DictReader`` (text decoded with surrogateescape).

    Example:
        >>> csv_row(2, {"output": "Paris", "expected": "Paris"}, Columns())
        (2, None, 'Paris', 'Paris', None)
        >>> csv_row(3, {"output": None, "expected": "Paris"}, Columns())
        (3, "no 'output' value (the row has too few fields)")
    """
    if row.get(cols.output) is None:
        return number, f"no {cols.output!r} value (the row has too few fields)"
    if any(not_utf8(value) for value in row.values()):
        return number, "not valid UTF-8"
    return number, row.get(cols.id), row[cols.output], row.get(cols.expected), row.get(cols.input)


def not_utf8(value: Any) -> bool:
    """Whether a CSV value (a string, or the list of surplus fields) holds undecodable bytes."""
    if isinstance(value, list):
        return any(not_utf8(item) for item in value)
    return isinstance(value, str) and not value.isascii() and _UNDECODED.search(value) is not None


def reason_of(message: str) -> str:
    """The kind of a bad row, without the detail that differs from row to row (for counting).

    Example:
        >>> reason_of("invalid JSON (Expecting value: line 1 column 1 (char 0))")
        'invalid JSON'
    """
    return message.split(" (", 1)[0]


def _names(row: Mapping[str, Any], most: int = 8) -> str:
    """The first field names of a row, for a message that says which column to name instead."""
    names = [repr(name)[:40] for name in list(row)[:most]]
    return (", ".join(names) + (", ..." if len(row) > most else "")) or "none"
