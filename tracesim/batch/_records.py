"""One data row in, one record or one bad row out: the reading rules `tracesim eval` and batch share.

A record is ``(line number, id, output, expected, input)``; a bad row is ``(line number,
message)``. A row with a ``tool_calls`` or ``expected_tool_calls`` field (an agent's run, see
`run_cells`) has a sixth item, the `RunValues` run evaluators score; a cell there that is not
a list of tool calls makes the row a bad row naming the column and the item.

Both the local ``tracesim eval`` and the partitioned sources of `tracesim.batch` turn rows into
records here, so a file reads the same whichever engine scores it: JSONL lines
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
from tracesim.batch._score_rows import RunValues

__all__ = [
    "READ_DEPTH",
    "BadRow",
    "Columns",
    "Row",
    "RunValues",
    "csv_row",
    "json_row",
    "json_rows",
    "not_utf8",
    "reason_of",
    "run_cells",
]

# Row = (line number, id, output, expected, input), then the run's values when the row has any;
# a bad row is (line number, message).
Row = tuple[int, Any, Any, Any, Any] | tuple[int, Any, Any, Any, Any, RunValues]
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
    tool_calls: str = "tool_calls"
    expected_tool_calls: str = "expected_tool_calls"

    def has_runs(self, names: Iterable[Any]) -> bool:
        """Whether fields ``names`` hold a run: a tool calls or expected tool calls column."""
        return any(name in (self.tool_calls, self.expected_tool_calls) for name in names)


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
    return _record(number, row, cols, f"no {cols.output!r} field (fields: {_names(row)})")


def _record(number: int, row: Mapping[Any, Any], cols: Columns, no_output: str) -> Row | BadRow:
    """The record of a row read (a JSON object, a CSV row): with its run when it has one."""
    runs = cols.has_runs(row)
    if cols.output not in row and not (runs and cols.tool_calls in row):
        return number, no_output
    record = (number, row.get(cols.id), row.get(cols.output), row.get(cols.expected), row.get(cols.input))
    if not runs:
        return record
    run = run_cells(row, cols)
    return (number, run) if isinstance(run, str) else (*record, run)


def run_cells(row: Mapping[Any, Any], cols: Columns) -> RunValues | str:
    """What run evaluators score of a row with tool call columns, or why the row is bad.

    The run's output is the ``tool_calls`` cell (a list of ``{"name", "arguments"}``, or JSON
    text of one), else the output cell; the expected value an `Expected` of the expected cell and
    the ``expected_tool_calls`` cell. An empty cell (null, ``""``) is no value: a row with no
    tool calls is skipped by run evaluators, saying so; one without expected calls is skipped
    by those that compare calls. Arguments that are not a JSON object stay text.

    Example:
        >>> run = run_cells({"tool_calls": '[{"name": "lookup", "arguments": {"city": "Oslo"}}]',
        ...                  "expected_tool_calls": [{"name": "lookup"}]}, Columns())
        >>> run.output, run.expected.tool_calls
        ([ToolCall(name='lookup', arguments={'city': 'Oslo'})], (ToolCall(name='lookup', arguments={}),))
        >>> print(run_cells({"tool_calls": '[{"arguments": {}}]'}, Columns()))
        bad 'tool_calls' cell (tool_calls[0].name: got None; accepted: the tool's name, a non-empty string)
    """
    from tracesim._errors import ConfigError
    from tracesim.runs import NOT_GIVEN, Expected, tool_calls

    try:
        expected_calls = _cell(row.get(cols.expected_tool_calls))
        checked_expected = (
            None if expected_calls is None else tool_calls(expected_calls, cols.expected_tool_calls)
        )
        column = cols.tool_calls if cols.tool_calls in row else cols.output
        output = _cell(row.get(column))
        checked_output = None if output is None or column != cols.tool_calls else tool_calls(output, column)
    except ConfigError as exc:
        column = exc.setting.split("[", 1)[0]
        return f"bad {column!r} cell ({exc.setting}: got {_shown(exc.value)}; accepted: {_accepted(exc)})"
    expected_output = row.get(cols.expected)
    expected = Expected(
        output=NOT_GIVEN if _cell(expected_output) is None else expected_output, tool_calls=checked_expected
    )
    if output is None:
        return RunValues(expected=expected, missing=f"no tool calls: the {column!r} cell is empty")
    return RunValues(list(checked_output) if checked_output is not None else output, expected)


def _cell(value: Any) -> Any:
    """A cell's value, None for an empty one (null, blank text, NaN)."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, float) and value != value:  # NaN: pandas' missing value
        return None
    return value


def _shown(value: Any, most: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= most else text[: most - 3] + "..."


def _accepted(exc: Any) -> str:
    accepted: str = exc.accepted
    return accepted if len(accepted) <= 80 else accepted[:77] + "..."


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
    if any(not_utf8(value) for value in row.values()):
        if row.get(cols.output) is None:
            return number, f"no {cols.output!r} value (the row has too few fields)"
        return number, "not valid UTF-8"
    present = {name: value for name, value in row.items() if value is not None}
    return _record(number, present, cols, f"no {cols.output!r} value (the row has too few fields)")


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
