"""Which ``x-mlflow-experiment-id`` a request carries: a header written anywhere wins over the setting.

The official OTLP/HTTP exporters send ``OTEL_EXPORTER_OTLP_[<SIGNAL>_]HEADERS`` and, over them,
the headers given; ``mlflow_experiment_id`` fills the header only where no header names an
experiment. Read from what a real loopback server receives (tests/scripted_backend.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from scripted_backend import ScriptedBackend

import tracesim

HEADER = "x-mlflow-experiment-id"


@pytest.fixture
def backend(monkeypatch: pytest.MonkeyPatch) -> Iterator[ScriptedBackend]:
    for name in (
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
        "OTEL_EXPORTER_OTLP_LOGS_HEADERS",
    ):
        monkeypatch.delenv(name, raising=False)
    server = ScriptedBackend()
    try:
        yield server
    finally:
        tracesim.shutdown(10)
        server.close()


def received(backend: ScriptedBackend, **settings: Any) -> dict[str, dict[str, str]]:
    """The headers of the first request of each signal, for one scored span."""
    tracesim.configure(
        exporters=["otlp"],
        otlp_endpoint=backend.base,
        spool_dir="none",
        metrics="none",
        phoenix_annotations=False,
        mlflow_assessments=False,
        **settings,
    )
    with tracesim.span("answer") as span:
        pass
    tracesim.score(span, name="user_rating", value=1.0)
    tracesim.force_flush(10)
    return {path: backend.headers[path][0] for path in ("/v1/traces", "/v1/logs")}


@pytest.mark.parametrize("variable", ["OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"])
def test_a_header_in_the_variables_wins_over_the_setting_also_with_otlp_headers(
    backend: ScriptedBackend, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, f"{HEADER}=7,x-team=a")
    headers = received(backend, mlflow_experiment_id="3", otlp_headers={"x-api-key": "k"})
    spans = headers["/v1/traces"]
    assert spans[HEADER] == "7"
    assert spans["x-api-key"] == "k"
    assert spans["x-team"] == "a"


def test_a_header_in_otlp_headers_wins_over_the_setting_and_the_variables(
    backend: ScriptedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"{HEADER}=7")
    headers = received(backend, mlflow_experiment_id="3", otlp_headers={HEADER: "5"})
    assert headers["/v1/traces"][HEADER] == "5"
    assert headers["/v1/logs"][HEADER] == "5"


def test_the_setting_fills_the_header_where_none_names_an_experiment(
    backend: ScriptedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=a")
    headers = received(backend, mlflow_experiment_id="3", otlp_headers={"x-api-key": "k"})
    for path in ("/v1/traces", "/v1/logs"):
        assert headers[path][HEADER] == "3"
        assert headers[path]["x-team"] == "a"
        assert headers[path]["x-api-key"] == "k"
