"""OTLP/JSON trace requests back into SDK spans, and into OTLP/protobuf bytes.

Two consumers need the reverse of the OTLP/JSON encoder:

* the spool (`SpoolingExporter`) keeps undelivered batches as OTLP/JSON lines and re-sends
  them through whatever official exporter it wraps, which only accepts
  ``opentelemetry.sdk.trace.ReadableSpan`` objects; so `readable_spans` rebuilds them through
  the public ``ReadableSpan`` constructor;
* ``tracesim replay`` sends trace files to endpoints that only speak OTLP/protobuf (Phoenix
  among them); `request_to_protobuf` converts a JSON request field by field with protobuf's
  own JSON parser. OTLP/JSON differs from protobuf's canonical JSON mapping in one place only:
  trace and span ids are hex, not base64, so those are rewritten first. Nothing else changes.

Round trip: ``encode_spans(readable_spans(d)).to_dict() == d`` for any ``d`` the official
JSON encoder wrote (pinned by tests), including dropped counts and remote-parent flags.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.util import BoundedList
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags, TraceState

from tracesim.tracefile._span_records import (
    decode_value,
    hex_id,
    kind_code,
    span_time,
    spans_from_request,
    status_code,
)

__all__ = ["readable_spans", "request_to_protobuf"]

# OTLP span flags: bit 8 says whether bit 9 (the parent/link context is remote) is known.
_HAS_IS_REMOTE = 0x100
_IS_REMOTE = 0x200
_ID_KEYS = frozenset({"traceId", "spanId", "parentSpanId"})
# What Python raises for a field of the wrong type or size (flags, dropped counts, trace state);
# turned into ValueError so callers handle one exception for "not OTLP/JSON".
_NOT_OTLP = (KeyError, TypeError, AttributeError, OverflowError, RecursionError)


def readable_spans(request: Mapping[str, Any]) -> list[ReadableSpan]:
    """Rebuild the SDK spans of one OTLP/JSON ``ExportTraceServiceRequest``.

    The request is checked by the shared decoder (`spans_from_request`) first, so a malformed
    one is refused with the same message ``tracesim show`` gives, before any span is built.

    Raises:
        ValueError: the request is not OTLP/JSON.

    Example:
        >>> from tracesim.tracefile import read_jsonl
        >>> from tracesim.tracefile._sdk_spans import readable_spans
        >>> for request in read_jsonl(".tracesim/traces.jsonl"):  # doctest: +SKIP
        ...     spans = readable_spans(request)
    """
    for _ in spans_from_request(request):
        pass  # only the checks: the fields below that it does not read are guarded by _NOT_OTLP
    try:
        return _readable_spans(request)
    except _NOT_OTLP as exc:
        raise ValueError(f"not OTLP/JSON ({exc!r})") from None


def _readable_spans(request: Mapping[str, Any]) -> list[ReadableSpan]:
    spans: list[ReadableSpan] = []
    for resource_spans in request.get("resourceSpans", []):
        resource = Resource(
            _attributes(resource_spans.get("resource", {}).get("attributes", [])),
            resource_spans.get("schemaUrl"),
        )
        for scope_spans in resource_spans.get("scopeSpans", []):
            scope = _scope(scope_spans)
            spans.extend(_span(span, resource, scope) for span in scope_spans.get("spans", []))
    return spans


def _scope(scope_spans: Mapping[str, Any]) -> InstrumentationScope | None:
    scope = scope_spans.get("scope")
    if scope is None:
        return None
    return InstrumentationScope(
        scope.get("name", ""),
        scope.get("version"),
        scope_spans.get("schemaUrl"),
        _attributes(scope.get("attributes", [])),
    )


def _span(span: Mapping[str, Any], resource: Resource, scope: InstrumentationScope | None) -> ReadableSpan:
    flags = int(span.get("flags", 0))
    context = SpanContext(
        int(hex_id(span.get("traceId"), 16, "traceId"), 16),
        int(hex_id(span.get("spanId"), 8, "spanId"), 16),
        is_remote=False,
        # OTLP does not carry the sampled bit; a span that was exported was sampled.
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=_trace_state(span.get("traceState")),
    )
    parent = None
    if span.get("parentSpanId"):
        parent_id = int(hex_id(span["parentSpanId"], 8, "parentSpanId"), 16)
        parent = SpanContext(context.trace_id, parent_id, is_remote=_remote(flags))
    status = span.get("status") or {}
    return ReadableSpan(
        name=span["name"],
        context=context,
        parent=parent,
        resource=resource,
        attributes=_attributes(span.get("attributes", []), span.get("droppedAttributesCount")),
        events=_bounded([_event(event) for event in span.get("events", [])], span.get("droppedEventsCount")),
        links=_bounded([_link(link) for link in span.get("links", [])], span.get("droppedLinksCount")),
        kind=SpanKind(max(kind_code(span.get("kind", 1)), 1) - 1),
        status=Status(StatusCode(status_code(status.get("code"))), status.get("message") or None),
        start_time=span_time(span.get("startTimeUnixNano"), "startTimeUnixNano"),
        end_time=span_time(span.get("endTimeUnixNano"), "endTimeUnixNano"),
        instrumentation_scope=scope,
    )


def _event(event: Mapping[str, Any]) -> Event:
    attributes = _attributes(event.get("attributes", []), event.get("droppedAttributesCount"))
    return Event(event["name"], attributes, span_time(event.get("timeUnixNano"), "timeUnixNano", default=0))


def _link(link: Mapping[str, Any]) -> Link:
    flags = int(link.get("flags", 0))
    context = SpanContext(
        int(hex_id(link.get("traceId"), 16, "link traceId"), 16),
        int(hex_id(link.get("spanId"), 8, "link spanId"), 16),
        is_remote=_remote(flags),
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
        trace_state=_trace_state(link.get("traceState")),
    )
    return Link(context, _attributes(link.get("attributes", []), link.get("droppedAttributesCount")))


def _remote(flags: int) -> bool:
    return bool(flags & _HAS_IS_REMOTE and flags & _IS_REMOTE)


def _trace_state(raw: str | None) -> TraceState | None:
    if not raw:
        return None
    pairs = [item.split("=", 1) for item in raw.split(",") if "=" in item]
    return TraceState([(key.strip(), value.strip()) for key, value in pairs])


def _attributes(items: Iterable[Mapping[str, Any]], dropped: Any = None) -> BoundedAttributes:
    attributes = BoundedAttributes(
        attributes={item["key"]: _value(item.get("value", {})) for item in items}, immutable=True
    )
    # The SDK reports dropped counts from this public field; keeping it keeps the round trip exact.
    attributes.dropped = int(dropped or 0)
    return attributes


def _value(value: Mapping[str, Any]) -> Any:
    decoded = decode_value(value)
    # Sequences are tuples inside the SDK (immutable attribute values).
    if isinstance(decoded, list):
        return tuple(decoded)
    return decoded


def _bounded(items: Sequence[Any], dropped: Any) -> BoundedList[Any]:
    bounded: BoundedList[Any] = BoundedList.from_seq(None, items)
    bounded.dropped = int(dropped or 0)
    return bounded


def request_to_protobuf(request: Mapping[str, Any]) -> bytes:
    """Serialise one OTLP/JSON request as an OTLP/protobuf ``ExportTraceServiceRequest``.

    Lossless: every field is parsed by protobuf's JSON parser; only the hex trace and span ids
    of OTLP/JSON are turned into the base64 that parser expects for ``bytes`` fields.

    Raises:
        ValueError: the request is not valid OTLP/JSON.

    Example:
        >>> from tracesim.tracefile._sdk_spans import request_to_protobuf
        >>> request_to_protobuf({"resourceSpans": []})
        b''
    """
    from google.protobuf import json_format  # type: ignore[import-untyped,unused-ignore]
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    message = ExportTraceServiceRequest()
    try:
        json_format.ParseDict(_ids_to_base64(request), message)
    except json_format.ParseError as exc:
        raise ValueError(str(exc)) from None
    except _NOT_OTLP as exc:
        raise ValueError(f"not OTLP/JSON ({exc!r})") from None
    data: bytes = message.SerializeToString()
    return data


def _ids_to_base64(node: Any, key: str = "") -> Any:
    if isinstance(node, Mapping):
        return {k: _ids_to_base64(v, k) for k, v in node.items()}
    if isinstance(node, list):
        return [_ids_to_base64(item) for item in node]
    if key in _ID_KEYS and isinstance(node, str):
        return base64.b64encode(bytes.fromhex(node)).decode("ascii")
    return node
