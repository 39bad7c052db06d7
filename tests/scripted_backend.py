"""A scripted OTLP/HTTP backend on loopback that answers each path with a chosen status and body.

Where ``otlp_sink.OtlpSink`` fakes a trace endpoint by status code alone, this one answers
``/v1/traces``, ``/v1/metrics`` and ``/v1/logs`` each as told, with the body a real backend
sends (MLflow's JSON validation error, an HTML 404 page, Phoenix's 405), and decodes what it
accepted with the real OTLP protobuf types.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler

import pytest
from loopback_http import LoopbackHTTP, QuietHandler
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.logs.v1.logs_pb2 import LogRecord
from opentelemetry.proto.trace.v1.trace_pb2 import Span
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import SimpleLogRecordProcessor

import tracesim

# What real backends answered (measured, /work/issue27-research.md).
MLFLOW_MISSING_HEADER = (
    '{"detail":[{"type":"missing","loc":["header","x-mlflow-experiment-id"],'
    '"msg":"Field required","input":null}]}'
)
MLFLOW_UNKNOWN_EXPERIMENT = (
    '{"error_code":"RESOURCE_DOES_NOT_EXIST","message":"No Experiment with id=999 exists",'
    '"sqlstate":"KAM00","error_class":"RESOURCE_NOT_FOUND"}'
)
MLFLOW_NOT_FOUND_PAGE = (
    "<!doctype html>\n<html lang=en>\n<title>404 Not Found</title>\n<h1>Not Found</h1>\n"
    "<p>The requested URL was not found on the server. If you entered the URL manually please "
    "check your spelling and try again.</p>\n"
)


@dataclass(frozen=True)
class Reply:
    """One answer: status, body, content type."""

    status: int = 200
    body: str = ""
    content_type: str = "application/x-protobuf"
    headers: tuple[tuple[str, str], ...] = ()


OK = Reply()
JSON = "application/json"


class ScriptedBackend:
    """Answers POST <path> with ``script[path]`` replies in turn, then ``replies[path]`` (200 by default).

    ``with ScriptedBackend() as backend:`` closes it at the end of the block.
    """

    def __init__(self) -> None:
        self.replies: dict[str, Reply] = {}
        self.script: dict[str, list[Reply]] = {}
        self.calls: dict[str, int] = {}  # requests per path, answered or not
        self.headers: dict[str, list[dict[str, str]]] = {}  # request headers per path (lower-case names)
        self.spans: list[Span] = []  # spans of accepted trace requests, in arrival order
        self.span_requests: list[list[str]] = []  # span names per accepted trace request
        self.logs: list[LogRecord] = []  # log records of accepted log requests
        self.metric_requests = 0
        self.required_header: str | None = None  # like MLflow: 422 on /v1/traces without it
        self.max_spans: int | None = None  # 413 for a trace request with more spans
        self.traces_open = threading.Event()  # cleared: a trace request waits (a backend that hangs)
        self.traces_open.set()
        self.logs_open = threading.Event()  # the same for log requests
        self.logs_open.set()
        self.metrics_open = threading.Event()  # and for metric requests
        self.metrics_open.set()
        self._lock = threading.Lock()
        self._http = LoopbackHTTP(self._handler())

    @property
    def base(self) -> str:
        return self._http.base

    @property
    def traces_url(self) -> str:
        return self.base + "/v1/traces"

    def answer(self, path: str, reply: Reply) -> None:
        """From now on, answer ``path`` with ``reply``."""
        with self._lock:
            self.replies[path] = reply

    def count(self, path: str) -> int:
        with self._lock:
            return self.calls.get(path, 0)

    def span_names(self) -> list[str]:
        with self._lock:
            return [span.name for span in self.spans]

    def _reply(self, path: str, body: bytes, headers: dict[str, str]) -> Reply:
        with self._lock:
            self.calls[path] = self.calls.get(path, 0) + 1
            self.headers.setdefault(path, []).append(headers)
            queued = self.script.get(path)
            reply = queued.pop(0) if queued else self.replies.get(path, OK)
            if reply.status != 200:
                return reply
            if path == "/v1/traces":
                if self.required_header and self.required_header not in headers:
                    return Reply(
                        422,
                        MLFLOW_MISSING_HEADER.replace("x-mlflow-experiment-id", self.required_header),
                        JSON,
                    )
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                spans = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
                if self.max_spans is not None and len(spans) > self.max_spans:
                    return Reply(413, "Request Entity Too Large", "text/plain")
                self.spans.extend(spans)
                self.span_requests.append([s.name for s in spans])
            elif path == "/v1/logs":
                logs = ExportLogsServiceRequest()
                logs.ParseFromString(body)
                for resource in logs.resource_logs:
                    for scope in resource.scope_logs:
                        self.logs.extend(scope.log_records)
            elif path == "/v1/metrics":
                ExportMetricsServiceRequest().ParseFromString(body)
                self.metric_requests += 1
            return reply

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        backend = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                if self.path == "/v1/traces":
                    backend.traces_open.wait(60)
                elif self.path == "/v1/logs":
                    backend.logs_open.wait(60)
                elif self.path == "/v1/metrics":
                    backend.metrics_open.wait(60)
                reply = backend._reply(self.path, body, {k.lower(): v for k, v in self.headers.items()})
                self.reply(reply.status, reply.content_type, reply.body.encode(), reply.headers)

        return Handler

    def open_all(self) -> None:
        """Stop holding requests (traces, logs, metrics)."""
        self.traces_open.set()
        self.logs_open.set()
        self.metrics_open.set()

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> ScriptedBackend:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def emit_logs(exporter: object, times: int) -> None:
    """Send ``times`` log records (``record 0``, ``record 1``...) through ``exporter``, one export each."""
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(SimpleLogRecordProcessor(exporter))  # type: ignore[arg-type]
    logger = provider.get_logger("test")
    for i in range(times):
        logger.emit(body=f"record {i}", event_name="test.event")
    provider.shutdown()


@pytest.fixture
def scripted_backend() -> Iterator[ScriptedBackend]:
    """A `ScriptedBackend` for one test; at its end, held requests go and tracesim shuts down
    before the server does (the last exports reach it)."""
    with ScriptedBackend() as server:
        try:
            yield server
        finally:
            server.open_all()
            tracesim.shutdown(10)
