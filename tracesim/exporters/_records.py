"""A decoded, read-only view of the spans in OTLP/JSON trace requests.

`tracesim show`, `tracesim report`, the console exporter and tests all read spans through
this one decoder, so there is a single place that knows the OTLP/JSON encoding rules (hex ids,
integer enums, ``key``/``value`` attribute lists, 64-bit integers as strings).
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EventRecord", "LinkRecord", "SpanRecord", "decode_value", "spans_from_request"]

_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
_KIND = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}


@dataclass(frozen=True)
class EventRecord:
    """A span event: its name, time and attributes."""

    name: str
    time_unix_nano: int
    attributes: Mapping[str, Any]


@dataclass(frozen=True)
class LinkRecord:
    """A span link to another span."""

    trace_id: str
    span_id: str
    attributes: Mapping[str, Any]


@dataclass(frozen=True)
class SpanRecord:
    """One span read back from an OTLP/JSON trace request.

    Ids are lower-case hex strings, as OTLP/JSON writes them; attribute values are plain
    Python values (``str``, ``int``, ``float``, ``bool``, lists, dicts).

    Example:
        >>> from tracesim.exporters import load_spans
        >>> spans = load_spans(".tracesim/traces.jsonl")  # doctest: +SKIP
        >>> [s.name for s in spans if s.parent_span_id is None]  # doctest: +SKIP
        ['answer']
    """

    trace_id: str
    span_id: str
    parent_span_id: str | None
    name: str
    kind: str
    start_time_unix_nano: int
    end_time_unix_nano: int
    attributes: Mapping[str, Any]
    events: tuple[EventRecord, ...] = ()
    links: tuple[LinkRecord, ...] = ()
    status_code: str = "UNSET"
    status_message: str = ""
    resource: Mapping[str, Any] = field(default_factory=dict)
    scope: str = ""

    @property
    def duration_s(self) -> float:
        """Span duration in seconds."""
        return (self.end_time_unix_nano - self.start_time_unix_nano) / 1e9

    @property
    def service_name(self) -> str | None:
        """The ``service.name`` resource attribute, when present."""
        value = self.resource.get("service.name")
        return value if isinstance(value, str) else None

    def event(self, name: str) -> list[EventRecord]:
        """The events named ``name``, in order."""
        return [e for e in self.events if e.name == name]


def decode_value(value: Mapping[str, Any]) -> Any:
    """Decode one OTLP/JSON ``AnyValue`` into a plain Python value."""
    if "stringValue" in value:
        return value["stringValue"]
    if "boolValue" in value:
        return bool(value["boolValue"])
    if "intValue" in value:
        return int(value["intValue"])
    if "doubleValue" in value:
        return _decode_double(value["doubleValue"])
    if "arrayValue" in value:
        return [decode_value(v) for v in value["arrayValue"].get("values", [])]
    if "kvlistValue" in value:
        return decode_attributes(value["kvlistValue"].get("values", []))
    if "bytesValue" in value:
        return base64.b64decode(value["bytesValue"])
    return None


def _decode_double(raw: Any) -> float:
    # OTLP/JSON writes NaN and infinities as strings.
    return float(raw)


def decode_attributes(items: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """Decode an OTLP/JSON ``key``/``value`` list into a dict."""
    return {item["key"]: decode_value(item.get("value", {})) for item in items}


def spans_from_request(request: Mapping[str, Any]) -> Iterator[SpanRecord]:
    """Yield every span of one decoded ``ExportTraceServiceRequest``.

    Raises:
        KeyError, ValueError, TypeError: the request is not OTLP/JSON.
    """
    for resource_spans in request.get("resourceSpans", []):
        resource = decode_attributes(resource_spans.get("resource", {}).get("attributes", []))
        for scope_spans in resource_spans.get("scopeSpans", []):
            scope = scope_spans.get("scope", {}).get("name", "")
            for span in scope_spans.get("spans", []):
                yield _decode_span(span, resource, scope)


def _decode_span(span: Mapping[str, Any], resource: Mapping[str, Any], scope: str) -> SpanRecord:
    status = span.get("status", {})
    return SpanRecord(
        trace_id=span["traceId"],
        span_id=span["spanId"],
        parent_span_id=span.get("parentSpanId") or None,
        name=span["name"],
        kind=_KIND.get(int(span.get("kind", 0)), "UNSPECIFIED"),
        start_time_unix_nano=int(span["startTimeUnixNano"]),
        end_time_unix_nano=int(span["endTimeUnixNano"]),
        attributes=decode_attributes(span.get("attributes", [])),
        events=tuple(
            EventRecord(e["name"], int(e.get("timeUnixNano", 0)), decode_attributes(e.get("attributes", [])))
            for e in span.get("events", [])
        ),
        links=tuple(
            LinkRecord(link["traceId"], link["spanId"], decode_attributes(link.get("attributes", [])))
            for link in span.get("links", [])
        ),
        status_code=_STATUS.get(int(status.get("code", 0)), "UNSET"),
        status_message=status.get("message", ""),
        resource=resource,
        scope=scope,
    )
