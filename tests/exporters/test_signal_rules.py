"""Metrics and logs follow the rule spans follow (exporters._refusals.classify), to the URL spans use.

A real loopback backend (tests/scripted_backend.py) answers as told; the exporters are the
official OTLP/HTTP ones that `tracesim.exporters._signals` builds.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk._logs.export import LogRecordExportResult
from scripted_backend import (
    JSON,
    MLFLOW_MISSING_HEADER,
    MLFLOW_NOT_FOUND_PAGE,
    Reply,
    ScriptedBackend,
    emit_logs,
)

import tracesim
from tracesim._config import Settings, resolve
from tracesim.exporters._signals import (
    SignalGate,
    _GatedLogExporter,
    otlp_log_exporter,
    refusal_of,
    signal_endpoint,
)


@pytest.fixture
def backend() -> Iterator[ScriptedBackend]:
    with ScriptedBackend() as server:
        yield server


def settings_for(backend: ScriptedBackend) -> Settings:
    return resolve({"exporters": "otlp", "otlp_endpoint": backend.traces_url}, environ={})


def tracesim_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "tracesim"]


def test_a_one_off_404_after_the_url_took_logs_drops_that_request_only(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    backend.script["/v1/logs"] = [Reply(), Reply(404, MLFLOW_NOT_FOUND_PAGE, "text/html")]
    exporter = otlp_log_exporter(settings_for(backend))
    with caplog.at_level(logging.INFO):
        emit_logs(exporter, 4)
    assert backend.count("/v1/logs") == 4  # not closed by a proxy's hiccup
    assert [r.body.string_value for r in backend.logs] == ["record 0", "record 2", "record 3"]
    assert refusal_of(exporter) is None
    lines = tracesim_lines(caplog)
    assert len(lines) == 1, lines
    assert "that request was dropped" in lines[0]


def test_a_422_for_the_records_drops_that_request_only(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    backend.script["/v1/logs"] = [
        Reply(422, '{"detail":"cannot convert record with header experiment"}', JSON)
    ]
    exporter = otlp_log_exporter(settings_for(backend))
    with caplog.at_level(logging.INFO):
        emit_logs(exporter, 3)
    assert backend.count("/v1/logs") == 3
    assert [r.body.string_value for r in backend.logs] == ["record 1", "record 2"]
    assert refusal_of(exporter) is None


@pytest.mark.parametrize(
    "reply",
    [Reply(401, "bad key", "text/plain"), Reply(422, MLFLOW_MISSING_HEADER, JSON)],
    ids=["credentials", "missing-header"],
)
def test_a_refused_configuration_is_said_once_and_tried_again_at_a_slow_pace(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture, reply: Reply
) -> None:
    backend.script["/v1/logs"] = [reply]
    waiting = otlp_log_exporter(settings_for(backend))
    with caplog.at_level(logging.INFO):
        emit_logs(waiting, 3)  # the first refused; the next two wait out the interval, unsent
    assert backend.count("/v1/logs") == 1
    assert refusal_of(waiting) is None  # not closed for good: fixed credentials are taken
    lines = tracesim_lines(caplog)
    assert len(lines) == 1, lines
    assert "tried again every 300 s" in lines[0]

    backend.script["/v1/logs"] = [reply]
    again = _GatedLogExporter(
        SignalGate("logs", explicit=False, retry_s=0.0), endpoint=backend.base + "/v1/logs"
    )
    emit_logs(again, 3)  # the interval over at once: tried again, and taken
    assert backend.count("/v1/logs") == 4
    assert [r.body.string_value for r in backend.logs] == ["record 1", "record 2"]


def test_a_closed_gate_sends_nothing_and_a_waiting_one_says_failure(backend: ScriptedBackend) -> None:
    backend.answer("/v1/logs", Reply(403, "forbidden", "text/plain"))
    gate = SignalGate("logs", explicit=True)
    exporter = _GatedLogExporter(gate, endpoint=backend.base + "/v1/logs")
    emit_logs(exporter, 1)
    assert not gate.passes()
    assert gate.open
    assert exporter.export([]) is LogRecordExportResult.FAILURE  # dropped while waiting


def test_the_traces_endpoint_variable_alone_leads_metrics_and_logs_beside_the_spans(
    backend: ScriptedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", backend.traces_url)
    tracesim.configure(
        exporters=["otlp"], spool_dir="none", phoenix_annotations=False, mlflow_assessments=False
    )
    try:
        with tracesim.span("answer") as span:
            pass
        tracesim.score(span, name="user_rating", value=1.0)
        tracesim.force_flush(10)
    finally:
        tracesim.shutdown(10)
    assert backend.count("/v1/traces") >= 1
    assert backend.count("/v1/logs") >= 1
    assert backend.count("/v1/metrics") >= 1


def test_a_signal_endpoint_variable_still_wins() -> None:
    settings = resolve({"exporters": "otlp", "otlp_endpoint": "http://spans:4318"}, environ={})
    assert signal_endpoint(settings, "metrics", {}) == "http://spans:4318/v1/metrics"
    named = {"OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": "http://metrics:9090/otlp"}
    assert signal_endpoint(settings, "metrics", named) is None  # the official exporter reads it
    bare = resolve({"exporters": "otlp"}, environ={})
    assert signal_endpoint(bare, "logs", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/otlp/traces"}) == (
        "http://c/otlp/logs"
    )
    assert signal_endpoint(bare, "logs", {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c/ingest"}) is None
