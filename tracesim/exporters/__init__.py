"""Where spans go: the local JSON-lines file, the console, and OTLP backends.

Every exporter is an OpenTelemetry ``SpanExporter``, so any of them also works with a plain
OpenTelemetry SDK pipeline, and any OpenTelemetry exporter works with `tracesim.configure`.
"""

from tracesim.exporters._console import ConsoleExporter
from tracesim.exporters._jsonl import JsonlExporter, TraceFileWarning, load_spans, read_jsonl, rotated_files
from tracesim.exporters._otlp import otlp_exporter
from tracesim.exporters._records import EventRecord, LinkRecord, SpanRecord, spans_from_request
from tracesim.exporters._redacting import RedactingExporter, Redaction
from tracesim.exporters._replay import ReplayReport, replay
from tracesim.exporters._spool import SpoolingExporter, SpoolStats
from tracesim.exporters._tree import render_trees

__all__ = [
    "ConsoleExporter",
    "EventRecord",
    "JsonlExporter",
    "LinkRecord",
    "RedactingExporter",
    "Redaction",
    "ReplayReport",
    "SpanRecord",
    "SpoolStats",
    "SpoolingExporter",
    "TraceFileWarning",
    "load_spans",
    "otlp_exporter",
    "read_jsonl",
    "render_trees",
    "replay",
    "rotated_files",
    "spans_from_request",
]
