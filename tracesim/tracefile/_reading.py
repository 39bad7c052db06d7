"""Reading trace files back: every request of a file, every span of a file family.

A trace file is written by `tracesim.exporters.JsonlExporter`, one OTLP/JSON
``ExportTraceServiceRequest`` per line, rotated into ``traces.1.jsonl``, ``traces.2.jsonl``...
Anyone may have written or damaged the file, so the reader survives any bad line: it skips it
with a `TraceFileWarning` naming the file and line, and goes on.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from tracesim import _inputs, _outputs
from tracesim.tracefile._span_records import SpanRecord, spans_from_request

__all__ = ["DEFAULT_BACKUPS", "TraceFileWarning", "load_spans", "read_jsonl", "rotated_files"]

DEFAULT_BACKUPS = 5
"""Rotated copies a trace file keeps beside the current one unless told otherwise."""


class TraceFileWarning(UserWarning):
    """A line of a trace file could not be read and was skipped."""


def rotated_files(path: str | os.PathLike[str], backups: int = DEFAULT_BACKUPS) -> list[Path]:
    """The current file and its rotated copies, newest first: ``traces.jsonl, traces.1.jsonl, ...``.

    Example:
        >>> [p.name for p in rotated_files("traces.jsonl", 2)]
        ['traces.jsonl', 'traces.1.jsonl', 'traces.2.jsonl']
    """
    p = Path(path)
    return [p] + [p.with_name(f"{p.stem}.{i}{p.suffix}") for i in range(1, backups + 1)]


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield each ``ExportTraceServiceRequest`` of a trace file as a dict.

    A line that is not a JSON object (for example the torn last line of a process that
    crashed while writing, one longer than 64 MiB, or one nested more than 256 levels deep)
    is skipped with a `TraceFileWarning` naming the file, the line and the limit, and reading
    goes on. A long line is read past in blocks, never held whole.

    Example:
        >>> from tracesim.tracefile import read_jsonl
        >>> for request in read_jsonl(".tracesim/traces.jsonl"):  # doctest: +SKIP
        ...     print(len(request["resourceSpans"]))
    """
    for _, request in _numbered_requests(path):
        yield request


def _numbered_requests(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    for number, request in _inputs.json_records(path):
        if isinstance(request, _inputs.InputError):
            _skip(path, number, _why(request))
        elif not isinstance(request, dict):
            _skip(path, number, "unreadable line: not a JSON object")
        else:
            yield number, request


def _why(error: _inputs.InputError) -> str:
    """What `_skip` says of a line `tracesim._inputs` could not read."""
    if error.limit == "nesting":
        return "a line of " + error.problem
    return error.problem if error.limit is not None else "unreadable line: " + error.problem


def _skip(path: str | os.PathLike[str], number: int, what: str) -> None:
    warnings.warn(_outputs.text(f"{path}:{number}: skipped {what}"), TraceFileWarning, stacklevel=3)


def load_spans(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[SpanRecord]:
    """Read every span of one or more trace files, in file order.

    A line whose structure is not OTLP/JSON, whatever the decoder finds wrong with it, is
    skipped whole with a `TraceFileWarning` naming the file and line.

    Example:
        >>> from tracesim.tracefile import load_spans
        >>> names = [s.name for s in load_spans(".tracesim/traces.jsonl")]  # doctest: +SKIP
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    spans: list[SpanRecord] = []
    for path in paths:
        for number, request in _numbered_requests(path):
            try:
                spans.extend(list(spans_from_request(request)))  # all of a line, or none
            except Exception as exc:  # any damage in one line must not stop the reading
                _skip(path, number, f"a request that is not OTLP/JSON ({exc!r})")
    return spans
