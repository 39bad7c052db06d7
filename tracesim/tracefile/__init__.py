"""The trace file, read back: its requests, its spans as read-only records, and their trees.

A trace file is what `tracesim.exporters.JsonlExporter` writes: one OTLP/JSON
``ExportTraceServiceRequest`` per line, rotated by size. This package is its reading side,
used by ``tracesim show``, ``tracesim report``, replay, batch scoring of spans, the console
exporter and tests:

- `read_jsonl` yields each request of a file; `load_spans` every span of one or more files, as
  `SpanRecord` (with its `EventRecord` and `LinkRecord`); `spans_from_request` decodes one
  request; `rotated_files` names a file and its rotated copies; a damaged line is skipped with
  a `TraceFileWarning`.
- `render_trees` shows records as compact trees with their inputs, outputs and scores.

Names are imported when first used, so ``import tracesim`` stays quick.

Example:
    >>> from tracesim.tracefile import load_spans, render_trees
    >>> print(render_trees(load_spans(".tracesim/traces.jsonl")))  # doctest: +SKIP
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tracesim.tracefile._reading import TraceFileWarning, load_spans, read_jsonl, rotated_files
    from tracesim.tracefile._span_records import EventRecord, LinkRecord, SpanRecord, spans_from_request
    from tracesim.tracefile._trees import render_trees

_MODULE_OF = {
    "EventRecord": "_span_records",
    "LinkRecord": "_span_records",
    "SpanRecord": "_span_records",
    "TraceFileWarning": "_reading",
    "load_spans": "_reading",
    "read_jsonl": "_reading",
    "render_trees": "_trees",
    "rotated_files": "_reading",
    "spans_from_request": "_span_records",
}

__all__ = [
    "EventRecord",
    "LinkRecord",
    "SpanRecord",
    "TraceFileWarning",
    "load_spans",
    "read_jsonl",
    "render_trees",
    "rotated_files",
    "spans_from_request",
]


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'tracesim.tracefile' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"tracesim.tracefile.{module}"), name)
    globals()[name] = value  # looked up once
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
