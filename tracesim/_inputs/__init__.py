"""Every file tracesim reads from a user (datasets, baseline runs, ledgers, trace files) is read
here, within limits on size, nesting, YAML nodes and YAML aliases.

A file over a limit is refused with an `InputError` that names the file, the line when there
is one, and the limit, before the reading costs more than the limit: a file's size is checked
before it is read, a line's before it is decoded, JSON's nesting by a scan of its brackets
(linear in the document, an unclosed string included) before ``json`` recurses into it, and a
YAML document's nodes and aliases while it is composed, before anything is built from it. The
command-line tools turn an `InputError` into exit status 2. JSON-lines files are read through
`json_records`, which gives each line's value or the `InputError` saying why there is none,
for the reader to skip or raise.

Every name is imported from here; the YAML reader lives in `tracesim._inputs._yaml` and
`InputError` in `tracesim._inputs._error` (which both readers raise).

The limits (constants, so the same file reads the same way everywhere):

- `MAX_FILE_BYTES`, 256 MiB: a document read whole (a dataset, a baseline run);
- `MAX_LINE_BYTES`, 64 MiB: one line of a JSON-lines file (a dataset line, a trace file line:
  trace files rotate at 64 MiB); longer lines are refused or skipped without being held whole;
- `MAX_LEDGER_LINE_BYTES`, 64 KiB: one line of a backfill or replay ledger;
- `MAX_DEPTH`, 256: JSON nesting (runs are written with at most 200 levels of a value);
- `MAX_YAML_BYTES`, 16 MiB: a YAML document (a dataset, ``tracesim.yaml``): YAML is composed
  in pure Python, at about 600 bytes and 30 microseconds a node, so it has limits of its own;
- `MAX_YAML_NODES`, 500,000: the nodes (scalars, lists, mappings) a YAML document composes,
  counted as they are composed: a refusal costs at most about 310 MB and 15 s (measured on a
  list of 500,010 ``- a``). A larger dataset is better written as JSON lines, read a line at
  a time;
- `MAX_YAML_DEPTH`, 100: YAML nesting, aliases expanded;
- `MAX_YAML_ALIAS_NODES`, 100,000: the nodes YAML aliases may add to a document once expanded
  (a ``<<: *defaults`` merge on every case is far below it; a "billion laughs" is far above).
  Aliases are allowed, since anchors shared between cases are ordinary YAML; a recursive alias
  (a value that contains itself) is refused.

Example:
    >>> loads('{"a": [1, 2]}', "cases.json")
    {'a': [1, 2]}
    >>> try:
    ...     loads("[" * 300 + "]" * 300, "run.json")
    ... except InputError as exc:
    ...     print(exc)
    run.json, line 1: JSON nested deeper than 256 levels (the limit on nesting)
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from itertools import accumulate
from typing import IO, Any

from tracesim._inputs._error import InputError
from tracesim._inputs._yaml import (
    MAX_YAML_ALIAS_NODES,
    MAX_YAML_BYTES,
    MAX_YAML_DEPTH,
    MAX_YAML_NODES,
    bounded_loader,
    load_yaml,
    yaml_error,
)

__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_LEDGER_LINE_BYTES",
    "MAX_LINE_BYTES",
    "MAX_YAML_ALIAS_NODES",
    "MAX_YAML_BYTES",
    "MAX_YAML_DEPTH",
    "MAX_YAML_NODES",
    "InputError",
    "bounded_loader",
    "check_size",
    "deeper_than",
    "json_lines",
    "json_records",
    "load_yaml",
    "loads",
    "read_json",
    "read_text",
    "record",
    "too_deep",
    "too_long",
    "yaml_error",
]

MAX_FILE_BYTES = 256 * 1024 * 1024
MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_LEDGER_LINE_BYTES = 64 * 1024
MAX_DEPTH = 256

_CHUNK = 1 << 20


# -- whole files --------------------------------------------------------------------------------


def read_text(
    path: str | os.PathLike[str],
    *,
    limit: int = MAX_FILE_BYTES,
    encoding: str = "utf-8",
    what: str = "file size",
) -> str:
    """The text of ``path``, refused when it holds more than ``limit`` bytes (``what`` names the limit).

    Raises:
        OSError: the file cannot be read.
        InputError: it is larger than ``limit``, or not text in ``encoding``.
    """
    name = os.fspath(path)
    with open(path, "rb") as handle:
        size = _size(handle)
        if size is not None and size > limit:
            raise _too_big(name, size, limit, what)
        data = handle.read(limit + 1)  # a file that grows, a FIFO: never more than the limit
    if len(data) > limit:
        raise _too_big(name, None, limit, what)
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(name, f"not UTF-8 text ({exc.reason} at byte {exc.start})", line=line) from None


def check_size(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> None:
    """Refuse ``path`` when it is a file of more than ``limit`` bytes (for readers of their own).

    Raises:
        OSError: the file cannot be reached.
        InputError: it is larger than ``limit``.
    """
    size = os.stat(path).st_size
    if size > limit:
        raise _too_big(os.fspath(path), size, limit)


def read_json(path: str | os.PathLike[str], *, limit: int = MAX_FILE_BYTES) -> Any:
    """The JSON document in ``path``, refused beyond ``limit`` bytes or `MAX_DEPTH` levels.

    Raises:
        OSError: the file cannot be read.
        InputError: too large, too deep, or not JSON (the message names the line).
    """
    return loads(read_text(path, limit=limit), os.fspath(path))


def _size(handle: Any) -> int | None:
    try:
        stat = os.fstat(handle.fileno())
    except OSError:
        return None
    import stat as kinds

    return stat.st_size if kinds.S_ISREG(stat.st_mode) else None


def _too_big(name: str, size: int | None, limit: int, what: str = "file size") -> InputError:
    held = f"{size:,} bytes" if size is not None else "more"
    return InputError(name, f"{held}, more than {limit:,} bytes", limit=what)


# -- JSON ---------------------------------------------------------------------------------------

# A JSON string, unrolled (a run of plain characters, then escapes each with its run): 3x faster.
# A string that never closes runs to the end of the document, as ``json`` reads it (it recurses
# into nothing after an unclosed quote): were the match to fail there, the scan would restart at
# every later quote, quadratic time (100 KB of ``\"`` took 30 s; now milliseconds).
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_STRING_B = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
_NOT_BRACKET_B = re.compile(rb"[^\[\]{}]+")
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*(?:"|\\?\Z)|[\[\]{}]', re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}
_STEP_B = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}


def deeper_than(document: str | bytes, limit: int = MAX_DEPTH) -> bool:
    """Whether the JSON ``document`` nests arrays and objects more than ``limit`` deep.

    A scan of its brackets outside strings, in time and memory linear in its size, made before
    ``json`` (which recurses) reads it.

    Example:
        >>> deeper_than('[[["]]]]]"]]]', 3), deeper_than("[[[[]]]]", 3)
        (False, True)
    """
    if isinstance(document, bytes):
        if document.count(b"[") + document.count(b"{") <= limit:
            return False
        brackets_b = _NOT_BRACKET_B.sub(b"", _STRING_B.sub(b"", document))
        return max(accumulate(map(_STEP_B.__getitem__, brackets_b)), default=0) > limit
    if document.count("[") + document.count("{") <= limit:
        return False
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", document))
    return max(accumulate(map(_STEP.__getitem__, brackets)), default=0) > limit


def _deep_line(document: str, limit: int) -> int:
    """The line where ``document`` first passes ``limit`` levels (only called when it does)."""
    depth = 0
    for match in _TOKEN.finditer(document):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > limit:
                return document.count("\n", 0, match.start()) + 1
        elif token in "]}":
            depth -= 1
    return 1


def loads(document: str | bytes, path: str, *, line: int | None = None, limit: int = MAX_DEPTH) -> Any:
    """``json.loads(document)``, refused when it nests more than ``limit`` levels.

    ``path`` and ``line`` (of a JSON-lines file) name the document in errors.

    Raises:
        InputError: too deep, or not JSON; the message names the file and the line.
    """
    if deeper_than(document, limit):
        text = document if isinstance(document, str) else document.decode("utf-8", "replace")
        where = line if line is not None else _deep_line(text, limit)
        raise too_deep(path, where, limit)
    try:
        return json.loads(document)
    except RecursionError:  # within the limit but the stack is short (deep caller): refused the same
        raise InputError(path, f"JSON nested too deeply to read (limit {limit})", line=line) from None
    except json.JSONDecodeError as exc:
        where = line if line is not None else exc.lineno
        raise InputError(path, f"not valid JSON ({exc.msg}, column {exc.colno})", line=where) from None
    except ValueError as exc:  # bytes that are not UTF-8 text
        raise InputError(path, f"not valid JSON ({exc})", line=line) from None


def too_deep(path: str, line: int | None, limit: int = MAX_DEPTH) -> InputError:
    """The error for JSON nested deeper than ``limit``."""
    return InputError(path, f"JSON nested deeper than {limit} levels", line=line, limit="nesting")


def too_long(path: str, line: int, limit: int, what: str = "lines") -> InputError:
    """The error for a line of more than ``limit`` bytes."""
    return InputError(path, f"a line longer than {limit:,} bytes", line=line, limit=what)


def json_lines(
    source: str | os.PathLike[str] | IO[bytes],
    *,
    limit: int = MAX_LINE_BYTES,
    first_line: int = 1,
    size: int | None = None,
) -> Iterator[tuple[int, int, bytes | None]]:
    """Each line of ``source`` as (line number, bytes read so far, the line or None when too long).

    ``source`` is a path, or a binary file open at the first line to read (it is read from
    there, at most ``size`` bytes when given, and left open; ``first_line`` numbers that line).
    A line longer than ``limit`` bytes is never held whole: it is read past in blocks and given
    as None, for the reader to skip or refuse, naming the line.

    Raises:
        OSError: the file cannot be read.
    """
    if isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as handle:
            yield from _lines_of(handle, limit, first_line, size)
    else:
        yield from _lines_of(source, limit, first_line, size)


def _lines_of(
    handle: IO[bytes], limit: int, number: int, size: int | None
) -> Iterator[tuple[int, int, bytes | None]]:
    offset, stop = 0, size if size is not None else -1

    def read(most: int) -> bytes:
        return handle.readline(most if stop < 0 else min(most, stop - offset))

    while stop < 0 or offset < stop:
        raw = read(limit + 1)
        if not raw:
            return
        offset += len(raw)
        if len(raw) > limit and not raw.endswith(b"\n"):
            while raw and not raw.endswith(b"\n") and (stop < 0 or offset < stop):
                raw = read(_CHUNK)  # the rest of the long line, a block at a time
                offset += len(raw)
            yield number, offset, None
        else:
            yield number, offset, raw
        number += 1


def json_records(
    source: str | os.PathLike[str] | IO[bytes],
    *,
    name: str | None = None,
    limit: int = MAX_LINE_BYTES,
    what: str = "lines",
    first_line: int = 1,
    size: int | None = None,
) -> Iterator[tuple[int, Any]]:
    """Each non-blank line of a JSON-lines ``source`` as (line number, its value or an `InputError`).

    The one reader of JSON lines: a line over ``limit`` bytes (``what`` names that limit), one
    nested deeper than `MAX_DEPTH` or one that is not JSON is an `InputError` naming the file
    (``name``, else the path or the handle's name), the line and the limit, for the reader to
    skip or raise. ``source``, ``first_line`` and ``size`` are as for `json_lines`.

    Example:
        >>> import io
        >>> for number, value in json_records(io.BytesIO(b'[1]\\n\\n{"a"\\n'), name="x.jsonl"):
        ...     print(number, value)
        1 [1]
        3 x.jsonl, line 3: not valid JSON (Expecting ':' delimiter, column 1)

    Raises:
        OSError: the file cannot be read.
    """
    if name is None:
        name = (
            os.fspath(source)
            if isinstance(source, (str, os.PathLike))
            else str(getattr(source, "name", "<stream>"))
        )
    for number, _, raw in json_lines(source, limit=limit, first_line=first_line, size=size):
        if raw is None or raw.strip():
            yield number, record(raw, name, number, limit=limit, what=what)


def record(
    raw: bytes | None, name: str, number: int, *, limit: int = MAX_LINE_BYTES, what: str = "lines"
) -> Any:
    """The value of one line `json_lines` gave, or the `InputError` saying why there is none.

    An unreadable last line without its newline is said to be torn (a writer stopped mid-line).
    """
    if raw is None:
        return too_long(name, number, limit, what)
    try:
        return loads(raw, name, line=number)
    except InputError as exc:
        if exc.limit is None and not raw.endswith(b"\n"):  # the last line, and not all of it
            return InputError(
                name, f"{exc.problem}, a torn last line (a writer stopped mid-line)", line=number
            )
        return exc
