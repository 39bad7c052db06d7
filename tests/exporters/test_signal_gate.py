"""Metrics and logs to a backend that takes only spans: said once, then not sent (exporters._signals)."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from scripted_backend import JSON, MLFLOW_NOT_FOUND_PAGE, Reply, ScriptedBackend, emit_logs

from tracesim._config import Settings, resolve
from tracesim.exporters._signals import otlp_log_exporter, otlp_metric_exporter, refusal_of

SDK = "opentelemetry.exporter.otlp.proto.http"


@pytest.fixture
def backend() -> Iterator[ScriptedBackend]:
    with ScriptedBackend() as server:
        yield server


def settings_for(backend: ScriptedBackend, **more: object) -> Settings:
    return resolve({"exporters": "otlp", "otlp_endpoint": backend.traces_url, **more}, environ={})


def push_metrics(exporter: object, times: int) -> None:
    reader = PeriodicExportingMetricReader(exporter, export_interval_millis=3_600_000)  # type: ignore[arg-type]
    provider = MeterProvider(metric_readers=[reader])
    counter = provider.get_meter("test").create_counter("tracesim.test.things")
    for _ in range(times):
        counter.add(1)
        provider.force_flush()
    provider.shutdown()


def tracesim_lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "tracesim"]


def test_mlflow_404_on_metrics_is_said_once_at_info_and_nothing_more_is_sent(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    backend.answer("/v1/metrics", Reply(404, MLFLOW_NOT_FOUND_PAGE, "text/html; charset=utf-8"))
    exporter = otlp_metric_exporter(settings_for(backend))
    with caplog.at_level(logging.INFO):
        push_metrics(exporter, 5)
    assert backend.count("/v1/metrics") == 1
    lines = tracesim_lines(caplog)
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert lines[0].levelno == logging.INFO
    text = lines[0].getMessage()
    assert f"{backend.base}/v1/metrics" in text
    assert "404: 404 Not Found Not Found" in text
    assert "no more metrics are sent there" in text
    assert not [r for r in caplog.records if r.name.startswith(SDK)]  # the SDK's per-export ERROR is left out
    refusal = refusal_of(exporter)
    assert refusal is not None
    assert refusal.status == 404


def test_phoenix_405_on_logs_asked_for_is_a_warning_once(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    backend.answer("/v1/logs", Reply(405, "Method Not Allowed", "text/plain"))
    exporter = otlp_log_exporter(settings_for(backend), explicit=True)
    with caplog.at_level(logging.INFO):
        emit_logs(exporter, 6)
    assert backend.count("/v1/logs") == 1
    lines = tracesim_lines(caplog)
    assert [r.levelno for r in lines] == [logging.WARNING]
    assert "405: Method Not Allowed" in lines[0].getMessage()
    assert "otlp_endpoint" in lines[0].getMessage()
    assert not [r for r in caplog.records if r.name.startswith(SDK)]


def test_a_backend_that_takes_the_signal_gets_every_export(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    logs = otlp_log_exporter(settings_for(backend))
    emit_logs(logs, 3)
    push_metrics(otlp_metric_exporter(settings_for(backend)), 2)
    assert [r.body.string_value for r in backend.logs] == ["record 0", "record 1", "record 2"]
    assert backend.metric_requests == 3  # two flushes and the shutdown's last collection
    assert refusal_of(logs) is None
    assert not tracesim_lines(caplog)


def test_a_bad_request_drops_that_request_only_and_is_said_once(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    backend.script["/v1/logs"] = [Reply(400, '{"detail":"bad record"}', JSON)] * 3
    exporter = otlp_log_exporter(settings_for(backend))
    with caplog.at_level(logging.INFO):
        emit_logs(exporter, 5)
    assert backend.count("/v1/logs") == 5
    assert [r.body.string_value for r in backend.logs] == ["record 3", "record 4"]
    lines = tracesim_lines(caplog)
    assert len(lines) == 1
    assert "400: bad record" in lines[0].getMessage()
    assert refusal_of(exporter) is None


def test_the_experiment_header_and_paths_follow_the_settings(backend: ScriptedBackend) -> None:
    settings = settings_for(backend, mlflow_experiment_id="4")
    exporter = otlp_log_exporter(settings)
    emit_logs(exporter, 1)
    assert backend.count("/v1/logs") == 1
    assert len(backend.logs) == 1
    assert backend.headers["/v1/logs"][0]["x-mlflow-experiment-id"] == "4"
