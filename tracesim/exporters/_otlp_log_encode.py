"""Log records to the body of an OTLP/HTTP request (``ExportLogsServiceRequest``, protobuf).

The log-record counterpart of `tracesim.exporters._otlp_encode`, whose pieces it shares
(attributes, resource and scope heads, the grouping): the same wire bytes as OpenTelemetry's
encoder, written field by field from the SDK's ``ReadableLogRecord``s, without a message object
per record, attribute and value. What tracesim sends as logs are the results' records
(``gen_ai.evaluation.result``, three per call with three evaluators): at 600 scored calls/s,
OpenTelemetry's encoder was about 40 % of their cost.

A value it does not write the same way raises `Unsupported` (as the span encoder's); `encode_logs_or_fallback`
then hands that batch to OpenTelemetry's encoder.

Example:
    >>> from opentelemetry.sdk._logs import LoggerProvider
    >>> from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
    >>> memory = InMemoryLogRecordExporter()
    >>> provider = LoggerProvider()
    >>> provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    >>> provider.get_logger("doc").emit(body="evaluation: rouge=0.93", event_name="gen_ai.evaluation.result")
    >>> body = encode_logs_request(memory.get_finished_logs())
    >>> from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
    >>> ExportLogsServiceRequest.FromString(body).resource_logs[0].scope_logs[0].log_records[0].event_name
    'gen_ai.evaluation.result'
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from typing import Any

from tracesim._internal_errors import internal_error
from tracesim.exporters._otlp_encode import (
    _NOT_WRITTEN,
    _any_value,
    _attributes,
    _cached,
    _field,
    _group,
    _resource_head,
    _schema,
    _scope_head,
    _varint,
)

__all__ = ["encode_logs_or_fallback", "encode_logs_request"]

_pack_fixed64 = struct.Struct("<Q").pack
_pack_fixed32 = struct.Struct("<I").pack
_ATTRIBUTE = b"\x32"  # LogRecord.attributes = 6
_TRACE_ID = struct.Struct(">QQ").pack
_SPAN_ID = struct.Struct(">Q").pack


def _record(readable: Any) -> bytes:
    """One ``LogRecord``, its fields in field-number order, defaults left out (as protobuf does)."""
    record = readable.log_record
    parts: list[bytes] = []
    add = parts.append
    if record.timestamp:
        add(b"\x09" + _pack_fixed64(record.timestamp))  # time_unix_nano = 1
    severity = getattr(record.severity_number, "value", None)
    if severity:
        add(b"\x10" + _varint(severity))  # severity_number = 2
    if record.severity_text:
        add(_field(b"\x1a", record.severity_text.encode()))  # severity_text = 3
    add(_field(b"\x2a", _any_value(record.body)))  # body = 5: set even when None, as OpenTelemetry's
    attributes = record.attributes
    if attributes and type(attributes) is not dict:  # the SDK's BoundedAttributes: its dict, copied
        copy = getattr(attributes, "copy", None)  # in C, not read key by key through its lock
        attributes = copy() if copy is not None else attributes
    _attributes(_ATTRIBUTE, attributes, parts)  # attributes = 6
    dropped = readable.dropped_attributes
    if dropped:
        add(b"\x38" + _varint(dropped))  # dropped_attributes_count = 7
    flags = int(record.trace_flags) if record.trace_flags is not None else 0
    if flags:
        add(b"\x45" + _pack_fixed32(flags))  # flags = 8
    if record.trace_id:
        add(b"\x4a\x10" + _TRACE_ID(record.trace_id >> 64, record.trace_id & 0xFFFFFFFFFFFFFFFF))  # 9
    if record.span_id:
        add(b"\x52\x08" + _SPAN_ID(record.span_id))  # span_id = 10
    if record.observed_timestamp:
        add(b"\x59" + _pack_fixed64(record.observed_timestamp))  # observed_time_unix_nano = 11
    if record.event_name:
        add(_field(b"\x62", record.event_name.encode()))  # event_name = 12
    return b"".join(parts)


def encode_logs_request(batch: Sequence[Any]) -> bytes:
    """The protobuf ``ExportLogsServiceRequest`` holding ``batch`` (the SDK's ``ReadableLogRecord``s),
    as OpenTelemetry's encoder writes it. Raises `Unsupported` for a value it does not write the
    same way.

    Example:
        >>> encode_logs_request([])
        b''
    """
    out: list[bytes] = []
    for resource, scopes in _group(batch).items():
        body: list[bytes] = [_cached(resource, _resource_head)]
        for scope, records in scopes.items():
            scope_body = [_cached(scope, _scope_head)]
            scope_body += [_field(b"\x12", _record(readable)) for readable in records]  # log_records = 2
            scope_body.append(_schema(scope.schema_url if scope is not None else None))
            body.append(_field(b"\x12", b"".join(scope_body)))  # ResourceLogs.scope_logs = 2
        body.append(_schema(resource.schema_url))
        out.append(_field(b"\x0a", b"".join(body)))  # ExportLogsServiceRequest.resource_logs = 1
    return b"".join(out)


def encode_logs_or_fallback(batch: Sequence[Any]) -> bytes | None:
    """`encode_logs_request`, or OpenTelemetry's encoder for a batch with a value it does not write
    (None when that cannot encode it either: the caller leaves it to the official exporter).

    Example:
        >>> encode_logs_or_fallback([])
        b''
    """
    try:
        return encode_logs_request(batch)
    except _NOT_WRITTEN:
        pass  # OpenTelemetry's encoder drops such an attribute, as the span encoder's fallback says
    except Exception:
        internal_error("the OTLP log encoder")  # a bug here: logged once (raised in tracesim's tests)
    from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs

    try:
        body: bytes = encode_logs(batch).SerializePartialToString()
    except Exception:
        return None
    return body
