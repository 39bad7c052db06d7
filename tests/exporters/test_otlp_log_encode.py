"""tracesim's OTLP log encoder writes the bytes OpenTelemetry's encoder writes, for any log record.

Records come from a real ``LoggerProvider`` (what the SDK makes of random bodies, attributes,
severities, event names, contexts and times); each batch is encoded both ways and compared
byte for byte. The gated OTLP/HTTP log exporter is then checked on the wire, against a loopback
backend.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from opentelemetry import trace
from opentelemetry._logs import SeverityNumber
from opentelemetry.exporter.otlp.proto.common._log_encoder import encode_logs
from opentelemetry.proto.collector.logs.v1.logs_service_pb2 import ExportLogsServiceRequest
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import InMemoryLogRecordExporter, SimpleLogRecordProcessor
from opentelemetry.sdk.resources import Resource
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags
from scripted_backend import ScriptedBackend
from test_otlp_encode import ATTRIBUTES, IDS_64, IDS_128, TEXT, VALUES

from tracesim._config import resolve
from tracesim.exporters._otlp_encode import Unsupported
from tracesim.exporters._otlp_log_encode import encode_logs_or_fallback, encode_logs_request
from tracesim.exporters._signals import otlp_log_exporter

RECORDS = st.lists(
    st.fixed_dictionaries(
        {
            "body": VALUES,
            "attributes": ATTRIBUTES,
            "severity_number": st.one_of(st.none(), st.sampled_from(list(SeverityNumber))),
            "severity_text": st.one_of(st.none(), TEXT),
            "event_name": st.one_of(st.none(), TEXT),
            "timestamp": st.one_of(st.none(), st.integers(0, 2**64 - 1)),
            "span": st.one_of(st.none(), st.tuples(IDS_128, IDS_64, st.sampled_from([0, 1]))),
            "logger": st.sampled_from(["tracesim", "other"]),
        }
    ),
    max_size=6,
)


@pytest.fixture(scope="module")
def emitted() -> Iterator[Any]:
    """Emit records through a real provider; the SDK's ``ReadableLogRecord``s of each batch."""
    memory = InMemoryLogRecordExporter()
    provider = LoggerProvider(resource=Resource.create({"service.name": "encode-test", "n": 3}))
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    loggers = {
        "tracesim": provider.get_logger("tracesim", "1.2.3", schema_url="https://opentelemetry.io/schemas/1"),
        "other": provider.get_logger("other"),
    }

    def emit(records: list[dict[str, Any]]) -> Any:
        memory.clear()
        for record in records:
            context = None
            if record["span"] is not None:
                trace_id, span_id, flags = record["span"]
                span = NonRecordingSpan(SpanContext(trace_id, span_id, False, TraceFlags(flags)))
                context = trace.set_span_in_context(span)
            with _quiet():  # the SDK says so of the attribute values it drops
                loggers[record["logger"]].emit(
                    timestamp=record["timestamp"],
                    context=context,
                    severity_number=record["severity_number"],
                    severity_text=record["severity_text"],
                    body=record["body"],
                    attributes=record["attributes"],
                    event_name=record["event_name"],
                )
        return memory.get_finished_logs()

    yield emit
    provider.shutdown()


def _quiet() -> Any:
    return _Level(logging.getLogger("opentelemetry"), logging.CRITICAL)


class _Level:
    def __init__(self, logger: logging.Logger, level: int) -> None:
        self._logger, self._level, self._was = logger, level, logger.level

    def __enter__(self) -> None:
        self._logger.setLevel(self._level)

    def __exit__(self, *exc_info: object) -> None:
        self._logger.setLevel(self._was)


def assert_same_bytes(batch: Any, body: bytes) -> None:
    official = encode_logs(batch)
    assert body == official.SerializeToString()  # field order too: the same bytes on the wire
    if "nan" not in str(official):
        assert ExportLogsServiceRequest.FromString(body) == official


def record(**given: Any) -> dict[str, Any]:
    """A record for `emitted`: nothing set but what is ``given``."""
    empty = {"body": None, "attributes": {}, "severity_number": None, "severity_text": None}
    return {**empty, "event_name": None, "timestamp": None, "span": None, "logger": "other", **given}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(RECORDS)
@example([])
@example([record()])
def test_random_records_encode_to_the_official_bytes(emitted: Any, records: list[dict[str, Any]]) -> None:
    batch = emitted(records)
    assert len(batch) == len(records)
    assert_same_bytes(batch, encode_logs_request(batch))


def test_the_results_records_of_a_scored_call_encode_to_the_official_bytes(emitted: Any) -> None:
    from tracesim._capture import make_options
    from tracesim._scoring._results import render
    from tracesim.evaluators import EvalResult

    result = EvalResult(
        name="rouge", score=0.93, passed=True, threshold=0.5, explanation="f-measure", details={"p": 0.9}
    )
    attributes = render(result, make_options(True, 32768))[0]
    records = [
        {
            "body": "evaluation: rouge=0.93 (pass)",
            "attributes": attributes,
            "severity_number": SeverityNumber.INFO,
            "severity_text": None,
            "event_name": "gen_ai.evaluation.result",
            "timestamp": 1_790_000_000_000_000_000 + i,
            "span": (0x0AF7651916CD43DD8448EB211C80319C, 0xB7AD6B7169203331 + i, 1),
            "logger": "tracesim",
        }
        for i in range(3)
    ]
    batch = emitted(records)
    assert_same_bytes(batch, encode_logs_request(batch))


def test_the_gated_exporter_sends_the_official_body(emitted: Any) -> None:
    batch = emitted(
        [
            record(
                body=f"record {i}",
                attributes={"i": i},
                severity_number=SeverityNumber.WARN,
                severity_text="WARN",
                event_name="test.event",
                timestamp=1 + i,
            )
            for i in range(4)
        ]
    )
    with ScriptedBackend() as backend:
        settings_ = resolve({"exporters": "otlp", "otlp_endpoint": backend.traces_url}, environ={})
        exporter = otlp_log_exporter(settings_, explicit=True)
        try:
            assert exporter._own_body  # type: ignore[attr-defined]  # the body is tracesim's
            assert exporter.export(batch).name == "SUCCESS"
        finally:
            exporter.shutdown()
        assert [record.body.string_value for record in backend.logs] == [f"record {i}" for i in range(4)]
        expected = ExportLogsServiceRequest.FromString(encode_logs(batch).SerializeToString())
        received = [r for rl in expected.resource_logs for sl in rl.scope_logs for r in sl.log_records]
        assert list(backend.logs) == received


def test_a_batch_it_does_not_write_goes_to_the_official_encoder(emitted: Any) -> None:
    batch = emitted([record(body=2**70)])
    with pytest.raises(Unsupported):
        encode_logs_request(batch)  # an int beyond 64 bits
    assert encode_logs_or_fallback(batch) is None  # OpenTelemetry's encoder cannot either
