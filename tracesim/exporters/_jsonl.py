"""The local trace file: OTLP/JSON lines, size-based rotation, and a tolerant reader.

Each line is one ``ExportTraceServiceRequest`` in the OTLP/JSON encoding, the format the
OpenTelemetry Collector's file exporter writes, so a file can be replayed to any OTLP/HTTP
endpoint unchanged. Encoding is done by the official ``opentelemetry-exporter-otlp-json-common``
package; this module adds what it lacks: rotation, safe appends from several processes, a
bounded in-memory backlog while the disk is full, and a reader that survives any bad line.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import threading
import warnings
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracesim._guard import internal_error
from tracesim.exporters._records import SpanRecord, spans_from_request

try:  # POSIX: serialise appends and rotation between processes sharing one file
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

__all__ = [
    "CauseLog",
    "JsonlExporter",
    "TraceFileWarning",
    "check_writable",
    "encode_line",
    "load_spans",
    "read_jsonl",
    "rotated_files",
]

_logger = logging.getLogger("tracesim")

DEFAULT_MAX_BYTES = 64 * 1024 * 1024
DEFAULT_BACKUPS = 5
DEFAULT_BACKLOG_BYTES = 16 * 1024 * 1024


class TraceFileWarning(UserWarning):
    """A line of a trace file could not be read and was skipped."""


class CauseLog:
    """Log the problems of one resource once per cause, and once more when it works again.

    Example:
        >>> problems = CauseLog()
        >>> problems.failed("ENOSPC", "tracesim: cannot write %s", "t.jsonl")  # logged
        True
        >>> problems.failed("ENOSPC", "tracesim: cannot write %s", "t.jsonl")  # not again
        False
        >>> problems.recovered("tracesim: writing %s works again", "t.jsonl")  # logged; causes forgotten
        True
    """

    def __init__(self) -> None:
        self._causes: set[str] = set()
        self._lock = threading.Lock()

    def failed(self, cause: str, message: str, *args: object, level: int = logging.ERROR) -> bool:
        """Log ``message % args`` unless ``cause`` was logged since the last recovery."""
        with self._lock:
            if cause in self._causes:
                return False
            self._causes.add(cause)
        _logger.log(level, message, *args, stacklevel=2)
        return True

    def recovered(self, message: str, *args: object) -> bool:
        """Log ``message % args`` if any cause was logged, and forget the causes."""
        with self._lock:
            if not self._causes:
                return False
            self._causes.clear()
        _logger.warning(message, *args, stacklevel=2)
        return True


def os_cause(exc: OSError) -> str:
    """A stable name for an OS error's cause.

    Example:
        >>> os_cause(OSError(28, "No space left on device"))
        'ENOSPC'
    """
    return errno.errorcode.get(exc.errno or 0, type(exc).__name__)


def encode_line(spans: Sequence[ReadableSpan]) -> bytes:
    """Encode spans as one OTLP/JSON ``ExportTraceServiceRequest`` line, newline included.

    Example:
        >>> encode_line([])
        b'{}\\n'
    """
    return (json.dumps(encode_spans(spans).to_dict(), separators=(",", ":")) + "\n").encode()


class JsonlExporter(SpanExporter):
    """Append spans to a JSON-lines file, one OTLP/JSON ``ExportTraceServiceRequest`` per line.

    When the file would grow past ``max_bytes`` it is renamed to ``<stem>.1<suffix>`` (older
    files shift up to ``backups``; the oldest is deleted) and a new file is started. Several
    processes may append to the same file: each line is written whole under an advisory lock,
    and a torn line left by a crash is terminated before new lines follow it.

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
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        if backups < 0:
            raise ValueError(f"backups must be >= 0, got {backups}")
        self.path = Path(path)
        self.max_bytes = max_bytes
        self.backups = backups
        self.backlog_bytes = max(0, backlog_bytes)
        self.dropped = 0
        """Spans dropped unwritten because the backlog was full (or left at shutdown)."""
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._shutdown = False
        self._backlog: deque[tuple[bytes, int]] = deque()  # (line, spans), oldest first
        self._backlog_size = 0
        self._problems = CauseLog()

    @property
    def pending(self) -> int:
        """Spans waiting in memory for the file to accept them."""
        with self._lock:
            return sum(spans for _, spans in self._backlog)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the batch as one line; ``FAILURE`` when it is not in the file (kept to retry)."""
        if self._shutdown:
            return SpanExportResult.FAILURE
        if not spans:
            return SpanExportResult.SUCCESS
        try:
            line = encode_line(spans)
            with self._lock:
                self._backlog.append((line, len(spans)))
                self._backlog_size += len(line)
                written = self._write_backlog()
                if not written:
                    self._trim_backlog()
        except Exception:  # a bug of ours: logged once (raised under our tests)
            internal_error("jsonl exporter")
            return SpanExportResult.FAILURE
        return SpanExportResult.SUCCESS if written else SpanExportResult.FAILURE

    def _write_backlog(self) -> bool:
        """Write waiting lines oldest first; True when none is left. Call under the lock."""
        while self._backlog:
            line, _ = self._backlog[0]
            try:
                self._write(line)
            except OSError as exc:
                self._problems.failed(
                    os_cause(exc),
                    "tracesim: cannot write spans to %s (%s); keeping up to %d bytes of them in memory "
                    "and retrying on each export (logged once per cause)",
                    self.path,
                    exc,
                    self.backlog_bytes,
                )
                return False
            self._backlog.popleft()
            self._backlog_size -= len(line)
        self._problems.recovered(
            "tracesim: writing spans to %s works again (%d spans dropped so far)", self.path, self.dropped
        )
        return True

    def _trim_backlog(self) -> None:
        while self._backlog and self._backlog_size > self.backlog_bytes:
            line, spans = self._backlog.popleft()
            self._backlog_size -= len(line)
            self.dropped += spans
            self._problems.failed(
                "backlog full",
                "tracesim: spans for %s waiting in memory exceed %d bytes; dropping the oldest "
                "(counted in dropped)",
                self.path,
                self.backlog_bytes,
                level=logging.WARNING,
            )

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
            self._append(fd, line, size)
        finally:
            if fcntl is not None and self._fd == fd:
                fcntl.flock(fd, fcntl.LOCK_UN)

    def _append(self, fd: int, line: bytes, start: int) -> None:
        """Write all of ``line`` at the end (``start``), or none of it."""
        view = memoryview(line)
        done = 0
        try:
            while done < len(line):
                written = os.write(fd, view[done:])
                if written <= 0:
                    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
                done += written
        except OSError:
            if done:
                self._cut(fd, start)
            raise

    def _cut(self, fd: int, start: int) -> None:
        # We hold the lock, so the file ends with our partial line: cut it back to where the
        # line began, or a later line would be glued to it and both would be unreadable.
        try:
            os.ftruncate(fd, start)
        except OSError:
            self._close()  # the next open terminates the torn line instead

    def _open(self) -> int:
        if self._fd is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                _terminate_torn_line(fd, self.path)
            except OSError:
                os.close(fd)
                raise
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
        """Write what waits in memory if the file accepts it now, then close; later exports fail."""
        with self._lock:
            if self._shutdown:
                return
            self._shutdown = True
            if self._backlog and not self._write_backlog():
                lost = sum(spans for _, spans in self._backlog)
                self.dropped += lost
                self._backlog.clear()
                self._backlog_size = 0
                _logger.error("tracesim: %d spans could not be written to %s and are lost", lost, self.path)
            self._close()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Retry the lines waiting in memory; True when every line is in the file."""
        with self._lock:
            if self._shutdown or not self._backlog:
                return not self._backlog
            return self._write_backlog()


def _terminate_torn_line(fd: int, path: Path) -> None:
    size = os.fstat(fd).st_size
    if size == 0:
        return
    with open(path, "rb") as f:
        f.seek(size - 1)
        if f.read(1) != b"\n":
            os.write(fd, b"\n")


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


def rotated_files(path: str | os.PathLike[str], backups: int = DEFAULT_BACKUPS) -> list[Path]:
    """The current file and its rotated copies, newest first: ``traces.jsonl, traces.1.jsonl, ...``."""
    p = Path(path)
    return [p] + [p.with_name(f"{p.stem}.{i}{p.suffix}") for i in range(1, backups + 1)]


def read_jsonl(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """Yield each ``ExportTraceServiceRequest`` of a trace file as a dict.

    A line that is not a JSON object (for example the torn last line of a process that
    crashed while writing, or one nested too deeply to parse) is skipped with a
    `TraceFileWarning` naming the file and line, and reading goes on.

    Example:
        >>> from tracesim.exporters import read_jsonl
        >>> for request in read_jsonl(".tracesim/traces.jsonl"):  # doctest: +SKIP
        ...     print(len(request["resourceSpans"]))
    """
    for _, request in _numbered_requests(path):
        yield request


def _numbered_requests(path: str | os.PathLike[str]) -> Iterator[tuple[int, dict[str, Any]]]:
    with open(path, "rb") as f:
        for number, raw in enumerate(f, start=1):
            if not raw.strip():
                continue
            try:
                request = json.loads(raw)
                if not isinstance(request, dict):
                    raise ValueError("not a JSON object")
            except RecursionError:
                _skip(path, number, "unreadable line (nested too deeply)")
                continue
            except ValueError as exc:
                torn = not raw.endswith(b"\n")
                _skip(
                    path,
                    number,
                    "torn last line (a writer stopped mid-line)" if torn else f"unreadable line ({exc})",
                )
                continue
            yield number, request


def _skip(path: str | os.PathLike[str], number: int, what: str) -> None:
    warnings.warn(f"{path}:{number}: skipped {what}", TraceFileWarning, stacklevel=3)


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
