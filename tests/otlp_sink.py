"""A scripted OTLP/HTTP endpoint on loopback: the edge the spool and backfill tests fake.

It decodes every request with the real OTLP protobuf types, so tests can check exactly which
spans arrived, how often and in what order.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler

from loopback_http import LoopbackHTTP, QuietHandler
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from tracesim.tracefile._sdk_spans import request_to_protobuf


class OtlpSink:
    """Answers POST /v1/traces with ``script`` status codes in turn, then ``status``."""

    def __init__(self) -> None:
        self.status = 200
        self.accept_json = False  # like Phoenix: 415 for OTLP/JSON
        self.script: list[int] = []
        self.reject: Callable[[list[str]], int | None] = lambda names: None
        self.requests: list[list[str]] = []  # span names per request, in arrival order
        self.span_ids: list[str] = []
        self.content_types: list[str] = []
        self.headers: list[dict[str, str]] = []
        self.bodies: list[bytes] = []
        self._lock = threading.Lock()
        self._http = LoopbackHTTP(self._handler())

    @property
    def url(self) -> str:
        return f"{self._http.base}/v1/traces"

    @property
    def delivered_names(self) -> list[str]:
        with self._lock:
            return [name for request in self.requests for name in request]

    def _answer(self, body: bytes, content_type: str) -> int:
        raw = body
        if content_type == "application/json":
            if not self.accept_json:
                with self._lock:
                    self.content_types.append(content_type)
                return 415
            body = request_to_protobuf(json.loads(body))
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
        names = [s.name for s in spans]
        with self._lock:
            self.content_types.append(content_type)
            status = self.script.pop(0) if self.script else self.status
            rejected = self.reject(names) if names else None
            status = rejected or status
            if status == 200:
                self.bodies.append(raw)
                if names:
                    self.requests.append(names)
                    self.span_ids.extend(s.span_id.hex() for s in spans)
            return status

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        sink = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path.split("?")[0] != "/v1/traces":  # metrics, logs: not taken, as MLflow answers
                    self.send_response(404)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                sink.headers.append({k.lower(): v for k, v in self.headers.items()})
                status = sink._answer(body, self.headers.get("Content-Type", ""))
                self.reply(status, "application/x-protobuf")

        return Handler

    def close(self) -> None:
        self._http.close()


def refused_url() -> str:
    """An OTLP/HTTP URL on 127.0.0.1 where nothing listens: connections are refused at once."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1/traces"
