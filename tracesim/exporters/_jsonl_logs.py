"""Evaluation log records in a local file: one OTLP/JSON ``ExportLogsServiceRequest`` per line."""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Sequence
from pathlib import Path

from opentelemetry.exporter.otlp.json.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult

__all__ = ["JsonlLogExporter"]

_logger = logging.getLogger("tracesim")


class JsonlLogExporter(LogRecordExporter):
    """Append log records to a file, one OTLP/JSON ``ExportLogsServiceRequest`` per line.

    tracesim writes evaluation results here (``<trace file>.logs.jsonl``) when
    ``evaluation_log_events`` is on and spans go to the local file.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        """Write the batch as one line; failures are logged and reported, never raised."""
        try:
            line = json.dumps(encode_logs(batch).to_dict(), separators=(",", ":")) + "\n"
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                with open(self.path, "a", encoding="utf-8") as f:
                    f.write(line)
        except Exception:
            _logger.exception("tracesim: could not write evaluation log records to %s", self.path)
            return LogRecordExportResult.FAILURE
        return LogRecordExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Lines are written when ``export`` returns."""
        return True

    def shutdown(self) -> None:
        """Nothing to release: the file is opened per batch."""
