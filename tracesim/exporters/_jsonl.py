"""The local trace file: OTLP/JSON lines, size-based rotation, and a tolerant reader.

Each line is one ``ExportTraceServiceRequest`` in the OTLP/JSON encoding, the format the
OpenTelemetry Collector's file exporter writes, so a file can be replayed to any OTLP/HTTP
endpoint unchanged. Encoding is done by the official ``opentelemetry-exporter-otlp-json-common``
package; appending whole lines (rotation, several processes, a full disk) is `LineFile`'s job;
this module adds the exporter over it and a reader that survives any bad line.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracesim import _inputs, _outputs
from tracesim._guard import internal_error
from tracesim.exporters._linefile import (
    DEFAULT_BACKLOG_BYTES,
    DEFAULT_BACKUPS,
    DEFAULT_MAX_BYTES,
    LineFile,
    rotated_files,
)
from tracesim.exporters._records import SpanRecord, spans_from_request

__all__ = [
    "JsonlExporter",
    "TraceFileWarning",
    "check_writable",
    "encode_line",
    "load_spans",
    "read_jsonl",
    "rotated_files",
]


class TraceFileWarning(UserWarning):
    """A line of a trace file could not be read and was skipped."""


def encode_line(spans: Sequence[ReadableSpan]) -> bytes:
    """Encode spans as one OTLP/JSON ``ExportTraceServiceRequest`` line, newline included.

    Example:
        >>> encode_line([])
        b'{}\\n'
    """
    return (json.dumps(encode_spans(spans).to_dict(), separators=(",", ":")) + "\n").encode()


class JsonlExporter(SpanExporter):
    """Append spans to a JSON-lines file, one OTLP/JSON ``ExportTraceServiceRequest`` per line.

    The file is a `LineFile`: when it would grow past ``max_bytes`` it is renamed to
    ``<stem>.1<suffix>`` (older files shift up to ``backups``; the oldest is deleted) and a new
    file is started; several processes may append to it; a torn line left by a crash is
    terminated before new lines follow it.

    A line that cannot be written (disk full, file too large, I/O error) is cut back off the
    file, so no half line stays behind, and kept in a bounded in-memory backlog
    (``backlog_bytes``, oldest dropped first and counted in ``dropped``) that is written first
    on the next export or `force_flush` once writing works again. ``export`` returns
    ``SUCCESS`` only when its line is in the file. Each cause is logged once, and recovery once.

    Example:
        >>> import tracesim
        >>> from tracesim.exporters import JsonlExporter
        >>> tracesim.configure(exporters=[JsonlExporter("traces.jsonl")])  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike[str] = ".tracesim/traces.jsonl",
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        backlog_bytes: int = DEFAULT_BACKLOG_BYTES,
    ) -> None:
        self.file = LineFile(
            path, max_bytes=max_bytes, backups=backups, backlog_bytes=backlog_bytes, what="spans"
        )
        """Where the lines go: rotation settings, `pending` and `dropped` live here."""
        self.path = self.file.path

    @property
    def pending(self) -> int:
        """Spans waiting in memory for the file to accept them."""
        return self.file.pending

    @property
    def dropped(self) -> int:
        """Spans dropped unwritten because the backlog was full (or left at shutdown)."""
        return self.file.dropped

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the batch as one line; ``FAILURE`` when it is not in the file (kept to retry)."""
        if self.file.closed:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            written = self.file.append(encode_line(spans), items=len(spans))
        except Exception:  # a bug of ours: logged once (raised under our tests)
            internal_error("jsonl exporter")
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS if written else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        """Write what waits in memory if the file accepts it now, then close; later exports fail."""
        self.file.close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Retry the lines waiting in memory; True when every line is in the file."""
        return self.file.flush()


def check_writable(path: str | os.PathLike[str]) -> str | None:
    """Say why spans could not be appended to ``path``, or return None when it looks usable.

    Checks without writing data: the path is not a directory, an existing file opens for
    appending, a missing file's nearest existing ancestor is a directory we may create files
    in. A file that opens but refuses data (``/dev/full``) is found only when writing.

    Example:
        >>> from tracesim.exporters._jsonl import check_writable
        >>> check_writable("/")
        '/ is a directory'
    """
    p = Path(path)
    try:
        if p.is_dir():
            return f"{p} is a directory"
        if p.exists():
            # Non-blocking, so a FIFO without a reader cannot hang configure().
            os.close(os.open(p, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
            return None
        ancestor = p.parent
        while not ancestor.exists():
            ancestor = ancestor.parent
        if not ancestor.is_dir():
            return f"{ancestor} is not a directory, so {p.parent} cannot be created"
        if not os.access(ancestor, os.W_OK | os.X_OK):
            return f"directory {ancestor} is not writable"
    except OSError as exc:
        return f"cannot open {p} for appending ({exc.strerror or exc})"
    return None


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield each ``ExportTraceServiceRequest`` of a trace file as a dict.

    A line that is not a JSON object (for example the torn last line of a process that
    crashed while writing, one longer than 64 MiB, or one nested more than 256 levels deep)
    is skipped with a `TraceFileWarning` naming the file, the line and the limit, and reading
    goes on. A long line is read past in blocks, never held whole.

    Example:
        >>> from tracesim.exporters import read_jsonl
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
        >>> from tracesim.exporters import load_spans
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
