"""Where expected outputs come from: a value, a function of the call, a block, a dataset.

Precedence, most specific first: `Span.set_expected` inside the call > ``with
tracesim.expect(value)`` around it > the ``expected=`` of ``@trace``/``span()`` (a value, a
callable taking the traced function's arguments, or a `Golden` dataset) > the ``expected`` of
a configured evaluator rule. Callables and datasets are resolved by the scoring worker, off
the caller's path, and only for calls that are sampled for scoring.

Each of them may be a `tracesim.Expected` (an output and/or the tool calls the run should
make) instead of a plain expected output; `handed` says what each evaluator receives of it.
"""

from __future__ import annotations

import contextvars
import csv
import json
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from opentelemetry.util.types import AttributeValue

from tracesim import _inputs
from tracesim import _semconv as sc
from tracesim._capture import CaptureOptions, capture_value, captured_attributes
from tracesim._errors import ConfigError
from tracesim.runs import NOT_GIVEN, Expected, tool_calls

__all__ = [
    "Golden",
    "combined",
    "complete",
    "expect",
    "expected_attributes",
    "expected_output",
    "handed",
    "resolve_expected",
]

_logger = logging.getLogger("tracesim")
NOT_SET: Any = object()
_EXPECTED: contextvars.ContextVar[Any] = contextvars.ContextVar("tracesim_expected", default=NOT_SET)


@contextmanager
def expect(value: Any) -> Iterator[None]:
    """Give the next scored call inside the block its expected output.

    ``value`` is the expected output, or a `tracesim.Expected` (output and/or tool calls).
    The value goes to the outermost traced call (or span) in the block that has
    evaluators; calls nested inside that one do not see it.

    Example:
        >>> import tracesim
        >>> from tracesim.evaluators import ExactMatch
        >>> @tracesim.trace(evaluators=[ExactMatch()])
        ... def answer(question: str) -> str:
        ...     return "Warsaw"
        >>> with tracesim.expect("Warsaw"):
        ...     _ = answer("Where was Marie Curie born?")
    """
    token = _EXPECTED.set(value)
    try:
        yield
    finally:
        _EXPECTED.reset(token)


def take_expected() -> tuple[Any, contextvars.Token[Any] | None]:
    """The value of an enclosing `expect` block, hidden from nested calls; (NOT_SET, None) if none."""
    value = _EXPECTED.get()
    if value is NOT_SET:
        return NOT_SET, None
    return value, _EXPECTED.set(NOT_SET)


def release_expected(token: contextvars.Token[Any]) -> None:
    """Undo `take_expected` when the call's context is left."""
    _EXPECTED.reset(token)


class Golden:
    """Expected outputs looked up in a dataset file by the call's input.

    The file is JSON lines (one object per line) or CSV with a header. ``key`` names the
    traced function's argument to look up (matched against the column of the same name, or
    ``column``), or is a function of the call's arguments returning the lookup value. The
    expected output is the ``expected_column`` of the matching row. A row with a
    ``tool_calls_column`` (JSON text of a list of ``{"name", "arguments"}``, or the list
    itself in JSON lines) expects those tool calls too: the lookup gives a `tracesim.Expected`
    of both, and such a row may leave the expected output out (an empty CSV cell when it has
    tool calls means no expected output). The file is read once,
    and read again when it changes (checked at most once per ``reload_every_s``). A call with
    no matching row has no expected output, so its evaluators report ``skipped``.

    Args:
        path: The dataset file (``.jsonl``/``.json`` or ``.csv``). A relative path is read
            from the working directory when the `Golden` is made (a rule's ``golden:`` in
            ``tracesim.yaml`` is read from that file's folder instead).
        key: Argument name, or a callable taking the traced function's arguments.
        column: The dataset column holding the key (default: ``key`` when it is a name,
            else ``"input"``).
        expected_column: The column holding the expected output.
        tool_calls_column: The column holding the expected tool calls, when a row has them.
        reload_every_s: How often to check the file for changes.

    Raises:
        ConfigError: the file is missing or unreadable, lacks the columns, or is over a limit
            on input files (256 MiB, 64 MiB a line, JSON nested 256 levels deep), or has
            tool calls that are not a list of ``{"name", "arguments"}`` (naming the file and line).

    Example:
        >>> import tracesim
        >>> golden = tracesim.Golden("golden.jsonl", key="question")  # doctest: +SKIP
        >>> @tracesim.trace(evaluators=[{"type": "levenshtein"}], expected=golden)  # doctest: +SKIP
        ... def answer(question: str) -> str: ...
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        key: str | Callable[..., Any],
        *,
        column: str | None = None,
        expected_column: str = "expected",
        tool_calls_column: str = "expected_tool_calls",
        reload_every_s: float = 1.0,
    ) -> None:
        if not (isinstance(key, str) and key) and not callable(key):
            raise ConfigError("Golden.key", key, "an argument name or a callable taking the call's arguments")
        self.path = Path(path).absolute()
        self.key = key
        self.column = column or (key if isinstance(key, str) else "input")
        self.expected_column = expected_column
        self.tool_calls_column = tool_calls_column
        self.reload_every_s = reload_every_s
        self._lock = threading.Lock()
        self._stamp: tuple[int, int] | None = None
        self._checked = 0.0
        self._rows: dict[str, Any] = {}
        try:
            self._load()
        except (OSError, ValueError) as exc:
            raise ConfigError(
                "Golden.path",
                str(path),
                f"a readable JSONL or CSV file with columns {self.column!r} and "
                f"{self.expected_column!r} ({exc})",
            ) from None

    def __len__(self) -> int:
        return len(self._rows)

    def lookup(
        self, args: tuple[Any, ...], kwargs: Mapping[str, Any], bound: Mapping[str, Any] | None
    ) -> Any:
        """The expected output for a call, or None when the dataset has no row for it."""
        self._maybe_reload()
        if callable(self.key):
            value = self.key(*args, **kwargs)
        elif bound is not None and self.key in bound:
            value = bound[self.key]
        else:
            return None
        return self._rows.get(_normalise(value))

    def _maybe_reload(self) -> None:
        now = time.monotonic()
        if now - self._checked < self.reload_every_s:
            return
        with self._lock:
            self._checked = now
            try:
                stat = self.path.stat()
                if (stat.st_mtime_ns, stat.st_size) != self._stamp:
                    self._load()
            except (OSError, ValueError):
                _logger.warning(
                    "tracesim: could not reload %s; keeping the rows read before", self.path, exc_info=True
                )

    def _load(self) -> None:
        stat = self.path.stat()
        rows = list(_read_rows(self.path))
        table: dict[str, Any] = {}
        for number, (line, row) in enumerate(rows, start=1):
            calls = row.get(self.tool_calls_column)
            has_calls = calls is not None and calls != ""  # an empty CSV cell: no tool calls
            if self.column not in row or (self.expected_column not in row and not has_calls):
                raise ValueError(f"row {number} lacks {self.column!r} or {self.expected_column!r}")
            value = row.get(self.expected_column, NOT_GIVEN)
            if has_calls:
                try:
                    checked = tool_calls(calls, self.tool_calls_column)
                except ConfigError as exc:
                    raise _inputs.InputError(
                        str(self.path),
                        f"{exc.setting}: expected {exc.accepted}, got {exc.value!r:.200}",
                        line=line,
                    ) from None
                value = Expected(output=NOT_GIVEN if value == "" else value, tool_calls=checked)
            table[_normalise(row[self.column])] = value
        self._rows = table
        self._stamp = (stat.st_mtime_ns, stat.st_size)

    def __repr__(self) -> str:
        return f"Golden({str(self.path)!r}, key={self.key!r}, rows={len(self._rows)})"


def _read_rows(path: Path) -> Iterator[tuple[int, Mapping[str, Any]]]:
    """The rows of a dataset file with their line numbers, within the input limits (256 MiB,
    64 MiB a line, 256 levels).

    Raises:
        OSError: the file cannot be read.
        InputError: over a limit, not CSV or JSON lines, or a line that is not an object.
    """
    _inputs.check_size(path)  # every row is held in memory: the whole file is bounded
    name = str(path)
    if path.suffix.lower() == ".csv":
        with open(path, newline="", encoding="utf-8") as f:
            reader = csv.DictReader(f)
            try:
                for row in reader:
                    yield reader.line_num, row
            except csv.Error as exc:  # a field over csv's own limit, a NUL byte
                raise _inputs.InputError(name, f"not valid CSV ({exc})", line=reader.line_num) from None
        return
    for number, row in _inputs.json_records(path, name=name):
        if isinstance(row, _inputs.InputError):
            raise row
        if not isinstance(row, dict):
            raise _inputs.InputError(name, "not a JSON object", line=number)
        yield number, row


def _normalise(value: Any) -> str:
    if isinstance(value, str):
        return value.strip()
    return json.dumps(value, sort_keys=True, default=str)


def resolve_expected(
    source: Any, args: tuple[Any, ...], kwargs: Mapping[str, Any], bound: Mapping[str, Any] | None
) -> Any:
    """The expected value from a declared source: a `Golden`, a callable, or a value (each may
    give a `tracesim.Expected`)."""
    if source is NOT_SET:
        return NOT_SET
    if isinstance(source, Golden):
        return source.lookup(args, kwargs, bound)
    if callable(source):
        return source(*args, **kwargs)
    return source


def handed(evaluator: Any, expected: Any) -> Any:
    """What ``evaluator`` is given of a call's expected value (None when there is none).

    A run evaluator (``scores_runs = True``) gets a `tracesim.Expected`: the one given, or a
    plain value as its output. Any other evaluator gets the expected output, and None (so it
    reports ``skipped``, as without an expected output) when an `Expected` has only tool calls.

    Example:
        >>> from tracesim.evaluators import ExactMatch
        >>> handed(ExactMatch(), Expected(output="Paris", tool_calls=[{"name": "search"}]))
        'Paris'
        >>> handed(ExactMatch(), Expected(tool_calls=[{"name": "search"}])) is None
        True
    """
    if getattr(evaluator, "scores_runs", False):
        if expected is None or isinstance(expected, Expected):
            return expected
        return Expected(output=expected)
    return expected_output(expected)


def combined(first: Any, second: Any) -> Any:
    """Two expected values for one call (two rules select its span): each part from the first
    that gives it. ``first``'s output and tool calls win; ``second`` fills what ``first`` lacks,
    so a rule with a golden answer and one with expected tool calls both apply.

    Example:
        >>> both = combined("Paris", Expected(tool_calls=[{"name": "search"}]))
        >>> both.output, [call.name for call in both.tool_calls]
        ('Paris', ['search'])
        >>> combined("Paris", "London")
        'Paris'
    """
    if first is None or second is None:
        return second if first is None else first
    first_output, first_calls = _parts(first)
    if first_output is not NOT_GIVEN and first_calls is not None:
        return first  # nothing left for the second to give
    second_output, second_calls = _parts(second)
    output = second_output if first_output is NOT_GIVEN else first_output
    calls = second_calls if first_calls is None else first_calls
    if output is first_output and calls is first_calls:
        return first  # the second adds nothing
    return Expected(output=output, tool_calls=calls)


def _parts(expected: Any) -> tuple[Any, Any]:
    """(output, tool calls) of an expected value: a plain value is an output alone."""
    if isinstance(expected, Expected):
        return expected.output, expected.tool_calls
    return expected, None


def complete(expected: Any) -> bool:
    """Whether an expected value gives both an output and tool calls (no other source is read)."""
    output, calls = _parts(expected)
    return output is not NOT_GIVEN and calls is not None


def expected_output(expected: Any) -> Any:
    """The expected output of an expected value: an `Expected`'s output (None when not given)."""
    if isinstance(expected, Expected):
        return None if expected.output is NOT_GIVEN else expected.output
    return expected


def expected_attributes(value: Any, options: CaptureOptions) -> dict[str, AttributeValue]:
    """The span attributes recording an expected value, captured (and cut) like any value.

    A plain value is the expected output (``tracesim.expected.value`` and its MIME type); of
    an `Expected`, the output when given and the tool calls, as JSON, in
    ``tracesim.expected.tool_calls``.

    Example:
        >>> expected_attributes(Expected(tool_calls=[{"name": "search"}]), CaptureOptions())
        {'tracesim.expected.tool_calls': '[{"name":"search","arguments":{}}]'}
    """
    if not isinstance(value, Expected):
        return captured_attributes(
            value, sc.EXPECTED_VALUE, sc.EXPECTED_MIME_TYPE, sc.EXPECTED_ORIGINAL_CHARS, options
        )
    attributes: dict[str, AttributeValue] = {}
    if value.output is not NOT_GIVEN:
        attributes.update(
            captured_attributes(
                value.output, sc.EXPECTED_VALUE, sc.EXPECTED_MIME_TYPE, sc.EXPECTED_ORIGINAL_CHARS, options
            )
        )
    if value.tool_calls is not None:
        calls = [call.as_dict() for call in value.tool_calls]
        attributes[sc.EXPECTED_TOOL_CALLS] = capture_value(calls, options).text
    return attributes
