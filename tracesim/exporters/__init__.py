"""Where spans go: the local JSON-lines file, the console, and OTLP backends.

Every exporter is an OpenTelemetry ``SpanExporter``, so any of them also works with a plain
OpenTelemetry SDK pipeline, and any OpenTelemetry exporter works with `tracesim.configure`.

Names are imported when first used (``import tracesim`` must stay quick: the replay client,
the console's renderer and the OTLP exporters are not needed to trace a call).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracesim.exporters._console import ConsoleExporter
    from tracesim.exporters._jsonl import (
        JsonlExporter,
        TraceFileWarning,
        load_spans,
        read_jsonl,
        rotated_files,
    )
    from tracesim.exporters._otlp import otlp_exporter
    from tracesim.exporters._records import EventRecord, LinkRecord, SpanRecord, spans_from_request
    from tracesim.exporters._redacting import RedactingExporter, Redaction
    from tracesim.exporters._replay import ReplayReport, replay
    from tracesim.exporters._spool import SpoolingExporter, SpoolStats
    from tracesim.exporters._tree import render_trees

_MODULE_OF = {
    "ConsoleExporter": "_console",
    "EventRecord": "_records",
    "JsonlExporter": "_jsonl",
    "LinkRecord": "_records",
    "RedactingExporter": "_redacting",
    "Redaction": "_redacting",
    "ReplayReport": "_replay",
    "SpanRecord": "_records",
    "SpoolStats": "_spool",
    "SpoolingExporter": "_spool",
    "TraceFileWarning": "_jsonl",
    "load_spans": "_jsonl",
    "otlp_exporter": "_otlp",
    "read_jsonl": "_jsonl",
    "render_trees": "_tree",
    "replay": "_replay",
    "rotated_files": "_jsonl",
    "spans_from_request": "_records",
}

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


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'tracesim.exporters' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tracesim.exporters.{module}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
