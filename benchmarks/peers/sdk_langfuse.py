"""Langfuse: ``@observe(name="agent")`` (optional peer), input and output captured (its defaults).

The Langfuse client with its own span processor (a ``BatchSpanProcessor``) given our exporter:
the one that discards (the queue raised to raw OpenTelemetry's through
``OTEL_BSP_MAX_QUEUE_SIZE``, which its processor reads), or the official ``OTLPSpanExporter``
to the loopback collector with default settings. Its API address is the collector too, so
anything else it sends stays on this machine.
"""

from __future__ import annotations

import os

from _common import Discard
from _shapes import FUNCTIONS, QUEUE_SIZE, Traced
from opentelemetry.sdk.trace.export import SpanExporter


def build(otlp_url: str | None) -> Traced:
    exporter: SpanExporter
    if otlp_url is None:
        os.environ["OTEL_BSP_MAX_QUEUE_SIZE"] = str(QUEUE_SIZE)
        exporter = Discard()
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        exporter = OTLPSpanExporter(endpoint=f"{otlp_url}/v1/traces")
    from langfuse import Langfuse, observe  # type: ignore[import-not-found, unused-ignore]

    client = Langfuse(
        public_key="pk-lf-bench",
        secret_key="sk-lf-bench",
        base_url=otlp_url or "http://127.0.0.1:9",
        span_exporter=exporter,
    )
    functions = {shape: observe(name="agent")(fn) for shape, fn in FUNCTIONS.items()}
    return Traced(functions, client.flush, client.shutdown)
