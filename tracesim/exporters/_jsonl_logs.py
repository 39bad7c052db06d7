"""Evaluation log records in a local file: one OTLP/JSON ``ExportLogsServiceRequest`` per line."""

from __future__ import annotations

import json
from collections.abc import Sequence

from opentelemetry.exporter.otlp.json.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

from tracesim.exporters._linefile import LineFileExporter

__all__ = ["JsonlLogExporter"]


class JsonlLogExporter(LineFileExporter, LogRecordExporter):
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

    what = "evaluation log records"
    component = "jsonl log exporter"

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Write the batch as one line; ``FAILURE`` when it is not in the file (kept to retry)."""
        return self._export(
            len(batch),
            lambda: (json.dumps(encode_logs(batch).to_dict(), separators=(",", ":")) + "\n").encode(),
            LogRecordExportResult.SUCCESS,
            LogRecordExportResult.FAILURE,
        )
