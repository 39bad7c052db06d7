"""Fixtures of the exporter and replay tests: the scripted OTLP/HTTP endpoint (``tests/otlp_sink.py``).

``tests/conftest.py`` imports them, so tests/exporters and tests/batch (replay) both reach them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from otlp_sink import OtlpSink


@pytest.fixture
def sink() -> Iterator[OtlpSink]:
    server = OtlpSink()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def make_batch() -> Iterator[Callable[..., list[ReadableSpan]]]:
    """Finished SDK spans named ``<prefix>-<i>``, one trace per batch, from a real provider."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "spool-test"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests")

    def make(prefix: str, size: int = 3) -> list[ReadableSpan]:
        memory.clear()
        with tracer.start_as_current_span(f"{prefix}-0", attributes={"input.value": "x" * 100}):
            for i in range(1, size):
                with tracer.start_as_current_span(f"{prefix}-{i}"):
                    pass
        return sorted(memory.get_finished_spans(), key=lambda s: s.name)

    yield make
    provider.shutdown()
