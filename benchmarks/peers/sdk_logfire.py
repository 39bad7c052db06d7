"""Pydantic Logfire: ``@logfire.instrument("agent", record_return=True)`` (optional peer).

``logfire.configure`` sending nothing to Logfire's service and printing nothing, with metrics
off; the spans go to a ``BatchSpanProcessor`` of ours given as an additional processor (the
exporter that discards, with raw OpenTelemetry's queue; or the official ``OTLPSpanExporter``
with default settings). Its defaults otherwise: arguments recorded as attributes (the return
value too, asked for), scrubbing on (its redaction). ``allow_generator=True`` for the
generator, which it otherwise refuses.
"""

from __future__ import annotations

from _common import Discard
from _shapes import FUNCTIONS, QUEUE_SIZE, Traced
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def build(otlp_url: str | None) -> Traced:
    import logfire  # type: ignore[import-not-found, unused-ignore]

    if otlp_url is None:
        processor = BatchSpanProcessor(Discard(), max_queue_size=QUEUE_SIZE)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{otlp_url}/v1/traces"))
    instance = logfire.configure(
        send_to_logfire=False,
        console=False,
        metrics=False,
        service_name="bench-peers",
        additional_span_processors=[processor],
    )
    functions = {
        shape: instance.instrument("agent", record_return=True, allow_generator=shape == "gen")(fn)
        for shape, fn in FUNCTIONS.items()
    }
    return Traced(functions, instance.force_flush, instance.shutdown)
