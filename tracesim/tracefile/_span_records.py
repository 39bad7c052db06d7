"""A decoded, read-only view of the spans in OTLP/JSON trace requests.

`tracesim show`, `tracesim report`, `tracesim replay`, the console exporter and tests all read
spans through this one decoder, so there is a single place that knows the OTLP/JSON encoding
rules (hex ids, integer enums, ``key``/``value`` attribute lists, 64-bit integers as strings).

Trace files are input from outside: the decoder checks the type and range of every field it
reads and raises `ValueError` naming the field for anything that is not OTLP/JSON (a name that
is a number, ids that are not hex, times past 64 bits, a list where an object belongs, values
nested more than `MAX_DEPTH` levels), so a reader can skip that line with a warning and go
on. Unknown fields are ignored, as OTLP asks. Lone UTF-16 surrogates, which JSON can express
but no UTF-8 output can hold, are kept as visible ``\\udXXX`` text.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "EventRecord",
    "LinkRecord",
    "SpanRecord",
    "decode_attributes",
    "decode_value",
    "hex_id",
    "kind_code",
    "span_time",
    "spans_from_request",
    "status_code",
]

MAX_DEPTH = 32
"""How deeply ``arrayValue``/``kvlistValue`` may nest; deeper values are refused, not recursed into."""

_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}
_KIND = {0: "UNSPECIFIED", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
# Protobuf's JSON mapping also allows enums by name.
_STATUS_NAMES = {f"STATUS_CODE_{name}": code for code, name in _STATUS.items()}
_KIND_NAMES = {f"SPAN_KIND_{name}": code for code, name in _KIND.items()}
_HEX = {8: re.compile(r"[0-9a-fA-F]{16}"), 16: re.compile(r"[0-9a-fA-F]{32}")}
_INTEGER = re.compile(r"-?[0-9]{1,4300}")  # 4300: the most digits int() converts
_SURROGATE = re.compile("[\ud800-\udfff]")
_UINT64 = 1 << 64
_INT32 = 1 << 31


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
    Python values (``str``, ``int``, ``float``, ``bool``, ``bytes``, lists, dicts).

    Example:
        >>> from tracesim.tracefile import load_spans
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


# -- field checks: each returns the decoded value or raises ValueError naming the field ---------


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "an array" if isinstance(value, list) else "an object" if isinstance(value, Mapping) else "?"


# The checks run for every field of every span, so each tests the exact JSON type first:
# ``type(x) is dict`` costs a fraction of ``isinstance(x, Mapping)``.


def _object(value: Any, what: str) -> Mapping[str, Any]:
    if type(value) is dict:
        return value
    if value is None:  # proto3 JSON: null is the default value
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{what} must be a JSON object, got {_json_type(value)}")
    return value


def _array(value: Any, what: str) -> list[Any]:
    if type(value) is list:
        return value
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{what} must be a JSON array, got {_json_type(value)}")
    return value


def _text(value: Any, what: str, default: str | None = None) -> str:
    if type(value) is not str:
        if value is None and default is not None:
            return default
        if not isinstance(value, str):
            raise ValueError(f"{what} must be a string, got {_json_type(value)}")
    if value.isascii() or not _SURROGATE.search(value):
        return value
    return _SURROGATE.sub(lambda m: f"\\u{ord(m[0]):04x}", value)


def _integer(
    value: Any, what: str, low: int | None = None, high: int | None = None, default: int | None = None
) -> int:
    """An integer in ``[low, high)``: a JSON number, or a decimal string as OTLP/JSON writes 64-bit ints."""
    if type(value) is str and value.isdigit() and value.isascii():  # how OTLP/JSON writes times
        number = int(value)
    elif value is None and default is not None:
        return default
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif (isinstance(value, str) and _INTEGER.fullmatch(value)) or (
        isinstance(value, float) and value.is_integer()  # False for inf and NaN
    ):
        number = int(value)
    else:
        raise ValueError(f"{what} must be an integer, got {_json_type(value)}")
    if (low is not None and number < low) or (high is not None and number >= high):
        raise ValueError(f"{what} is out of range")
    return number


def _enum(value: Any, what: str, names: Mapping[str, int]) -> int:
    if isinstance(value, str) and value in names:
        return names[value]
    return _integer(value, what, -_INT32, _INT32, default=0)


def kind_code(value: Any) -> int:
    """A span's ``kind`` as its OTLP number (``2`` or ``"SPAN_KIND_SERVER"`` → 2; missing → 0)."""
    return _enum(value, "kind", _KIND_NAMES)


def status_code(value: Any) -> int:
    """A status ``code`` as its OTLP number (``2`` or ``"STATUS_CODE_ERROR"`` → 2; missing → 0)."""
    return _enum(value, "status.code", _STATUS_NAMES)


def hex_id(value: Any, size: int, what: str) -> str:
    """A trace id (``size`` 16) or span id (``size`` 8) as lower-case hex.

    Example:
        >>> hex_id("00F067AA0BA902B7", 8, "spanId")
        '00f067aa0ba902b7'
    """
    if not isinstance(value, str) or not _HEX[size].fullmatch(value):
        raise ValueError(f"{what} must be {2 * size} hex digits, got {_json_type(value)}")
    return value.lower()


def span_time(value: Any, what: str, default: int | None = None) -> int:
    """A ``*UnixNano`` time: an unsigned 64-bit integer, as a number or a decimal string."""
    return _integer(value, what, 0, _UINT64, default)


def _double(value: Any) -> float:
    # OTLP/JSON writes NaN and the infinities as strings; a JSON number past the double range
    # (1e999) arrives as an infinity already.
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"doubleValue must be a number, got {_json_type(value)}")
    try:
        return float(value)
    except OverflowError:  # an integer literal with hundreds of digits
        raise ValueError("doubleValue is out of range") from None
    except ValueError:
        raise ValueError("doubleValue must be a number, got a string that is not one") from None


def _bytes(value: Any) -> bytes:
    text = _text(value, "bytesValue").rstrip("=")
    # Protobuf's JSON mapping accepts standard and URL-safe base64, padded or not.
    text = text.replace("-", "+").replace("_", "/")
    try:
        return base64.b64decode(text + "=" * (-len(text) % 4), validate=True)
    except ValueError as exc:  # binascii.Error
        raise ValueError(f"bytesValue is not base64 ({exc})") from None


# -- values and attributes ------------------------------------------------------------------


def decode_value(value: Any, _depth: int = 0) -> Any:
    """Decode one OTLP/JSON ``AnyValue`` into a plain Python value.

    Raises:
        ValueError: the value is not an ``AnyValue`` (wrong types, out of range, nested more
            than `MAX_DEPTH` levels).

    Example:
        >>> decode_value({"intValue": "42"}), decode_value({"doubleValue": "NaN"})
        (42, nan)
        >>> decode_value({"arrayValue": {"values": [{"stringValue": "a"}, {"boolValue": True}]}})
        ['a', True]
        >>> decode_value({"intValue": 1.5})
        Traceback (most recent call last):
        ValueError: intValue must be an integer, got a number
    """
    obj = _object(value, "an attribute value")
    if "stringValue" in obj:
        return _text(obj["stringValue"], "stringValue", default="")
    if "boolValue" in obj:
        flag = obj["boolValue"]
        if not isinstance(flag, bool):
            raise ValueError(f"boolValue must be true or false, got {_json_type(flag)}")
        return flag
    if "intValue" in obj:
        # Not range-checked: the SDK writes a Python int past 64 bits as it is, and refusing
        # the whole span for one attribute would lose more than it protects.
        return _integer(obj["intValue"], "intValue")
    if "doubleValue" in obj:
        return _double(obj["doubleValue"])
    if "arrayValue" in obj or "kvlistValue" in obj:
        if _depth >= MAX_DEPTH:
            raise ValueError(f"an attribute value is nested more than {MAX_DEPTH} levels deep")
        if "arrayValue" in obj:
            values = _array(_object(obj["arrayValue"], "arrayValue").get("values"), "arrayValue.values")
            return [decode_value(v, _depth + 1) for v in values]
        return decode_attributes(_object(obj["kvlistValue"], "kvlistValue").get("values"), _depth + 1)
    if "bytesValue" in obj:
        return _bytes(obj["bytesValue"])
    return None  # an empty AnyValue


def decode_attributes(items: Any, _depth: int = 0) -> dict[str, Any]:
    """Decode an OTLP/JSON ``key``/``value`` list into a dict.

    Raises:
        ValueError: the list or one of its entries is not OTLP/JSON.

    Example:
        >>> decode_attributes([{"key": "user.id", "value": {"stringValue": "ann"}}])
        {'user.id': 'ann'}
    """
    out: dict[str, Any] = {}
    for item in _array(items, "attributes"):
        entry = _object(item, "an attribute")
        key = _text(entry.get("key"), "an attribute key")
        out[key] = decode_value(entry.get("value"), _depth)
    return out


# -- requests and spans ---------------------------------------------------------------------


def spans_from_request(request: Any) -> Iterator[SpanRecord]:
    """Yield every span of one decoded ``ExportTraceServiceRequest``.

    Raises:
        ValueError: the request, or a span in it, is not OTLP/JSON; the message names the
            span and the field. Spans before it have been yielded already, so a reader that
            wants a line whole or not at all collects the spans first (``list(...)``).

    Example:
        >>> span = {"traceId": "ab" * 16, "spanId": "cd" * 8, "name": "answer",
        ...         "startTimeUnixNano": "1000", "endTimeUnixNano": "3000"}
        >>> request = {"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}
        >>> [(s.name, s.duration_s) for s in spans_from_request(request)]
        [('answer', 2e-06)]
        >>> list(spans_from_request({"resourceSpans": [{"scopeSpans": [{"spans": [{**span, "name": 5}]}]}]}))
        Traceback (most recent call last):
        ValueError: span 1: name must be a string, got a number
    """
    if not isinstance(request, Mapping):
        raise ValueError(f"the request must be a JSON object, got {_json_type(request)}")
    number = 0
    for resource_spans in _array(request.get("resourceSpans"), "resourceSpans"):
        resource_spans = _object(resource_spans, "resourceSpans[]")
        resource_obj = _object(resource_spans.get("resource"), "resource")
        resource = decode_attributes(resource_obj.get("attributes"))
        for scope_spans in _array(resource_spans.get("scopeSpans"), "scopeSpans"):
            scope_spans = _object(scope_spans, "scopeSpans[]")
            scope = _text(_object(scope_spans.get("scope"), "scope").get("name"), "scope.name", default="")
            for span in _array(scope_spans.get("spans"), "spans"):
                number += 1
                try:
                    record = _decode_span(_object(span, "a span"), resource, scope)
                except ValueError as exc:
                    raise ValueError(f"span {number}: {exc}") from None
                yield record


def _decode_span(span: Mapping[str, Any], resource: Mapping[str, Any], scope: str) -> SpanRecord:
    status = _object(span.get("status"), "status")
    parent = span.get("parentSpanId")
    return SpanRecord(
        trace_id=hex_id(span.get("traceId"), 16, "traceId"),
        span_id=hex_id(span.get("spanId"), 8, "spanId"),
        parent_span_id=hex_id(parent, 8, "parentSpanId") if parent else None,
        name=_text(span.get("name"), "name"),
        kind=_KIND.get(kind_code(span.get("kind")), "UNSPECIFIED"),
        start_time_unix_nano=span_time(span.get("startTimeUnixNano"), "startTimeUnixNano"),
        end_time_unix_nano=span_time(span.get("endTimeUnixNano"), "endTimeUnixNano"),
        attributes=decode_attributes(span.get("attributes")),
        events=tuple(_event(e) for e in _array(span.get("events"), "events")),
        links=tuple(_link(link) for link in _array(span.get("links"), "links")),
        status_code=_STATUS.get(status_code(status.get("code")), "UNSET"),
        status_message=_text(status.get("message"), "status.message", default=""),
        resource=resource,
        scope=scope,
    )


def _event(value: Any) -> EventRecord:
    event = _object(value, "an event")
    return EventRecord(
        _text(event.get("name"), "event name"),
        span_time(event.get("timeUnixNano"), "event timeUnixNano", default=0),
        decode_attributes(event.get("attributes")),
    )


def _link(value: Any) -> LinkRecord:
    link = _object(value, "a link")
    return LinkRecord(
        hex_id(link.get("traceId"), 16, "link traceId"),
        hex_id(link.get("spanId"), 8, "link spanId"),
        decode_attributes(link.get("attributes")),
    )
