"""Finished spans to the body of an OTLP/HTTP request (``ExportTraceServiceRequest``, protobuf).

OpenTelemetry's encoder builds a protobuf message object for every span, attribute and value,
then serializes the tree: most of an export's CPU. `encode_request` writes the same wire bytes
directly, field by field, from the ``ReadableSpan``s: the message a collector parses is the one
the official exporter sends (the tests compare them on random and real spans), at about a
quarter of the instructions.

What it writes, as OpenTelemetry's encoder does: spans grouped by resource, then by
instrumentation scope, in order of first appearance (equal resources are one group); every
attribute value type of the OpenTelemetry API (``str``, ``bool``, ``int``, ``float``, ``bytes``,
sequences of them, and the ``None``, mapping and nested values the encoder also accepts); the
span kind, status, parent span id, W3C trace state, the flags saying whether the parent (or a
link's span) is remote, events and links with their attributes, and the dropped counts.

A value it does not write the same way (an ``int`` beyond 64 bits, a string that is not valid
UTF-8, a type of no known encoding) raises `Unsupported`; `encode_or_fallback` then hands that
batch to OpenTelemetry's encoder, which drops just that attribute as it always does, and says
so once.

Example:
    >>> from opentelemetry.sdk.trace import TracerProvider
    >>> from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    >>> from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    >>> memory = InMemorySpanExporter()
    >>> provider = TracerProvider()
    >>> provider.add_span_processor(SimpleSpanProcessor(memory))
    >>> with provider.get_tracer("doc").start_as_current_span("answer", attributes={"n": 3}):
    ...     pass
    >>> body = encode_request(memory.get_finished_spans())
    >>> from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    >>> ExportTraceServiceRequest.FromString(body).resource_spans[0].scope_spans[0].spans[0].name
    'answer'
"""

from __future__ import annotations

import logging
import struct
import threading
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from tracesim._host_first import Slices
from tracesim._internal_errors import internal_error

__all__ = ["Unsupported", "encode_or_fallback", "encode_request"]

_logger = logging.getLogger("tracesim")

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT64 = (1 << 64) - 1
_UINT32_MAX = (1 << 32) - 1
_pack_double = struct.Struct("<d").pack
_pack_fixed64 = struct.Struct("<Q").pack
_pack_fixed32 = struct.Struct("<I").pack
_ONE_BYTE = tuple(bytes((n,)) for n in range(128))

# Field tags (field number << 3 | wire type) of opentelemetry/proto/trace/v1/trace.proto and
# common/v1/common.proto; wire types: 0 varint, 1 fixed64, 2 length-delimited, 5 fixed32.
_SPAN_ATTRIBUTE = b"\x4a"  # Span.attributes = 9
_EVENT_ATTRIBUTE = b"\x1a"  # Span.Event.attributes = 3
_LINK_ATTRIBUTE = b"\x22"  # Span.Link.attributes = 4
_SCOPE_ATTRIBUTE = b"\x1a"  # InstrumentationScope.attributes = 3
_RESOURCE_ATTRIBUTE = b"\x0a"  # Resource.attributes = 1
_IN_LIST = b"\x0a"  # KeyValueList.values = 1, ArrayValue.values = 1

# Span.flags (16, fixed32): bit 8 says whether the parent's remoteness is known (the SDK always
# knows), bit 9 that the parent (for a link: the linked span) is remote.
_HAS_IS_REMOTE, _IS_REMOTE = 0x100, 0x200
_SPAN_FLAGS = {False: b"\x85\x01" + _pack_fixed32(_HAS_IS_REMOTE), True: b"\x85\x01" + _pack_fixed32(0x300)}
_LINK_FLAGS = {False: b"\x35" + _pack_fixed32(_HAS_IS_REMOTE), True: b"\x35" + _pack_fixed32(0x300)}
# Span.kind (6): the protobuf enum counts from SPAN_KIND_UNSPECIFIED = 0.
_KINDS = {kind: b"\x30" + bytes((kind.value + 1,)) for kind in SpanKind}


class Unsupported(ValueError):
    """A value `encode_request` does not write as OpenTelemetry's encoder would (see module)."""


def _varint(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]
    if n < 0x4000:
        return bytes(((n & 0x7F) | 0x80, n >> 7))
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _field(tag: bytes, body: bytes) -> bytes:
    """A length-delimited field: tag, length, body."""
    return tag + _varint(len(body)) + body


_keys: dict[str, bytes] = {}  # attribute key -> its KeyValue.key field; keys repeat from span to span
_KEYS_KEPT = 4096


def _key(key: str) -> bytes:
    """``KeyValue.key`` (1) and the tag of ``KeyValue.value`` (2), which follows it."""
    encoded = _field(b"\x0a", key.encode()) + b"\x12"
    if len(_keys) >= _KEYS_KEPT:
        _keys.clear()  # many distinct keys (generated names): start over rather than grow
    _keys[key] = encoded
    return encoded


def _key_value(tag: bytes, key: str, value: object) -> bytes:
    """One attribute: field ``tag`` holding ``KeyValue{key: 1, value: 2}``."""
    prefix = _keys.get(key) or _key(key)  # the key's field and the value's tag
    if type(value) is str:  # the common case, written without the intermediate AnyValue bytes
        text = value.encode()
        size = len(text)
        if size < 0x7E:  # every length below in one byte
            body_size = len(prefix) + size + 3
            if body_size < 0x80:
                return b"".join(
                    (tag, _ONE_BYTE[body_size], prefix, _ONE_BYTE[size + 2], b"\x0a", _ONE_BYTE[size], text)
                )
        value_size = 1 + len(_varint(size)) + size
        body_size = len(prefix) + len(_varint(value_size)) + value_size
        return b"".join((tag, _varint(body_size), prefix, _varint(value_size), b"\x0a", _varint(size), text))
    if type(value) is float:  # scores, durations: AnyValue.double_value = 4 (fixed64), 9 bytes
        return b"".join((tag, _varint(len(prefix) + 10), prefix, b"\x09\x21", _pack_double(value)))
    any_value = _any_value(value)
    size = len(any_value)
    return b"".join((tag, _varint(len(prefix) + len(_varint(size)) + size), prefix, _varint(size), any_value))


def _any_value(value: object) -> bytes:
    """The body of ``AnyValue`` for ``value``, in the order of tests of OpenTelemetry's encoder."""
    if value is None:
        return b""
    if isinstance(value, bool):
        return b"\x10\x01" if value else b"\x10\x00"
    if isinstance(value, str):
        return _field(b"\x0a", value.encode())
    if isinstance(value, int):
        if not _INT64_MIN <= value <= _INT64_MAX:
            raise Unsupported("an int beyond 64 bits")
        return b"\x18" + _varint(value & _UINT64)
    if isinstance(value, float):
        return b"\x21" + _pack_double(value)
    if isinstance(value, bytes):
        return _field(b"\x3a", value)
    if isinstance(value, Sequence):
        items = b"".join([_field(_IN_LIST, _any_value(item)) for item in value])
        return _field(b"\x2a", items)
    if isinstance(value, Mapping):
        pairs = b"".join([_key_value(_IN_LIST, str(k), v) for k, v in value.items()])
        return _field(b"\x32", pairs)
    raise Unsupported(f"a value of type {type(value).__name__}")


_pairs: dict[tuple[bytes, str, str | bool], bytes] = {}
"""(field tag, key, value) -> the encoded attribute, for short strings and booleans: most of a
span's attributes repeat from span to span (mime types, kinds, names, an evaluator's name,
status, label and pass/fail on each result). Measured on a scored span with 45 attributes (18
on the span, 9 on each of 3 result events): 52.6 -> 37-39 µs of CPU to encode it (best of 31
encodes of 512 spans, with the float path below)."""
_PAIRS_KEPT = 4096
_PAIR_CHARS = 64  # longer values (inputs, outputs, explanations) seldom repeat


def _attributes(tag: bytes, attributes: Mapping[str, object] | None, parts: list[bytes]) -> None:
    if attributes:
        if type(attributes) is MappingProxyType:  # a span's: its copy is a dict, iterated without locks
            attributes = attributes.copy()
        add = parts.append
        pairs = _pairs
        for key, value in attributes.items():
            kind = type(value)
            # Looked up only for str and bool values, which are what is kept: True never finds an
            # entry of 1 (equal, with the same hash), and "1" never one of 1.
            if (kind is str and len(value) <= _PAIR_CHARS) or kind is bool:  # type: ignore[arg-type]
                entry = (tag, key, value)
                encoded = pairs.get(entry)  # type: ignore[arg-type]
                if encoded is None:
                    encoded = _key_value(tag, key, value)
                    if len(pairs) >= _PAIRS_KEPT:
                        pairs.clear()  # many distinct values: start over rather than grow
                    pairs[entry] = encoded  # type: ignore[index]
                add(encoded)
            else:
                add(_key_value(tag, key, value))


def _count(tag: bytes, count: int) -> bytes:
    """A uint32 field (the dropped counts); 0, the default, is not written."""
    if not count:
        return b""
    if not 0 < count <= _UINT32_MAX:
        raise Unsupported("a dropped count beyond 32 bits")
    return tag + _varint(count)


def _span(span: ReadableSpan, parts: list[bytes]) -> None:
    """Append the fields of ``Span`` in field-number order."""
    add = parts.append
    context = span.context
    if context is None:
        raise Unsupported("a span without a span context")
    add(b"\x0a\x10" + context.trace_id.to_bytes(16, "big"))
    add(b"\x12\x08" + context.span_id.to_bytes(8, "big"))
    state = context.trace_state
    if state:
        add(_field(b"\x1a", ",".join([f"{k}={v}" for k, v in state.items()]).encode()))
    parent = span.parent
    if parent:
        add(b"\x22\x08" + parent.span_id.to_bytes(8, "big"))
    name = span.name
    if name:
        add(_field(b"\x2a", name.encode()))
    kind = _KINDS.get(span.kind)
    if kind is None:
        raise Unsupported(f"a span kind of {span.kind!r}")
    add(kind)
    start, end = span.start_time, span.end_time
    if start:
        add(b"\x39" + _pack_fixed64(start))
    if end:
        add(b"\x41" + _pack_fixed64(end))
    _attributes(_SPAN_ATTRIBUTE, span.attributes, parts)
    dropped = span.dropped_attributes
    if dropped:
        add(_count(b"\x50", dropped))
    events = span.events
    if events:
        for event in events:
            add(_field(b"\x5a", _event(event)))
    dropped = span.dropped_events  # events over the limit are dropped even when none is kept
    if dropped:
        add(_count(b"\x60", dropped))
    links = span.links
    if links:
        for link in links:
            add(_field(b"\x6a", _link(link)))
    dropped = span.dropped_links
    if dropped:
        add(_count(b"\x70", dropped))
    status = span.status
    if status is not None:
        code, message = status.status_code.value, status.description
        add(_field(b"\x7a", _status(code, message)) if message else _STATUS[code])
    add(_SPAN_FLAGS[bool(parent and parent.is_remote)])


def _event(event: Any) -> bytes:
    parts = []
    if event.timestamp:
        parts.append(b"\x09" + _pack_fixed64(event.timestamp))
    if event.name:
        parts.append(_field(b"\x12", event.name.encode()))
    _attributes(_EVENT_ATTRIBUTE, event.attributes, parts)
    parts.append(_count(b"\x20", event.dropped_attributes))
    return b"".join(parts)


def _link(link: Any) -> bytes:
    # OpenTelemetry's encoder does not write a link's trace state; neither does this one.
    context = link.context
    parts = [
        b"\x0a\x10" + context.trace_id.to_bytes(16, "big"),
        b"\x12\x08" + context.span_id.to_bytes(8, "big"),
    ]
    _attributes(_LINK_ATTRIBUTE, link.attributes, parts)
    parts.append(_count(b"\x28", link.dropped_attributes))
    parts.append(_LINK_FLAGS[bool(context.is_remote)])
    return b"".join(parts)


_STATUS = {code: b"\x7a\x02\x18" + bytes((code,)) for code in (1, 2)} | {0: b"\x7a\x00"}  # no message


def _status(code: int, message: str | None) -> bytes:
    body = _field(b"\x12", message.encode()) if message else b""
    return body + b"\x18" + _varint(code) if code else body


# ------------------------------------------------------------------ resource and scope

_cache_lock = threading.Lock()
_heads: dict[int, tuple[object, bytes]] = {}  # id(resource or scope) -> (it, its encoded head)
_HEADS_KEPT = 64


def _cached(owner: object, encode: Any) -> bytes:
    """The encoding of an immutable resource or scope, kept while the object is (held here)."""
    hit = _heads.get(id(owner))
    if hit is not None and hit[0] is owner:
        return hit[1]
    encoded: bytes = encode(owner)
    with _cache_lock:
        if len(_heads) >= _HEADS_KEPT:
            _heads.clear()
        _heads[id(owner)] = (owner, encoded)
    return encoded


def _resource_head(resource: Any) -> bytes:
    """``ResourceSpans.resource`` (field 1) for ``resource``."""
    parts: list[bytes] = []
    _attributes(_RESOURCE_ATTRIBUTE, resource.attributes, parts)
    return _field(b"\x0a", b"".join(parts))


def _scope_head(scope: Any) -> bytes:
    """``ScopeSpans.scope`` (field 1) for ``scope``."""
    parts: list[bytes] = []
    if scope is not None:
        if scope.name:
            parts.append(_field(b"\x0a", scope.name.encode()))
        if scope.version:
            parts.append(_field(b"\x12", scope.version.encode()))
        _attributes(_SCOPE_ATTRIBUTE, scope.attributes, parts)
    return _field(b"\x0a", b"".join(parts))


def _schema(url: str | None) -> bytes:
    """The ``schema_url`` field (3) of ``ResourceSpans`` and ``ScopeSpans``."""
    return _field(b"\x1a", url.encode()) if url else b""


# ------------------------------------------------------------------ the request


Groups = dict[Any, dict[Any, list[ReadableSpan]]]


def _group(spans: Sequence[ReadableSpan]) -> Groups:
    """Resource -> scope -> spans, as OpenTelemetry's encoder groups them (by equality).

    A resource's equality hashes its attributes as JSON: looked up once per distinct object,
    not once per span.
    """
    groups: Groups = {}
    same: dict[tuple[int, int], list[ReadableSpan]] = {}  # by identity: the usual case
    for span in spans:
        resource, scope = span.resource, span.instrumentation_scope or None
        found = same.get((id(resource), id(scope)))
        if found is None:
            scopes = groups.get(resource)
            if scopes is None:
                scopes = groups[resource] = {}
            found = scopes.get(scope)
            if found is None:
                found = scopes[scope] = []
            same[(id(resource), id(scope))] = found
        found.append(span)
    return groups


def encode_request(spans: Sequence[ReadableSpan]) -> bytes:
    """The protobuf ``ExportTraceServiceRequest`` holding ``spans``, as OpenTelemetry's encoder writes it.

    Raises `Unsupported` for a value it does not write the same way (see module).

    Example:
        >>> encode_request([])
        b''
    """
    out: list[bytes] = []
    for resource, scopes in _group(spans).items():
        head = len(out)
        out.append(b"")  # ResourceSpans' tag and length, once its size is known
        size = len(_add(out, _cached(resource, _resource_head)))
        for scope, members in scopes.items():
            size += _scope_spans(scope, members, out)
        size += len(_add(out, _schema(resource.schema_url)))
        out[head] = b"\x0a" + _varint(size)
        # (the request's one field: resource_spans = 1)
    return b"".join(out)


def _add(out: list[bytes], part: bytes) -> bytes:
    out.append(part)
    return part


def _scope_spans(scope: Any, spans: list[ReadableSpan], out: list[bytes]) -> int:
    """Append one ``ScopeSpans`` (field 2 of ``ResourceSpans``); return the bytes appended."""
    head = len(out)
    out.append(b"")
    size = len(_add(out, _cached(scope, _scope_head)))
    offer = Slices()  # the host's threads go first (see tracesim._host_first)
    for span in spans:
        offer()
        parts: list[bytes] = []
        _span(span, parts)
        span_size = sum(map(len, parts))
        prefix = b"\x12" + _varint(span_size)
        out.append(prefix)
        out.extend(parts)
        size += len(prefix) + span_size
    size += len(_add(out, _schema(scope.schema_url if scope is not None else None)))
    prefix = b"\x12" + _varint(size)
    out[head] = prefix
    return len(prefix) + size


# ------------------------------------------------------------------ with the official encoder behind

_said = threading.Event()
# What a value the encoder does not write raises: `Unsupported`, a string with lone surrogates, an
# id beyond its bytes, a time beyond 64 bits.
_NOT_WRITTEN = (Unsupported, UnicodeEncodeError, OverflowError, struct.error)


def encode_or_fallback(spans: Sequence[ReadableSpan]) -> bytes | None:
    """`encode_request`, or OpenTelemetry's encoder for a batch with a value it does not write.

    None when OpenTelemetry's encoder cannot encode the batch either: the caller leaves it to
    the official exporter, which says so in its own words.

    Example:
        >>> encode_or_fallback([])
        b''
    """
    try:
        return encode_request(spans)
    except _NOT_WRITTEN as exc:
        if not _said.is_set():
            _said.set()
            why = exc.reason if isinstance(exc, UnicodeEncodeError) else str(exc)  # not the value itself
            _logger.info(
                "tracesim: a span holds a value tracesim's OTLP encoder does not write (%s); its batch is "
                "encoded by OpenTelemetry's encoder, which drops such an attribute (said once)",
                why,
            )
    except Exception:
        internal_error("the OTLP encoder")  # a bug here: logged once (raised in tracesim's tests)
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    try:
        body: bytes = encode_spans(spans).SerializePartialToString()
    except Exception:
        return None
    return body
