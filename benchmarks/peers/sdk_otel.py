"""Raw OpenTelemetry: the span each decorator makes, written by hand (the baseline of every ratio).

One span named ``agent`` with the attributes tracesim writes for ``kind="agent"``, the input as
``json.dumps`` of the arguments by name and the output, with their MIME types; no redaction.
Exported by a ``BatchSpanProcessor``: to an exporter that discards (queue as bench_overhead.py),
or, given a collector's URL, to the official ``OTLPSpanExporter`` with default settings.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from _common import Discard
from _shapes import FUNCTIONS, QUEUE_SIZE, Traced
from _workload import AGENT_ATTRIBUTES
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor


def build(otlp_url: str | None) -> Traced:
    provider = TracerProvider()
    if otlp_url is None:
        processor = BatchSpanProcessor(Discard(), max_queue_size=QUEUE_SIZE)
    else:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        processor = BatchSpanProcessor(OTLPSpanExporter(endpoint=f"{otlp_url}/v1/traces"))
    provider.add_span_processor(processor)
    tracer = provider.get_tracer("hand-written")

    def agent(question: str, context: dict[str, Any]) -> str:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            result: str = FUNCTIONS["sync"](question, context)
            span.set_attribute("output.value", result)
            span.set_attribute("output.mime_type", "text/plain")
            return result

    def agent_gen(question: str, context: dict[str, Any]) -> Iterator[str]:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            items = []
            for item in FUNCTIONS["gen"](question, context):
                items.append(item)
                yield item
            span.set_attribute("output.value", "".join(items))
            span.set_attribute("output.mime_type", "text/plain")

    async def agent_async(question: str, context: dict[str, Any]) -> str:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"question": question, "context": context}))
            span.set_attribute("input.mime_type", "application/json")
            result: str = await FUNCTIONS["async"](question, context)
            span.set_attribute("output.value", result)
            span.set_attribute("output.mime_type", "text/plain")
            return result

    def agent_chat(messages: list[dict[str, str]], metadata: dict[str, Any]) -> str:
        with tracer.start_as_current_span("agent", attributes=AGENT_ATTRIBUTES) as span:
            span.set_attribute("input.value", json.dumps({"messages": messages, "metadata": metadata}))
            span.set_attribute("input.mime_type", "application/json")
            result: str = FUNCTIONS["chat"](messages, metadata)
            span.set_attribute("output.value", result)
            span.set_attribute("output.mime_type", "text/plain")
            return result

    functions: dict[str, Callable[..., Any]] = {
        "sync": agent,
        "async": agent_async,
        "gen": agent_gen,
        "chat": agent_chat,
    }
    return Traced(functions, provider.force_flush, provider.shutdown)
