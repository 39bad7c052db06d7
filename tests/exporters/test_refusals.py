"""A 4xx is not an outage: a refusal retrying cannot fix is said once, with what to change.

Against a real loopback HTTP server answering as MLflow, Phoenix or a collector do
(tests/scripted_backend.py), through the official OTLP/HTTP exporter that `otlp_exporter` builds.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from scripted_backend import (
    JSON,
    MLFLOW_MISSING_HEADER,
    MLFLOW_NOT_FOUND_PAGE,
    MLFLOW_UNKNOWN_EXPERIMENT,
    Reply,
    ScriptedBackend,
)

from tracesim.exporters import SpoolingExporter, otlp_exporter
from tracesim.exporters._otlp_http import RefusalAwareSpanExporter

SDK = "opentelemetry.exporter.otlp.proto.http"
Batches = Callable[..., list[ReadableSpan]]


@pytest.fixture
def backend() -> Iterator[ScriptedBackend]:
    with ScriptedBackend() as server:
        yield server


def said(caplog: pytest.LogCaptureFixture) -> list[str]:
    """tracesim's lines, and fail on any line of the SDK exporter (tracesim replaces them)."""
    assert not [r.getMessage() for r in caplog.records if r.name.startswith(SDK)]
    return [r.getMessage() for r in caplog.records if r.name == "tracesim"]


# status, body, content type, what the line must quote, what it must say to change[, headers sent]
CASES = [
    pytest.param(
        422,
        MLFLOW_MISSING_HEADER,
        JSON,
        "422: header x-mlflow-experiment-id: Field required",
        "set mlflow_experiment_id (TRACESIM_MLFLOW_EXPERIMENT_ID / MLFLOW_EXPERIMENT_ID) or "
        "OTEL_EXPORTER_OTLP_HEADERS=x-mlflow-experiment-id=<id>",
        id="mlflow-missing-header",
    ),
    pytest.param(
        404,
        MLFLOW_UNKNOWN_EXPERIMENT,
        JSON,
        "404: No Experiment with id=999 exists",
        "name an experiment that exists on this MLflow server",
        {"x-mlflow-experiment-id": "999"},
        id="mlflow-unknown-experiment",
    ),
    pytest.param(
        400,
        '{"error_code":"INVALID_PARAMETER_VALUE","message":"Invalid experiment ID \'abc\'. '
        'Experiment ID must be a valid integer."}',
        JSON,
        "400: Invalid experiment ID 'abc'",
        "an MLflow experiment id is an integer",
        {"x-mlflow-experiment-id": "abc"},
        id="mlflow-bad-experiment",
    ),
    pytest.param(
        401,
        '{"message":"invalid api key"}',
        JSON,
        "401: invalid api key",
        "check the credentials header (otlp_headers / OTEL_EXPORTER_OTLP_HEADERS)",
        id="unauthorized",
    ),
    pytest.param(
        403, "Forbidden", "text/plain", "403: Forbidden", "check the credentials header", id="forbidden"
    ),
    pytest.param(
        404,
        MLFLOW_NOT_FOUND_PAGE,
        "text/html",
        "404: 404 Not Found Not Found The requested URL was not found",
        "this URL takes no OTLP spans: check otlp_endpoint / OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        id="wrong-path",
    ),
    pytest.param(
        405, "Method Not Allowed", "text/plain", "405: Method Not Allowed", "check otlp_endpoint", id="405"
    ),
    pytest.param(
        415,
        '{"detail":"Unsupported content type"}',
        JSON,
        "415: Unsupported content type",
        "check otlp_protocol",
        id="415",
    ),
]


CASES = [case if len(case.values) == 6 else pytest.param(*case.values, None, id=case.id) for case in CASES]


@pytest.mark.parametrize(("status", "body", "content_type", "quoted", "change", "headers"), CASES)
def test_a_configuration_refused_is_said_once_with_what_to_change_and_batches_are_dropped(
    backend: ScriptedBackend,
    make_batch: Batches,
    caplog: pytest.LogCaptureFixture,
    status: int,
    body: str,
    content_type: str,
    quoted: str,
    change: str,
    headers: dict[str, str] | None,
) -> None:
    backend.answer("/v1/traces", Reply(status, body, content_type))
    exporter = otlp_exporter(endpoint=backend.traces_url, headers=headers)
    assert isinstance(exporter, RefusalAwareSpanExporter)
    with caplog.at_level(logging.INFO):
        results = [exporter.export(make_batch(f"b{i}")) for i in range(6)]
    assert results == [SpanExportResult.FAILURE] * 6
    assert backend.count("/v1/traces") == 6  # each batch tried once: no retry loop
    lines = said(caplog)
    assert len(lines) == 1, lines
    assert quoted in lines[0]
    assert change in lines[0]
    assert backend.traces_url in lines[0]
    assert "refused batches are dropped" in lines[0]
    assert exporter.stats.refused == 6
    assert exporter.stats.dropped == 18
    assert exporter.force_flush() is False  # spans were lost since the last flush
    assert exporter.force_flush() is True  # nothing new lost
    exporter.shutdown()


def test_a_batch_refused_for_itself_is_dropped_and_the_next_ones_are_delivered(
    backend: ScriptedBackend, make_batch: Batches, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    backend.script["/v1/traces"] = [
        Reply(422, '{"detail":"Cannot convert OpenTelemetry span to MLflow span"}', JSON)
    ]
    exporter = otlp_exporter(endpoint=backend.traces_url, spool_dir=tmp_path / "spool")
    assert isinstance(exporter, SpoolingExporter)
    with caplog.at_level(logging.INFO):
        exporter.export(make_batch("bad"))
        assert not exporter.force_flush(10_000)  # the refused batch is gone, not delivered
        for i in range(3):
            exporter.export(make_batch(f"good{i}"))
        assert exporter.force_flush(10_000)
    assert backend.span_names() == [f"good{i}-{j}" for i in range(3) for j in range(3)]
    lines = said(caplog)
    assert len(lines) == 1, lines
    assert "422: Cannot convert OpenTelemetry span to MLflow span" in lines[0]
    assert "that batch is dropped" in lines[0]
    stats = exporter.stats
    assert (stats.refused, stats.rejected, stats.pending, stats.circuit_open) == (3, 3, 0, False)
    exporter.shutdown()


def test_with_a_spool_refused_batches_wait_for_a_run_with_the_header_set(
    backend: ScriptedBackend, make_batch: Batches, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    backend.required_header = "x-mlflow-experiment-id"
    spool = tmp_path / "spool"
    exporter = otlp_exporter(endpoint=backend.traces_url, spool_dir=spool)
    assert isinstance(exporter, SpoolingExporter)
    with caplog.at_level(logging.INFO):
        for i in range(8):
            assert exporter.export(make_batch(f"b{i}")) is SpanExportResult.SUCCESS
        for _ in range(3):
            assert exporter.force_flush(30_000) is False  # returns at once: nothing is sent
        refusal = exporter.refusal
        exporter.shutdown()
    assert backend.count("/v1/traces") == 1  # the first batch; no probe, no retry in this run
    assert refusal is not None
    assert refusal.status == 422
    lines = said(caplog)
    refused = [line for line in lines if "refused spans" in line]
    assert len(refused) == 1, lines
    assert "set mlflow_experiment_id" in refused[0]
    assert f"refused batches stay in spool {spool}" in refused[0]
    assert not [line for line in lines if "did not accept a batch" in line]  # not called an outage
    assert exporter.stats.pending == 24

    # The next run, with the experiment set, delivers what was kept.
    fixed = otlp_exporter(
        endpoint=backend.traces_url, headers={"x-mlflow-experiment-id": "0"}, spool_dir=spool
    )
    assert isinstance(fixed, SpoolingExporter)
    assert fixed.force_flush(30_000)
    assert sorted(backend.span_names()) == sorted(f"b{i}-{j}" for i in range(8) for j in range(3))
    fixed.shutdown()


def test_the_refusing_backend_is_tried_again_only_after_the_retry_interval(
    backend: ScriptedBackend, make_batch: Batches, tmp_path: Path
) -> None:
    backend.required_header = "x-mlflow-experiment-id"
    inner = otlp_exporter(endpoint=backend.traces_url)
    exporter = SpoolingExporter(inner, tmp_path / "spool", refusal_retry_s=0.05)
    exporter.export(make_batch("a"))
    assert exporter.force_flush(10_000) is False
    assert exporter.refusal is not None
    backend.required_header = None  # the backend's side is fixed (the experiment id was made optional)
    while exporter.stats.pending:  # the next attempt comes by itself, after the interval
        exporter.force_flush(10_000)
        time.sleep(0.01)
    assert exporter.refusal is None
    assert backend.span_names() == ["a-0", "a-1", "a-2"]
    exporter.shutdown()


def test_a_refusal_is_said_again_only_after_the_backend_accepted_a_batch(
    backend: ScriptedBackend, make_batch: Batches, caplog: pytest.LogCaptureFixture
) -> None:
    exporter = otlp_exporter(endpoint=backend.traces_url)
    backend.required_header = "x-mlflow-experiment-id"
    with caplog.at_level(logging.INFO):
        for i in range(3):
            exporter.export(make_batch(f"a{i}"))
        backend.required_header = None
        assert exporter.export(make_batch("ok")) is SpanExportResult.SUCCESS
        backend.required_header = "x-mlflow-experiment-id"
        for i in range(3):
            exporter.export(make_batch(f"b{i}"))
    lines = said(caplog)
    assert len(lines) == 2, lines
    assert all("x-mlflow-experiment-id: Field required" in line for line in lines)


def test_a_batch_too_large_is_sent_again_in_halves(
    backend: ScriptedBackend, make_batch: Batches, caplog: pytest.LogCaptureFixture
) -> None:
    backend.max_spans = 2
    exporter = otlp_exporter(endpoint=backend.traces_url)
    assert isinstance(exporter, RefusalAwareSpanExporter)
    with caplog.at_level(logging.INFO):
        assert exporter.export(make_batch("big", 7)) is SpanExportResult.SUCCESS
    assert sorted(backend.span_names()) == sorted(f"big-{i}" for i in range(7))
    assert all(len(request) <= 2 for request in backend.span_requests)
    assert said(caplog) == []  # nothing lost, nothing to change
    assert exporter.stats.too_large == 0


def test_a_single_span_too_large_is_dropped_counted_and_said_once(
    backend: ScriptedBackend, make_batch: Batches, caplog: pytest.LogCaptureFixture
) -> None:
    backend.max_spans = 0  # any span is too large
    exporter = otlp_exporter(endpoint=backend.traces_url)
    assert isinstance(exporter, RefusalAwareSpanExporter)
    with caplog.at_level(logging.INFO):
        for i in range(4):
            assert exporter.export(make_batch(f"b{i}", 2)) is SpanExportResult.SUCCESS
    assert exporter.stats.too_large == 8
    lines = said(caplog)
    assert len(lines) == 1, lines
    assert "413: Request Entity Too Large" in lines[0]
    assert "OTEL_BSP_MAX_EXPORT_BATCH_SIZE" in lines[0]
    assert exporter.force_flush() is False


@pytest.mark.parametrize("status", [429, 503])
def test_a_busy_or_down_backend_is_still_an_outage_spooled_and_delivered_later(
    backend: ScriptedBackend,
    make_batch: Batches,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    status: int,
) -> None:
    backend.answer("/v1/traces", Reply(status, "busy", "text/plain", (("Retry-After", "0"),)))
    exporter = otlp_exporter(endpoint=backend.traces_url, spool_dir=tmp_path / "spool")
    assert isinstance(exporter, SpoolingExporter)
    with caplog.at_level(logging.INFO, logger="tracesim"):
        for i in range(3):
            exporter.export(make_batch(f"b{i}"))
        assert exporter.force_flush(30_000) is False
        assert exporter.stats.circuit_open
        assert exporter.refusal is None
        backend.answer("/v1/traces", Reply())
        assert exporter.force_flush(30_000)
    assert sorted(backend.span_names()) == sorted(f"b{i}-{j}" for i in range(3) for j in range(3))
    lines = [r.getMessage() for r in caplog.records if r.name == "tracesim"]
    assert not [line for line in lines if "refused" in line]
    assert [line for line in lines if "did not accept a batch; spooling" in line]
    assert exporter.stats.refused == 0
    exporter.shutdown()


def test_a_secret_in_the_backends_message_is_redacted_in_the_line(
    backend: ScriptedBackend, make_batch: Batches, caplog: pytest.LogCaptureFixture
) -> None:
    backend.answer(
        "/v1/traces", Reply(401, '{"message":"key sk-proj-Abc123Def456Ghi789Jkl0 is revoked"}', JSON)
    )
    exporter = otlp_exporter(endpoint=backend.traces_url)
    with caplog.at_level(logging.INFO):
        exporter.export(make_batch("a"))
    lines = said(caplog)
    assert len(lines) == 1
    assert "sk-proj-Abc123Def456Ghi789Jkl0" not in lines[0]
    assert "[REDACTED:api_key]" in lines[0]


def test_an_otlp_status_body_is_quoted(
    backend: ScriptedBackend, make_batch: Batches, caplog: pytest.LogCaptureFixture
) -> None:
    from google.rpc.status_pb2 import Status  # type: ignore[import-untyped]

    body = Status(code=3, message="span 7 has no name").SerializeToString().decode()
    backend.answer("/v1/traces", Reply(400, body, "application/x-protobuf"))
    exporter = otlp_exporter(endpoint=backend.traces_url)
    with caplog.at_level(logging.INFO):
        exporter.export(make_batch("a"))
    (line,) = said(caplog)
    assert "400: span 7 has no name" in line
    assert "that batch is dropped" in line


# A 400 or 422 whose free text quotes the batch (a span named "run experiment 7") or says
# "header": refused for itself. Only structured fields say that the configuration is refused.
POISON = [
    pytest.param(
        422, '{"detail":"Cannot convert span \'run experiment 7\': bad attribute"}', None, id="422-text"
    ),
    pytest.param(400, "invalid header value in span 'experiment 7'", None, id="400-plain"),
    pytest.param(
        400,
        '{"error_code":"INVALID_PARAMETER_VALUE","message":"Invalid session id in experiment 0 header"}',
        {"x-mlflow-experiment-id": "0"},  # a valid id: MLflow's code is about the batch
        id="mlflow-invalid-batch",
    ),
]


@pytest.mark.parametrize(("status", "body", "headers"), POISON)
def test_a_batch_refused_for_itself_never_blocks_the_spool_whatever_its_message_says(
    backend: ScriptedBackend,
    make_batch: Batches,
    caplog: pytest.LogCaptureFixture,
    tmp_path: Path,
    status: int,
    body: str,
    headers: dict[str, str] | None,
) -> None:
    backend.script["/v1/traces"] = [Reply(status, body, JSON if body.startswith("{") else "text/plain")]
    inner = otlp_exporter(endpoint=backend.traces_url, headers=headers)
    exporter = SpoolingExporter(inner, tmp_path / "spool")
    with caplog.at_level(logging.INFO):
        exporter.export(make_batch("run experiment 7"))
        assert not exporter.force_flush(10_000)  # that batch is gone
        for i in range(2):
            exporter.export(make_batch(f"later{i}"))
        assert exporter.force_flush(10_000)
    assert backend.span_names() == [f"later{i}-{j}" for i in range(2) for j in range(3)]
    assert exporter.refusal is None
    assert exporter.stats.pending == 0
    assert "that batch is dropped" in said(caplog)[0]
    exporter.shutdown()


def test_a_header_fastapi_names_refuses_the_configuration(
    backend: ScriptedBackend, make_batch: Batches, tmp_path: Path
) -> None:
    refused = '{"detail":[{"type":"missing","loc":["header","x-api-key"],"msg":"Field required"}]}'
    backend.answer("/v1/traces", Reply(422, refused, JSON))
    exporter = otlp_exporter(endpoint=backend.traces_url, spool_dir=tmp_path / "spool")
    assert isinstance(exporter, SpoolingExporter)
    exporter.export(make_batch("kept"))
    assert not exporter.force_flush(10_000)
    refusal = exporter.refusal
    assert refusal is not None
    assert refusal.advice == "set the x-api-key header (otlp_headers / OTEL_EXPORTER_OTLP_HEADERS)"
    assert exporter.stats.pending == 3  # kept for a run with the header set
    exporter.shutdown()


def test_a_split_batch_half_delivered_before_an_outage_sends_only_the_rest_again(
    backend: ScriptedBackend, make_batch: Batches
) -> None:
    # 4 spans: 413; the first half taken; the second half meets an outage; then all is well.
    backend.script["/v1/traces"] = [
        Reply(413, "Request Entity Too Large", "text/plain"),
        Reply(),
        Reply(503, "busy", "text/plain"),
    ]
    exporter = otlp_exporter(endpoint=backend.traces_url, timeout_s=0.5)
    assert isinstance(exporter, RefusalAwareSpanExporter)
    batch = make_batch("s", 4)
    assert exporter.export(batch) is SpanExportResult.FAILURE  # to be retried, as a spool does
    assert exporter.last_refusal() is None  # an outage, not a refusal
    assert exporter.export(batch) is SpanExportResult.SUCCESS
    assert sorted(backend.span_names()) == ["s-0", "s-1", "s-2", "s-3"]  # each once
    assert exporter.export(batch) is SpanExportResult.SUCCESS  # a batch sent again on purpose
    assert len(backend.span_names()) == 8  # goes out whole: only a split's spans are left out once


def test_a_split_batch_under_a_spool_is_delivered_without_duplicates(
    backend: ScriptedBackend, make_batch: Batches, tmp_path: Path
) -> None:
    backend.script["/v1/traces"] = [
        Reply(413, "Request Entity Too Large", "text/plain"),
        Reply(),
        Reply(503, "busy", "text/plain"),
    ]
    inner = otlp_exporter(endpoint=backend.traces_url, timeout_s=0.5)
    exporter = SpoolingExporter(inner, tmp_path / "spool", initial_backoff_s=0.01)
    exporter.export(make_batch("s", 4))
    delivered = exporter.force_flush(10_000) or exporter.force_flush(10_000)
    assert delivered
    assert sorted(backend.span_names()) == ["s-0", "s-1", "s-2", "s-3"]
    exporter.shutdown()
