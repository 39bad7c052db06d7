"""Finished spans to one OTLP/JSON ``ExportTraceServiceRequest`` line, as the trace file holds it.

OpenTelemetry's JSON encoder (``opentelemetry-exporter-otlp-json-common``) builds a dataclass for
every span, attribute and value, turns the tree into dictionaries, and ``json.dumps`` writes
them: about 5 µs per attribute. `encode_json_line` writes the same text directly from the
``ReadableSpan``s (the tests compare the bytes with the official encoder's on random and real
spans), at a fraction of the CPU.

What it writes, as the official encoder and ``json.dumps(..., separators=(",", ":"))`` do: the
same keys in the same order, fields at their default (empty, zero, None) left out the same way,
64-bit integers as decimal strings, doubles as Python writes them with ``NaN``, ``Infinity`` and
``-Infinity`` as strings, bytes in base64, trace and span ids in hex, enums as numbers,
non-ASCII text escaped; spans grouped by resource, then by instrumentation scope, in order of
first appearance (equal resources are one group).

Anything it does not write raises `Unsupported`: a value whose type is not exactly ``str``,
``bool``, ``int``, ``float``, ``bytes``, ``None``, or a ``list``, ``tuple`` or ``dict`` of them
(subclasses such as an ``IntEnum`` included), a key that is not a ``str``, an ``int`` too long
for Python to write as text, a span without a context, a name, time or count of an unexpected
type. `encode_or_fallback` then hands that batch to the official encoder, which writes it as it
always did (dropping just the attribute whose type it cannot write), and says so once.

Example:
    >>> from opentelemetry.sdk.trace import ReadableSpan
    >>> from opentelemetry.trace import SpanContext
    >>> span = ReadableSpan(name="answer", context=SpanContext(1, 2, False), attributes={"n": 3})
    >>> encode_json_line([span])[:60]
    b'{"resourceSpans":[{"resource":{"attributes":[{"key":"telemet'
"""

from __future__ import annotations

import json
import logging
import math
import threading
from base64 import b64encode
from collections.abc import Callable, Mapping, Sequence
from json.encoder import encode_basestring_ascii
from types import MappingProxyType
from typing import Any

from opentelemetry.attributes import BoundedAttributes
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from tracesim._host_first import Slices
from tracesim._internal_errors import internal_error
from tracesim.exporters._otlp_encode import _group

__all__ = [
    "PIECE_CHARS",
    "Unsupported",
    "encode_json_line",
    "encode_json_pieces",
    "encode_or_fallback",
    "official_line",
    "pieces_or_fallback",
]

_logger = logging.getLogger("tracesim")
_text: Callable[[str], str] = encode_basestring_ascii  # json.dumps' own (C) string writer: '"..."'
_float_repr = float.__repr__  # what json.dumps writes for a finite float

_KINDS = {kind: str(kind.value + 1) for kind in SpanKind}  # the protobuf enum counts from UNSPECIFIED = 0
# Span.flags / Link.flags: bit 8, the parent's (the linked span's) remoteness is known; bit 9, remote.
_FLAGS = {False: '"flags":256', True: '"flags":768'}


class Unsupported(ValueError):
    """A value `encode_json_line` does not write as the official encoder would (see module)."""


def official_line(spans: Sequence[ReadableSpan]) -> bytes:
    """The line as OpenTelemetry's JSON encoder writes it (the reference `encode_json_line` follows).

    Example:
        >>> official_line([])
        b'{}\\n'
    """
    from opentelemetry.exporter.otlp.json.common.trace_encoder import encode_spans

    return (json.dumps(encode_spans(spans).to_dict(), separators=(",", ":")) + "\n").encode()


# ------------------------------------------------------------------ values and attributes

_keys: dict[str, str] = {}  # attribute key -> '{"key":"<key>","value":'; keys repeat from span to span
_KEYS_KEPT = 4096


def _key(key: object) -> str:
    if type(key) is not str:
        raise Unsupported(f"an attribute key of type {type(key).__name__}")
    head = '{"key":' + _text(key) + ',"value":' if key else '{"value":'  # an empty key is left out
    if len(_keys) >= _KEYS_KEPT:
        _keys.clear()  # many distinct keys (generated names): start over rather than grow
    _keys[key] = head
    return head


def _key_value(key: object, value: object) -> str:
    head = _keys.get(key) if type(key) is str else None
    if head is None:
        head = _key(key)
    if type(value) is str:  # the common case
        return head + '{"stringValue":' + _text(value) + "}}"
    return head + _value(value) + "}"


def _value(value: object) -> str:
    """The ``AnyValue`` object for ``value``."""
    kind = type(value)
    if kind is str:
        return '{"stringValue":' + _text(value) + "}"  # type: ignore[arg-type]
    if value is None:
        return "{}"
    if kind is bool:
        return '{"boolValue":true}' if value else '{"boolValue":false}'
    if kind is int:
        try:
            return '{"intValue":"' + str(value) + '"}'
        except ValueError:  # more digits than Python converts to text
            raise Unsupported("an int too long to write as text") from None
    if kind is float:
        number: float = value  # type: ignore[assignment]
        if math.isfinite(number):
            return '{"doubleValue":' + _float_repr(number) + "}"
        if number != number:
            return '{"doubleValue":"NaN"}'
        return '{"doubleValue":"Infinity"}' if number > 0 else '{"doubleValue":"-Infinity"}'
    if kind is bytes:
        return '{"bytesValue":"' + b64encode(value).decode() + '"}'  # type: ignore[arg-type]
    if kind is tuple or kind is list:
        items: Sequence[object] = value  # type: ignore[assignment]
        if not items:
            return '{"arrayValue":{}}'
        return '{"arrayValue":{"values":[' + ",".join([_value(item) for item in items]) + "]}}"
    if kind is dict:
        pairs: dict[object, object] = value  # type: ignore[assignment]
        if not pairs:
            return '{"kvlistValue":{}}'
        return '{"kvlistValue":{"values":[' + ",".join([_key_value(k, v) for k, v in pairs.items()]) + "]}}"
    raise Unsupported(f"a value of type {kind.__name__}")


def _attributes(attributes: Mapping[str, object] | None) -> str:
    """``,"attributes":[...]``, or nothing for no attributes."""
    if not attributes:
        return ""
    if type(attributes) is MappingProxyType or type(attributes) is BoundedAttributes:
        attributes = attributes.copy()  # a span's or an event's: a dict
    keys, text = _keys, _text
    pairs: list[str] = []
    add = pairs.append
    for key, value in attributes.items():  # `_key_value`, inlined for the common case
        head = keys.get(key)  # (a str subclass equal to a kept key is written as that key: the same text)
        if head is None:
            head = _key(key)
        if type(value) is str:
            add(head + '{"stringValue":' + text(value) + "}}")
        else:
            add(head + _value(value) + "}")
    return ',"attributes":[' + ",".join(pairs) + "]"


def _number(name: str, count: object) -> str:
    """``,"<name>":<count>`` for a count (a uint32 written as a number), nothing for 0."""
    if not count:
        return ""
    if type(count) is not int:
        raise Unsupported(f"a count of type {type(count).__name__}")
    return ',"' + name + '":' + str(count)


def _time(name: str, nanos: object) -> str:
    """``,"<name>":"<nanos>"`` (a fixed64 written as a string), nothing for 0 or None."""
    if not nanos:
        return ""
    if type(nanos) is not int:
        raise Unsupported(f"a time of type {type(nanos).__name__}")
    return ',"' + name + '":"' + str(nanos) + '"'


def _string(name: str, text: object) -> str:
    """``,"<name>":"<text>"``, nothing for an empty or None one."""
    if not text:
        return ""
    if type(text) is not str:
        raise Unsupported(f"a {name} of type {type(text).__name__}")
    return ',"' + name + '":' + _text(text)


# ------------------------------------------------------------------ spans


def _span(span: ReadableSpan) -> str:
    context = span.context
    if context is None:
        raise Unsupported("a span without a span context")
    parts = [
        '{"traceId":"',
        context.trace_id.to_bytes(16, "big").hex(),
        '","spanId":"',
        context.span_id.to_bytes(8, "big").hex(),
        '"',
    ]
    add = parts.append
    state = context.trace_state
    if state is not None:
        add(_string("traceState", ",".join([f"{k}={v}" for k, v in state.items()])))
    parent = span.parent
    if parent:
        add(',"parentSpanId":"' + parent.span_id.to_bytes(8, "big").hex() + '",')
        add(_FLAGS[bool(parent.is_remote)])
    else:
        add("," + _FLAGS[False])
    add(_string("name", span.name))
    kind = _KINDS.get(span.kind)
    if kind is None:
        raise Unsupported("a span kind outside SpanKind")
    add(',"kind":' + kind)
    add(_time("startTimeUnixNano", span.start_time))
    add(_time("endTimeUnixNano", span.end_time))
    add(_attributes(span.attributes))
    add(_number("droppedAttributesCount", span.dropped_attributes))
    events = span.events
    if events:
        add(',"events":[' + ",".join([_event(event) for event in events]) + "]")
    add(_number("droppedEventsCount", span.dropped_events))
    links = span.links
    if links:
        add(',"links":[' + ",".join([_link(link) for link in links]) + "]")
    add(_number("droppedLinksCount", span.dropped_links))
    status = span.status
    if status is not None:
        inside = (_string("message", status.description) + _number("code", status.status_code.value))[1:]
        add(',"status":{' + inside + "}")
    add("}")
    return "".join(parts)


def _event(event: Any) -> str:
    body = (
        _time("timeUnixNano", event.timestamp)
        + _string("name", event.name)
        + _attributes(event.attributes)
        + _number("droppedAttributesCount", event.dropped_attributes)
    )
    return "{" + body[1:] + "}"


def _link(link: Any) -> str:
    # The official encoder does not write a link's trace state; neither does this one.
    context = link.context
    encoded: str = (
        '{"traceId":"'
        + context.trace_id.to_bytes(16, "big").hex()
        + '","spanId":"'
        + context.span_id.to_bytes(8, "big").hex()
        + '"'
        + _attributes(link.attributes)
        + _number("droppedAttributesCount", link.dropped_attributes)
        + ","
        + _FLAGS[bool(context.is_remote)]
        + "}"
    )
    return encoded


# ------------------------------------------------------------------ resource and scope

_cache_lock = threading.Lock()
_heads: dict[int, tuple[object, str]] = {}  # id(resource or scope) -> (it, its encoded object)
_HEADS_KEPT = 64


def _cached(owner: object, encode: Callable[[Any], str]) -> str:
    """The encoding of an immutable resource or scope, kept while the object is (held here)."""
    hit = _heads.get(id(owner))
    if hit is not None and hit[0] is owner:
        return hit[1]
    encoded = encode(owner)
    with _cache_lock:
        if len(_heads) >= _HEADS_KEPT:
            _heads.clear()
        _heads[id(owner)] = (owner, encoded)
    return encoded


def _resource(resource: Any) -> str:
    return "{" + _attributes(resource.attributes)[1:] + "}"


def _scope(scope: Any) -> str:
    if scope is None:
        return "{}"
    body = _string("name", scope.name) + _string("version", scope.version) + _attributes(scope.attributes)
    return "{" + body[1:] + "}"


PIECE_CHARS = 1 << 16
"""About how much of a line one piece holds (64 KiB): a batch's line is written piece by piece."""


def encode_json_line(spans: Sequence[ReadableSpan]) -> bytes:
    """The OTLP/JSON ``ExportTraceServiceRequest`` line holding ``spans``, newline included.

    The bytes of `official_line`; raises `Unsupported` for a value it does not write (see module).

    Example:
        >>> encode_json_line([])
        b'{}\\n'
    """
    return b"".join(encode_json_pieces(spans))


def encode_json_pieces(spans: Sequence[ReadableSpan]) -> list[bytes]:
    """`encode_json_line`'s bytes as pieces of about `PIECE_CHARS`, joined they are the line.

    A batch of 512 scored spans is a line of about 2.4 MB. Joined in one piece it is several
    copies of that size made while holding the interpreter (about 6 ms here, enough to stall a
    host's request thread); in pieces, each copy is short and the file takes them one write at
    a time. Encoding offers the interpreter to the host's threads between spans (`Slices`).

    Example:
        >>> encode_json_pieces([])
        [b'{}\\n']
    """
    groups = _group(spans)
    if not groups:
        return [b"{}\n"]
    offer = Slices()
    pieces: list[bytes] = []
    buffer: list[str] = ['{"resourceSpans":[']
    size = 0

    def add(text: str) -> None:
        nonlocal size
        buffer.append(text)
        size += len(text)
        if size >= PIECE_CHARS:
            pieces.append("".join(buffer).encode("ascii"))
            buffer.clear()
            size = 0

    for r, (resource, scopes) in enumerate(groups.items()):
        add(("," if r else "") + '{"resource":' + _cached(resource, _resource) + ',"scopeSpans":[')
        for s, (scope, members) in enumerate(scopes.items()):
            add(("," if s else "") + '{"scope":' + _cached(scope, _scope) + ',"spans":[')
            for i, span in enumerate(members):
                offer()
                add(("," if i else "") + _span(span))
            add("]" + _string("schemaUrl", scope.schema_url if scope else None) + "}")
        add("]" + _string("schemaUrl", resource.schema_url) + "}")
    buffer.append("]}\n")
    pieces.append("".join(buffer).encode("ascii"))
    return pieces


# ------------------------------------------------------------------ with the official encoder behind

_said = threading.Event()
# What a value the encoder does not write raises: `Unsupported`, or an id beyond its bytes.
_NOT_WRITTEN = (Unsupported, OverflowError)


def encode_or_fallback(spans: Sequence[ReadableSpan]) -> bytes:
    """`encode_json_line`, or `official_line` for a batch with a value it does not write.

    What the official encoder cannot encode either raises as it always did.

    Example:
        >>> encode_or_fallback([])
        b'{}\\n'
    """
    return b"".join(pieces_or_fallback(spans))


def pieces_or_fallback(spans: Sequence[ReadableSpan]) -> list[bytes]:
    """`encode_json_pieces`, or `official_line` (one piece) for a batch with a value it does not write.

    Example:
        >>> pieces_or_fallback([])
        [b'{}\\n']
    """
    try:
        return encode_json_pieces(spans)
    except _NOT_WRITTEN as exc:
        if not _said.is_set():
            _said.set()
            why = str(exc) if isinstance(exc, Unsupported) else "an id beyond its bits"  # not the value
            _logger.info(
                "tracesim: a span holds a value tracesim's OTLP/JSON encoder does not write (%s); its batch "
                "is encoded by OpenTelemetry's encoder (said once)",
                why,
            )
    except Exception:
        internal_error("the OTLP/JSON encoder")  # a bug here: logged once (raised in tracesim's tests)
    return [official_line(spans)]
