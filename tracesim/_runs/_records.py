"""Runs rebuilt from a trace file: the spans ``tracesim show``, ``report``, ``eval`` and
`tracesim.batch` read (`tracesim.tracefile.SpanRecord`) turned back into what `build_run` reads.

A trace file holds what was exported, so a run read from it is the run that was scored
online, less what redaction took out. Spans are grouped by trace once (`RunIndex`); each run
is then built from its own trace's spans only.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, Status, StatusCode, TraceFlags

from tracesim._runs._build import DEFAULT_MAX_STEPS, DEFAULT_MAX_VALUE_CHARS, build_run
from tracesim.runs import Run
from tracesim.tracefile import SpanRecord

__all__ = ["RunIndex", "readable_span", "record_run"]

_STATUS = {"OK": StatusCode.OK, "ERROR": StatusCode.ERROR}


def readable_span(record: SpanRecord) -> ReadableSpan:
    """``record`` as an SDK span (ids, parent, times, attributes, events, status, scope).

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> record = SpanRecord("0" * 31 + "1", "0" * 15 + "2", None, "agent", "INTERNAL", 0, 10**9, {})
        >>> readable_span(record).context.span_id
        2
    """
    trace_id = int(record.trace_id, 16)
    context = SpanContext(trace_id, int(record.span_id, 16), False, TraceFlags(TraceFlags.SAMPLED))
    parent = None
    if record.parent_span_id:
        parent = SpanContext(trace_id, int(record.parent_span_id, 16), False)
    return ReadableSpan(
        name=record.name,
        context=context,
        parent=parent,
        # A run reads no resource; without one the SDK runs its resource detectors (~1 ms a span).
        resource=Resource.get_empty(),
        attributes=dict(record.attributes),
        events=[Event(event.name, dict(event.attributes), event.time_unix_nano) for event in record.events],
        status=Status(_STATUS.get(record.status_code, StatusCode.UNSET), record.status_message or None),
        start_time=record.start_time_unix_nano,
        end_time=record.end_time_unix_nano,
        instrumentation_scope=InstrumentationScope(record.scope) if record.scope else None,
    )


def record_run(
    root: SpanRecord,
    records: Iterable[SpanRecord],
    *,
    max_steps: int = DEFAULT_MAX_STEPS,
    max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
) -> Run:
    """The run under ``root``, from the spans of a trace file (other traces' spans are ignored).

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> tid = "0" * 31 + "1"
        >>> agent = SpanRecord(tid, "0" * 15 + "1", None, "agent", "INTERNAL", 0, 3, {})
        >>> tool = SpanRecord(
        ...     tid, "0" * 15 + "2", "0" * 15 + "1", "lookup", "INTERNAL", 1, 2,
        ...     {
        ...         "gen_ai.operation.name": "execute_tool",
        ...         "gen_ai.tool.name": "lookup",
        ...         "gen_ai.tool.call.arguments": '{"city": "Warsaw"}',
        ...     },
        ... )
        >>> [(call.name, call.arguments) for call in record_run(agent, [agent, tool]).tool_calls]
        [('lookup', {'city': 'Warsaw'})]
    """
    return RunIndex(records).run(root, max_steps=max_steps, max_value_chars=max_value_chars)


class RunIndex:
    """The spans of a trace file grouped by trace, to build any span's run from its trace alone.

    Example:
        >>> from tracesim.tracefile import SpanRecord
        >>> tid = "0" * 31 + "1"
        >>> agent = SpanRecord(tid, "0" * 15 + "1", None, "agent", "INTERNAL", 0, 3, {})
        >>> index = RunIndex([agent])
        >>> index.run(agent).steps
        ()
    """

    def __init__(self, records: Iterable[SpanRecord]) -> None:
        self._traces: dict[str, list[SpanRecord]] = {}
        for record in records:
            self._traces.setdefault(record.trace_id, []).append(record)
        self._converted: dict[str, list[ReadableSpan]] = {}

    def trace(self, trace_id: str) -> list[SpanRecord]:
        """The spans of one trace, as read."""
        return self._traces.get(trace_id, [])

    def run(
        self,
        root: SpanRecord,
        *,
        max_steps: int = DEFAULT_MAX_STEPS,
        max_value_chars: int = DEFAULT_MAX_VALUE_CHARS,
        prices: Any = None,
    ) -> Run:
        """The run under ``root`` (a span of one of the indexed traces, or any span record)."""
        spans = self._converted.get(root.trace_id)
        if spans is None:
            spans = [readable_span(record) for record in self._traces.get(root.trace_id, ())]
            self._converted[root.trace_id] = spans
        root_span = next((span for span in spans if _hex(span) == root.span_id), None) or readable_span(root)
        return build_run(
            root_span, spans, max_steps=max_steps, max_value_chars=max_value_chars, prices=prices
        )


def _hex(span: ReadableSpan) -> str | None:
    context = span.context
    return f"{context.span_id:016x}" if context is not None else None
