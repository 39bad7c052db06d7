"""Hostile input for the command-line tests: trace lines, data rows and terminal payloads.

Every pathological line is written between two good lines, so a test can check that the good
spans still arrive and that the bad line is named (``FILE:2``).
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

from loopback_http import LoopbackHTTP, QuietHandler

TRACE_ID = "3d5e5a41160e97cc59c387360d4ea56f"
GOOD_NAMES = ("good-before", "good-after")


def span(name: Any = "bad", span_id: str = "2222222222222222", **fields: Any) -> dict[str, Any]:
    """One OTLP/JSON span, with ``fields`` replacing or adding keys."""
    body: dict[str, Any] = {
        "traceId": TRACE_ID,
        "spanId": span_id,
        "name": name,
        "kind": 1,
        "startTimeUnixNano": "1795359165886257793",
        "endTimeUnixNano": "1795359165886394161",
        "attributes": [{"key": "input.value", "value": {"stringValue": "hi"}}],
        "status": {},
    }
    body.update(fields)
    return body


def request(*spans: dict[str, Any], service: Any = "svc") -> dict[str, Any]:
    """An ``ExportTraceServiceRequest`` with ``spans`` under one resource and scope."""
    resource = {"attributes": [{"key": "service.name", "value": {"stringValue": service}}]}
    scope_spans = [{"scope": {"name": "t"}, "spans": list(spans)}]
    return {"resourceSpans": [{"resource": resource, "scopeSpans": scope_spans}]}


def line(obj: Any, **raw_numbers: str) -> str:
    """``obj`` as one JSON line; ``raw_numbers`` swap ``"@KEY@"`` strings for literal JSON text."""
    text = json.dumps(obj, ensure_ascii=False)
    for key, literal in raw_numbers.items():
        text = text.replace(f'"@{key}@"', literal)
    return text


def _attr(value: dict[str, Any]) -> dict[str, Any]:
    return request(span(attributes=[{"key": "x", "value": value}]))


def _nested(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"stringValue": "bottom"}
    for _ in range(levels):
        value = {"arrayValue": {"values": [value]}}
    return value


# Lines that are not OTLP/JSON: every reader must skip them with a warning naming the line.
BAD_LINES: dict[str, str] = {
    "deep-array": "[" * 100_000,
    "deep-object": '{"a":' * 100_000,
    "time-1e999": line(request(span(startTimeUnixNano="@T@")), T="1e999"),
    "time-NaN": line(request(span(startTimeUnixNano="@T@")), T="NaN"),
    "time-past-64-bits": line(request(span(endTimeUnixNano=str(2**64)))),
    "time-400-digits": line(request(span(startTimeUnixNano="1" + "0" * 400))),
    "time-negative": line(request(span(startTimeUnixNano=-5))),
    "name-number": line(request(span(name=5))),
    "name-missing": line(request({k: v for k, v in span().items() if k != "name"})),
    "spans-number": line({"resourceSpans": [{"scopeSpans": [{"spans": 5}]}]}),
    "resourceSpans-string": line({"resourceSpans": "x"}),
    "scope-string": line({"resourceSpans": [{"scopeSpans": [{"scope": "x", "spans": [span()]}]}]}),
    "attributes-string": line(request(span(attributes="x"))),
    "attribute-value-string": line(request(span(attributes=[{"key": "x", "value": "x"}]))),
    "attribute-key-number": line(request(span(attributes=[{"key": 5, "value": {"stringValue": "a"}}]))),
    "trace-id-not-hex": line(request(span(traceId="zz" * 16))),
    "span-id-short": line(request(span(spanId="abc"))),
    "parent-id-number": line(request(span(parentSpanId=5))),
    "kind-1e999": line(request(span(kind="@K@")), K="1e999"),
    "kind-string": line(request(span(kind="fast"))),
    "status-string": line(request(span(status="x"))),
    "status-message-number": line(request(span(status={"code": 2, "message": 5}))),
    "events-string": line(request(span(events="x"))),
    "event-name-number": line(request(span(events=[{"name": 5}]))),
    "link-number": line(request(span(links=[5]))),
    "bool-string": line(_attr({"boolValue": "false"})),
    "int-1e999": line(_attr({"intValue": "@I@"}), I="1e999"),
    "double-not-a-number": line(_attr({"doubleValue": "abc"})),
    "bytes-not-base64": line(_attr({"bytesValue": "!!!"})),
    "value-nested-40-deep": line(_attr(_nested(40))),
    "service-name-object": line(request(span(), service={"a": 1})),
    "top-level-list": "[1, 2]",
    "top-level-string": '"text"',
    "top-level-1e999": "1e999",
    "top-level-null": "null",
    "torn-middle-line": '{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "ab',
}

# Lines that are legal OTLP/JSON however odd: their span must be read and shown, not skipped.
ODD_LINES: dict[str, str] = {
    "double-1e999": line(_attr({"doubleValue": "@D@"}), D="1e999"),
    "double-NaN-string": line(_attr({"doubleValue": "NaN"})),
    "int-40-digits": line(_attr({"intValue": "9" * 40})),
    "lone-surrogate-name": json.dumps(request(span(name="\ud800x"))),  # written as the escape \ud800
    "nul-in-name": line(request(span(name="a\x00b"))),
    "bytes-input": line(request(span(attributes=[{"key": "input.value", "value": {"bytesValue": "aGk="}}]))),
    "end-before-start": line(request(span(endTimeUnixNano="1"))),
    "parent-is-itself": line(request(span(parentSpanId="2222222222222222"))),
    "kind-by-name": line(request(span(kind="SPAN_KIND_SERVER"))),
}


def good_line(name: str, span_id: str) -> str:
    """A plain valid line with one span."""
    return line(request(span(name, span_id=span_id)))


def sandwich(path: Path, middle: str) -> Path:
    """Write ``good-before``, ``middle``, ``good-after`` as three lines of ``path``."""
    before, after = good_line(GOOD_NAMES[0], "1111111111111111"), good_line(GOOD_NAMES[1], "3333333333333333")
    path.write_text(f"{before}\n{middle}\n{after}\n", encoding="utf-8")
    return path


# Strings that must never reach a terminal as they are.
TERMINAL_PAYLOADS: dict[str, str] = {
    "osc-title": "\x1b]0;pwned\x07",
    "clear-screen": "\x1b[2J",
    "fake-colour": "\x1b[31mred",
    "carriage-return": "safe\roverwritten",
    "c1-csi": "\x9b31m",
    "bidi-override": "abc\u202edef",
}
# Characters whose presence in output means a payload got through.
RAW_CONTROLS = ("\x1b", "\x07", "\r", "\x9b", "\u202e")

# Rich markup that must print as written, not as style or link.
MARKUP_PAYLOADS = ("[red]x[/red]", "[link=https://example.invalid]click[/link]", "[/]", "[bold")


def _refuse(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


class OtlpJsonSink:
    """A loopback OTLP/HTTP endpoint that takes OTLP/JSON and records the span names it got.

    ``answer`` (status, body) replaces the usual ``200 {}``: to see what the command prints
    when an endpoint answers with hostile text.
    """

    def __init__(self) -> None:
        self.names: list[str] = []
        self.answer: tuple[int, bytes] = (200, b"{}")
        self._lock = threading.Lock()
        self._http = LoopbackHTTP(self._handler(), poll_interval_s=0.05)

    @property
    def url(self) -> str:
        return f"{self._http.base}/v1/traces"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        sink = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                status, answer = sink.answer
                if status == 200:
                    try:
                        request = json.loads(body, parse_constant=_refuse)  # as strict as a collector
                    except ValueError as exc:
                        status, answer = 400, str(exc).encode()
                    else:
                        names = [
                            s["name"]
                            for rs in request["resourceSpans"]
                            for ss in rs["scopeSpans"]
                            for s in ss["spans"]
                        ]
                        with sink._lock:
                            sink.names.extend(names)
                self.reply(status, "text/plain", answer)

        return Handler

    def close(self) -> None:
        self._http.close()
