"""Rows in, result lines out, for ``tracesim eval``: whatever a data file holds.

Reading: a JSONL line that is not a JSON object (torn, invalid UTF-8, over a limit of
`tracesim._inputs`: longer than 64 MiB, read past without being held whole, or nested more
than 900 levels deep, `tracesim.batch._records.READ_DEPTH`) and a CSV row with bytes that are
not UTF-8 become bad rows with their line number; the rest are read. The rules for one row live in
`tracesim.batch._records`, shared with the partitioned sources of ``--engine dask``. Writing:
every results line is strict JSON, whatever the row held (see `dumps`). Text from the file
that reaches the terminal goes through `visible`.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tracesim import _inputs
from tracesim._outputs import echo
from tracesim.batch._records import BadRow, Columns, Row, csv_row, json_rows, not_utf8

__all__ = ["BadRow", "Columns", "Row", "UsageError", "count_rows", "dumps", "finite", "read_rows", "visible"]

_MAX_DEPTH = 64
"""Deeper values are written as ``null`` in the results (JSON parsers stop near 1000 levels)."""


def visible(text: str) -> str:
    """Text from the data file or the command line, safe to print (control characters shown)."""
    from tracesim._terminal import visible as make_visible

    return make_visible(text)


class UsageError(Exception):
    """Bad arguments or configuration: reported, exit status 2."""


def _read_jsonl(path: Path, cols: Columns) -> Iterator[Row | BadRow]:
    return json_rows(_inputs.json_lines(path), cols)  # as --engine dask reads each block


def _read_csv(path: Path, cols: Columns) -> Iterator[Row | BadRow]:
    import csv

    csv.field_size_limit(min(sys.maxsize, 2**31 - 1))
    # surrogateescape: a byte that is not UTF-8 costs its own row, not the rest of the file
    # (text is decoded in blocks, so a strict decoder fails rows, or the header, before it).
    with path.open(encoding="utf-8-sig", errors="surrogateescape", newline="") as handle:
        reader = csv.DictReader(handle)
        try:
            header = list(reader.fieldnames or [])
        except csv.Error as exc:
            raise UsageError(f"{path}: unreadable CSV header ({exc})") from None
        if any(not_utf8(name) for name in header):
            raise UsageError(f"{path}: the CSV header is not valid UTF-8")
        if cols.output not in header and cols.tool_calls not in header:
            raise UsageError(f"{path}: no {cols.output!r} column (columns: {', '.join(header) or 'none'})")
        if cols.expected not in header and not cols.has_runs(header):
            echo(
                visible(f"tracesim eval: note: {path} has no {cols.expected!r} column; every row is skipped"),
                file=sys.stderr,
            )
        try:
            for row in reader:
                yield csv_row(reader.line_num, row, cols)
        except csv.Error as exc:
            yield reader.line_num + 1, f"unreadable CSV from here on ({exc})"


def read_rows(path: Path, fmt: str, cols: Columns) -> Iterator[Row | BadRow]:
    """The rows of a ``jsonl`` or ``csv`` file, in order; a file that fails mid-read is a `UsageError`."""
    rows = _read_csv(path, cols) if fmt == "csv" else _read_jsonl(path, cols)
    try:
        yield from rows
    except OSError as exc:  # opened fine, then failed (an I/O error, a file in /proc)
        raise UsageError(f"cannot read {path}: {exc.strerror or exc}") from None


def count_rows(path: Path, fmt: str) -> int | None:
    """About how many rows there are (for the progress bar); None when the file cannot be read."""
    try:  # a long line is read past in blocks, not held (nor, for a count, stripped)
        lines = sum(1 for _, _, line in _inputs.json_lines(path) if line is None or line.strip())
    except OSError:
        return None
    return max(lines - 1, 0) if fmt == "csv" else lines


def dumps(line: dict[str, Any]) -> str:
    """One results line of strict JSON, whatever the row held.

    NaN and the infinities (``1e999`` in the data) become ``null``, so do values nested deeper
    than 64 levels; a lone surrogate (``"\\ud800"`` in the data) stays a ``\\u`` escape, so
    the line is valid UTF-8.

    Example:
        >>> dumps({"id": float("inf"), "output": [[["deep"]]], "name": "café"})
        '{"id": null, "output": [[["deep"]]], "name": "café"}'
    """
    try:
        text = json.dumps(line, ensure_ascii=False, allow_nan=False)
    except (ValueError, RecursionError):  # NaN or an infinity, or nested too deeply
        text = json.dumps(_json_safe(line, 0), ensure_ascii=False, allow_nan=False)
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate from a "\ud800" escape: keep it escaped
            text = json.dumps(json.loads(text), allow_nan=False)
    return text


def _json_safe(value: Any, depth: int) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if depth >= _MAX_DEPTH:
        return None if isinstance(value, (dict, list, tuple)) else value
    if isinstance(value, dict):
        return {str(k): _json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json_safe(v, depth + 1) for v in value]
    return value


def finite(score: float | None) -> float | None:
    """``score``, or None for NaN and the infinities (which no mean or rate should take in)."""
    return score if score is None or math.isfinite(score) else None
