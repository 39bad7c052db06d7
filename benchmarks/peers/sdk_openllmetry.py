"""OpenLLMetry (``traceloop-sdk``): its ``@workflow(name="agent")`` decorator.

``Traceloop.init`` with a ``BatchSpanProcessor`` of our choosing (the exporter that discards,
with raw OpenTelemetry's queue; or the official ``OTLPSpanExporter`` with default settings),
no library instrumentation (``instruments=set()``: the decorator is what is measured) and its
content tracing on (its default: the input and output are recorded as JSON). It installs its
``ThreadingInstrumentor`` and its span-start hook, as it does for every user.

Needs the peers virtualenv (``peers/peer_venv.py``): traceloop-sdk cannot be installed with its
dependencies beside this repository's OpenTelemetry.
"""

from __future__ import annotations

import contextlib
import os
import sys

from _common import Discard
from _shapes import FUNCTIONS, QUEUE_SIZE, Traced
from opentelemetry import trace
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def build(otlp_url: str | None) -> Traced:
    os.environ.setdefault("TRACELOOP_TELEMETRY", "false")
    from traceloop.sdk import Traceloop  # type: ignore[import-not-found, unused-ignore]
    from traceloop.sdk.decorators import workflow  # type: ignore[import-not-found, unused-ignore]

    if otlp_url is None:
        processor = BatchSpanProcessor(Discard(), max_queue_size=QUEUE_SIZE)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{otlp_url}/v1/traces"))
    with contextlib.redirect_stdout(sys.stderr):  # its banner: our stdout carries the result
        Traceloop.init(
            app_name="bench-peers", processor=processor, telemetry_enabled=False, instruments=set()
        )
    provider = trace.get_tracer_provider()
    functions = {shape: workflow(name="agent")(fn) for shape, fn in FUNCTIONS.items()}
    return Traced(functions, provider.force_flush, provider.shutdown)  # type: ignore[attr-defined]
