"""Helpers for testing code that uses tracesim: capture spans in memory.

Example:
    >>> import tracesim
    >>> from tracesim.testing import capture_spans
    >>> @tracesim.trace(kind="agent")
    ... def answer(question: str) -> str:
    ...     return "Warsaw"
    >>> with capture_spans() as captured:
    ...     _ = answer("Where was Marie Curie born?")
    >>> captured.by_name("answer").attributes["output.value"]
    'Warsaw'
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracesim import _runtime
from tracesim._config import resolve
from tracesim.tracefile import SpanRecord, spans_from_request

__all__ = ["CapturedSpans", "capture_spans"]


class CapturedSpans:
    """The spans finished inside a `capture_spans` block, decoded like a trace file."""

    def __init__(self, exporter: InMemorySpanExporter) -> None:
        self._exporter = exporter

    @property
    def otel_spans(self) -> tuple[ReadableSpan, ...]:
        """The finished spans as OpenTelemetry ``ReadableSpan`` objects, in end order."""
        return self._exporter.get_finished_spans()

    @property
    def spans(self) -> list[SpanRecord]:
        """The finished spans, decoded through the OTLP/JSON encoding, in end order."""
        finished = self.otel_spans
        return list(spans_from_request(encode_spans(finished).to_dict())) if finished else []

    def named(self, name: str) -> list[SpanRecord]:
        """Every finished span called ``name``."""
        return [s for s in self.spans if s.name == name]

    def by_name(self, name: str) -> SpanRecord:
        """The one finished span called ``name``; fails if there are none or several."""
        matches = self.named(name)
        if len(matches) != 1:
            names = sorted({s.name for s in self.spans})
            raise AssertionError(f"expected one span named {name!r}, found {len(matches)}; spans: {names}")
        return matches[0]

    def children(self, parent: SpanRecord) -> list[SpanRecord]:
        """The finished children of ``parent``, in start order."""
        kids = [s for s in self.spans if s.parent_span_id == parent.span_id]
        return sorted(kids, key=lambda s: s.start_time_unix_nano)

    def clear(self) -> None:
        """Forget the spans captured so far."""
        self._exporter.clear()


@contextmanager
def capture_spans(**settings: Any) -> Iterator[CapturedSpans]:
    """Send spans to memory for the duration of the block, then restore the previous setup.

    Spans are exported as each one ends and scores are computed before a traced call
    returns (``scoring_mode="inline"``), so assertions need no waiting. Other
    `tracesim.configure` settings can be passed as keyword arguments.
    """
    exporter = InMemorySpanExporter()
    arguments: dict[str, Any] = {"batch_export": False, "scoring_mode": "inline", **settings}
    arguments["exporters"] = [exporter, *settings.get("exporters", ())]
    runtime = _runtime.build(resolve(arguments))
    previous = _runtime.install(runtime)
    try:
        yield CapturedSpans(exporter)
    finally:
        runtime.drain(runtime.settings.shutdown_timeout_s)  # pending scores land in this capture
        _runtime.install(previous)
        runtime.close(runtime.settings.shutdown_timeout_s)
