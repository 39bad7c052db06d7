"""Print finished traces as compact trees, for development.

Span names and values are printed with control characters made visible (see `render_trees`),
so what a traced function received cannot steer the developer's terminal.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import TextIO

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from tracesim._internal_errors import warn_once
from tracesim.tracefile import SpanRecord, render_trees, spans_from_request

__all__ = ["ConsoleExporter"]


def _records(spans: Sequence[ReadableSpan]) -> list[SpanRecord]:
    try:
        return list(spans_from_request(encode_spans(spans).to_dict()))
    except ValueError:
        pass  # one span the decoder refuses: show the others
    records: list[SpanRecord] = []
    for span in spans:
        try:
            records.extend(spans_from_request(encode_spans([span]).to_dict()))
        except ValueError as exc:
            warn_once("console-undecodable", "tracesim: the console exporter cannot show a span (%s)", exc)
    return records


class ConsoleExporter(SpanExporter):
    """Print each trace as a tree once its root span has ended.

    Children end before their root, so spans wait in a small buffer (``max_pending`` spans;
    the oldest traces are printed early when it fills). Remaining spans print at shutdown. The
    export queue's records of spans it dropped are not traces: each prints as one line saying
    how many (see `render_trees`).

    Example:
        >>> import tracesim
        >>> tracesim.configure(exporters=["console"])  # doctest: +SKIP
    """

    def __init__(
        self, stream: TextIO | None = None, *, details: bool = True, max_pending: int = 10_000
    ) -> None:
        self._stream = stream
        self._details = details
        self._max_pending = max_pending
        self._pending: OrderedDict[str, list[SpanRecord]] = OrderedDict()
        self._count = 0
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Buffer the spans and print every trace whose root is now complete."""
        records = _records(spans)
        ready: list[SpanRecord] = []
        with self._lock:
            for record in records:
                self._pending.setdefault(record.trace_id, []).append(record)
                self._count += 1
            for record in records:
                if record.parent_span_id is None and record.trace_id in self._pending:
                    done = self._pending.pop(record.trace_id)
                    self._count -= len(done)
                    ready.extend(done)
            while self._count > self._max_pending and self._pending:
                _, done = self._pending.popitem(last=False)
                self._count -= len(done)
                ready.extend(done)
        if ready:
            self._print(ready)
        return SpanExportResult.SUCCESS

    def _print(self, records: list[SpanRecord]) -> None:
        stream = self._stream or sys.stdout
        stream.write(render_trees(records, details=self._details))
        stream.flush()

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        """Nothing is buffered in the stream; incomplete traces keep waiting for their root."""
        return True

    def shutdown(self) -> None:
        """Print the spans of traces whose root never arrived."""
        with self._lock:
            rest = [r for records in self._pending.values() for r in records]
            self._pending.clear()
            self._count = 0
        if rest:
            self._print(rest)
