"""Evaluation log records in a local file: one OTLP/JSON ``ExportLogsServiceRequest`` per line."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence

from opentelemetry.exporter.otlp.json.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

from tracesim._internal_errors import internal_error
from tracesim.exporters._linefile import DEFAULT_BACKLOG_BYTES, DEFAULT_BACKUPS, DEFAULT_MAX_BYTES, LineFile

__all__ = ["JsonlLogExporter"]


class JsonlLogExporter(LogRecordExporter):
    """Append log records to a file, one OTLP/JSON ``ExportLogsServiceRequest`` per line.

    tracesim writes evaluation results here (``<trace file>.logs.jsonl``) when
    ``evaluation_log_events`` is on and spans go to the local file. The file is a `LineFile`,
    as the trace file is: rotated by size, shared safely between processes, never left with a
    half line; records the disk refuses wait in memory (``pending``, within ``backlog_bytes``,
    the oldest dropped first and counted in ``dropped``) and are written once it takes them.

    Example:
        >>> from opentelemetry.sdk._logs import LoggerProvider
        >>> from opentelemetry.sdk._logs.export import BatchLogRecordProcessor
        >>> provider = LoggerProvider()
        >>> exporter = JsonlLogExporter(".tracesim/traces.logs.jsonl")  # doctest: +SKIP
        >>> provider.add_log_record_processor(BatchLogRecordProcessor(exporter))  # doctest: +SKIP
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        backups: int = DEFAULT_BACKUPS,
        backlog_bytes: int = DEFAULT_BACKLOG_BYTES,
    ) -> None:
        self.file = LineFile(
            path,
            max_bytes=max_bytes,
            backups=backups,
            backlog_bytes=backlog_bytes,
            what="evaluation log records",
        )
        """Where the lines go: rotation settings, `pending` and `dropped` live here."""
        self.path = self.file.path

    @property
    def pending(self) -> int:
        """Records waiting in memory for the file to accept them."""
        return self.file.pending

    @property
    def dropped(self) -> int:
        """Records dropped unwritten because the backlog was full (or left at shutdown)."""
        return self.file.dropped

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Write the batch as one line; ``FAILURE`` when it is not in the file (kept to retry)."""
        if self.file.closed:
            return LogRecordExportResult.FAILURE
        if not batch:
            return LogRecordExportResult.SUCCESS
        try:
            line = json.dumps(encode_logs(batch).to_dict(), separators=(",", ":")) + "\n"
            written = self.file.append(line.encode(), items=len(batch))
        except Exception:  # a bug of ours: logged once (raised under our tests)
            internal_error("jsonl log exporter")
            return LogRecordExportResult.FAILURE
        return LogRecordExportResult.SUCCESS if written else LogRecordExportResult.FAILURE

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Retry the lines waiting in memory; True when every line is in the file."""
        return self.file.flush()

    def shutdown(self) -> None:
        """Write what waits in memory if the file accepts it now, then close; later exports fail."""
        self.file.close()
