"""The local trace file's writer: OTLP/JSON lines, appended with size-based rotation.

Each line is one ``ExportTraceServiceRequest`` in the OTLP/JSON encoding, the format the
OpenTelemetry Collector's file exporter writes, so a file can be replayed to any OTLP/HTTP
endpoint unchanged. Encoding is `tracesim.exporters._otlp_json_encode`'s: the bytes of the
official ``opentelemetry-exporter-otlp-json-common`` package at a fraction of its CPU. Appending
whole lines (rotation, several processes, a full disk) is `LineFile`'s job, and `LineFileExporter`
holds what the local exporters share; this module adds the span one.
Reading a trace file back is `tracesim.tracefile`'s job.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracesim.exporters._linefile import (
    DEFAULT_BACKLOG_BYTES,
    DEFAULT_BACKUPS,
    DEFAULT_MAX_BYTES,
    LineFileExporter,
)
from tracesim.exporters._otlp_json_encode import encode_or_fallback, pieces_or_fallback

if TYPE_CHECKING:
    from tracesim._config import Settings

__all__ = ["JsonlExporter", "check_writable", "encode_line", "require_writable"]


def encode_line(spans: Sequence[ReadableSpan]) -> bytes:
    """Encode spans as one OTLP/JSON ``ExportTraceServiceRequest`` line, newline included.

    The official JSON encoder's bytes; a batch holding a value tracesim's encoder does not write
    is encoded by the official one (said once).

    Example:
        >>> encode_line([])
        b'{}\\n'
    """
    return encode_or_fallback(spans)


class JsonlExporter(LineFileExporter, SpanExporter):
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

    what = "spans"
    component = "jsonl exporter"

    def __init__(
        self,
        path: str | os.PathLike[str] = ".tracesim/traces.jsonl",
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        backlog_bytes: int = DEFAULT_BACKLOG_BYTES,
    ) -> None:
        super().__init__(path, max_bytes=max_bytes, backups=backups, backlog_bytes=backlog_bytes)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Write the batch as one line; ``FAILURE`` when it is not in the file (kept to retry)."""
        return self._export(
            len(spans), lambda: pieces_or_fallback(spans), SpanExportResult.SUCCESS, SpanExportResult.FAILURE
        )


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


def require_writable(path: Path, settings: Settings, expected: str) -> None:
    """Raise the `ConfigError` on ``jsonl_path`` when `check_writable` finds ``path`` unusable.

    ``expected`` says what the setting should be; the reason follows it in parentheses. The
    error names ``TRACESIM_JSONL_PATH`` when that variable is set, since that is where to fix it.

    Example:
        >>> from tracesim._config import resolve
        >>> require_writable(Path("/"), resolve({}, environ={}), "a file path tracesim can append to")
        Traceback (most recent call last):
        ...
        tracesim._errors.ConfigError: ...
    """
    problem = check_writable(path)
    if problem is not None:
        from tracesim._errors import ConfigError

        raise ConfigError(
            "jsonl_path",
            settings.jsonl_path,
            f"{expected} ({problem})",
            env_var="TRACESIM_JSONL_PATH" if os.environ.get("TRACESIM_JSONL_PATH") else None,
        )
