"""The local trace file: OTLP/JSON lines, size-based rotation, and a tolerant reader.

Each line is one ``ExportTraceServiceRequest`` in the OTLP/JSON encoding, the format the
OpenTelemetry Collector's file exporter writes, so a file can be replayed to any OTLP/HTTP
endpoint unchanged. Encoding is done by the official ``opentelemetry-exporter-otlp-json-common``
package; this module adds what it lacks: rotation, safe appends from several processes, and a
reader that survives a torn last line.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import warnings
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracesim.exporters._records import SpanRecord, spans_from_request

try:  # POSIX: serialise appends and rotation between processes sharing one file
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = ["JsonlExporter", "TraceFileWarning", "load_spans", "read_jsonl", "rotated_files"]

_logger = logging.getLogger("tracesim")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_BACKUPS = 5


class TraceFileWarning(UserWarning):
    """A line of a trace file could not be read and was skipped."""


class JsonlExporter(SpanExporter):
    """Append spans to a JSON-lines file, one OTLP/JSON ``ExportTraceServiceRequest`` per line.

    When the file would grow past ``max_bytes`` it is renamed to ``<stem>.1<suffix>`` (older
    files shift up to ``backups``; the oldest is deleted) and a new file is started. Several
    processes may append to the same file: each line is written with one ``write`` under an
    advisory lock, and a torn line left by a crash is terminated before new lines follow it.

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
    ) -> None:
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        if backups < 0:
            raise ValueError(f"backups must be >= 0, got {backups}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._shutdown = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the batch as one line. Never raises; failures are logged and reported."""
        if self._shutdown:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            line = (json.dumps(encode_spans(spans).to_dict(), separators=(",", ":")) + "\n").encode()
            with self._lock:
                self._write(line)
        except Exception:
            _logger.exception("tracesim: could not write %d spans to %s", len(spans), self.path)
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS

    def _write(self, line: bytes) -> None:
        fd = self._open()
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            if self._rotated_elsewhere(fd):
                self._close()
                return self._write(line)
            size = os.fstat(fd).st_size
            if size and size + len(line) > self.max_bytes:
                self._rotate()
                self._close()
                return self._write(line)
            os.write(fd, line)
        finally:
            if fcntl is not None and self._fd == fd:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            _terminate_torn_line(fd, self.path)
            self._fd = fd
        return self._fd

    def _rotated_elsewhere(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino != os.fstat(fd).st_ino
        except FileNotFoundError:
            return True

    def _rotate(self) -> None:
        files = rotated_files(self.path, self.backups)
        if self.backups == 0:
            self.path.unlink(missing_ok=True)
            return
        files[-1].unlink(missing_ok=True)
        for older, newer in zip(reversed(files[1:]), reversed(files[:-1]), strict=True):
            if newer.exists():
                newer.replace(older)

    def _close(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)

    def shutdown(self) -> None:
        """Close the file; later exports fail."""
        with self._lock:
            self._shutdown = True
            self._close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Every line is written when ``export`` returns, so there is nothing to flush."""
        return True


def _terminate_torn_line(fd: int, path: Path) -> None:
    size = os.fstat(fd).st_size
    if size == 0:
        return
    with open(path, "rb") as f:
        f.seek(size - 1)
        if f.read(1) != b"\n":
            os.write(fd, b"\n")


def rotated_files(path: str | os.PathLike[str], backups: int = DEFAULT_BACKUPS) -> list[Path]:
    """The current file and its rotated copies, newest first: ``traces.jsonl, traces.1.jsonl, ...``."""
    p = Path(path)
    return [p] + [p.with_name(f"{p.stem}.{i}{p.suffix}") for i in range(1, backups + 1)]


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield each ``ExportTraceServiceRequest`` of a trace file as a dict.

    A line that is not a JSON object (for example the torn last line of a process that
    crashed while writing) is skipped with a `TraceFileWarning` naming the file and line.

    Example:
        >>> from tracesim.exporters import read_jsonl
        >>> for request in read_jsonl(".tracesim/traces.jsonl"):  # doctest: +SKIP
        ...     print(len(request["resourceSpans"]))
    """
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                request = json.loads(raw)
                if not isinstance(request, dict):
                    raise ValueError("not a JSON object")
            except ValueError as exc:
                torn = not raw.endswith(b"\n")
                what = "torn last line (a writer stopped mid-line)" if torn else f"unreadable line ({exc})"
                warnings.warn(f"{path}:{number}: skipped {what}", TraceFileWarning, stacklevel=2)
                continue
            yield request


def load_spans(paths: str | os.PathLike[str] | Iterable[str | os.PathLike[str]]) -> list[SpanRecord]:
    """Read every span of one or more trace files, in file order.

    A request line whose structure is not OTLP/JSON is skipped with a `TraceFileWarning`.
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    spans: list[SpanRecord] = []
    for path in paths:
        for number, request in enumerate(read_jsonl(path), start=1):
            try:
                spans.extend(spans_from_request(request))
            except (KeyError, ValueError, TypeError, AttributeError) as exc:
                warnings.warn(
                    f"{path}: request {number} is not OTLP/JSON ({exc!r}); skipped",
                    TraceFileWarning,
                    stacklevel=2,
                )
    return spans
