"""Pieces the benchmarks share: a discarding exporter, a local OTLP/HTTP sink, timers, RSS."""

from __future__ import annotations

import gzip
import multiprocessing
import os
import socket
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult


class Discard(SpanExporter):
    """Counts spans and drops them: measures the SDK, not a transport."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


@dataclass(frozen=True)
class Sample:
    """One timed repeat, per call: process CPU up to the end of the flush (every thread's
    work, the export thread's included), the caller's wall time and the caller thread's CPU
    time for the calls alone (before the flush)."""

    cpu_us: float
    wall_us: float
    thread_us: float


def timed(calls: int, run: Callable[[], object], flush: Callable[[], object]) -> Sample:
    """Time ``run`` (which makes ``calls`` calls), then ``flush``; see `Sample`."""
    cpu, wall, thread = time.process_time(), time.perf_counter(), time.thread_time()
    run()
    wall, thread = time.perf_counter() - wall, time.thread_time() - thread
    flush()
    cpu = time.process_time() - cpu
    return Sample(cpu / calls * 1e6, wall / calls * 1e6, thread / calls * 1e6)


def rss_mb() -> float:
    """Resident set size of this process, in MB (from /proc/self/statm)."""
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _serve(port: int, ready: Any) -> None:
    """The sink process: a healthy OTLP/HTTP backend that counts the spans it is sent.

    Every POST gets 200 with an empty protobuf body (an empty ``Export*ServiceResponse``: so
    metrics and logs are taken too); the spans of ``POST /v1/traces`` are counted, and
    ``GET /`` returns the count. HTTP/1.1, so the exporter's connection is kept alive as with
    a real collector.
    """
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    count = [0]

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            if self.path.endswith("/v1/traces"):
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = ExportTraceServiceRequest()
                request.ParseFromString(body)
                count[0] += sum(len(ss.spans) for rs in request.resource_spans for ss in rs.scope_spans)
            self._reply(b"", "application/x-protobuf")

        def do_GET(self) -> None:
            self._reply(str(count[0]).encode(), "text/plain")

        def _reply(self, body: bytes, content_type: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    ready.set()
    server.serve_forever()


class Sink:
    """A local OTLP/HTTP backend in its own process (its CPU is not counted as ours).

    Example:
        sink = Sink()
        exporter = OTLPSpanExporter(endpoint=sink.traces_url)
        ...
        print(sink.received())
        sink.stop()
    """

    def __init__(self, port: int | None = None) -> None:
        self.port = port or free_port()
        context = multiprocessing.get_context("spawn")  # no copy of our threads or tracer state
        ready = context.Event()
        self._process = context.Process(target=_serve, args=(self.port, ready), daemon=True)
        self._process.start()
        if not ready.wait(60):
            raise RuntimeError("the OTLP sink did not start within 60 s")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def traces_url(self) -> str:
        return f"{self.url}/v1/traces"

    def received(self) -> int:
        """Spans received so far."""
        import urllib.request

        with urllib.request.urlopen(self.url + "/", timeout=30) as response:
            return int(response.read())

    def stop(self) -> None:
        self._process.terminate()
        self._process.join(10)


def paced_latencies(
    fn: Callable[[str], object], inputs: Sequence[str], calls: int, rate: float
) -> list[float]:
    """Call ``fn`` on ``inputs`` in turn at ``rate`` calls per second (open loop, as traffic
    arrives); return each call's wall time in µs."""
    latencies = []
    interval = 1.0 / rate
    next_at = time.perf_counter()
    for i in range(calls):
        now = time.perf_counter()
        if now < next_at:
            time.sleep(next_at - now)
        start = time.perf_counter_ns()
        fn(inputs[i % len(inputs)])
        latencies.append((time.perf_counter_ns() - start) / 1000)
        next_at += interval
    return latencies


def sustained_rate(fn: Callable[[str], object], inputs: Sequence[str], calls: int) -> tuple[float, int]:
    """Scored calls per second from the first call until the last score is recorded, and the
    calls dropped meanwhile."""
    import tracesim

    before = tracesim.scoring_stats()
    start = time.perf_counter()
    for i in range(calls):
        fn(inputs[i % len(inputs)])
    tracesim.force_flush(600)
    elapsed = time.perf_counter() - start
    return calls / elapsed, tracesim.scoring_stats().dropped - before.dropped
