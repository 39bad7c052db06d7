"""Metrics over OTLP/HTTP beside the spans, and silence where the backend does not take them."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from loopback_http import LoopbackHTTP, QuietHandler
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

import tracesim
from tracesim.evaluators import ExactMatch


class Backend:
    """Takes spans on /v1/traces; answers ``metrics_status`` on /v1/metrics and records the requests."""

    def __init__(self, metrics_status: int) -> None:
        self.metrics_status = metrics_status
        self.requests: list[tuple[str, bytes]] = []
        backend = self

        class Handler(QuietHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                backend.requests.append((self.path, body))
                status = backend.metrics_status if self.path == "/v1/metrics" else 200
                self.reply(status, "application/x-protobuf")

        self._http = LoopbackHTTP(Handler)

    @property
    def url(self) -> str:
        return self._http.base

    def metric_names(self) -> set[str]:
        names = set()
        for path, body in self.requests:
            if path == "/v1/metrics":
                request = ExportMetricsServiceRequest()
                request.ParseFromString(body)
                names |= {
                    m.name for rm in request.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
                }
        return names

    def close(self) -> None:
        self._http.close()


@pytest.fixture
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    server = Backend(request.param)
    yield server
    server.close()


def _scored_call() -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def answer() -> str:
        return "ok"

    answer()


@pytest.mark.parametrize("backend", [200], indirect=True)
def test_metrics_go_beside_otlp_spans_by_default(backend: Backend) -> None:
    tracesim.configure(exporters=["otlp"], otlp_endpoint=backend.url)
    _scored_call()
    assert tracesim.force_flush(10)
    assert {"/v1/traces", "/v1/metrics"} <= {path for path, _ in backend.requests}
    assert {"tracesim.evaluation.results", "tracesim.evaluation.score"} <= backend.metric_names()
    tracesim.shutdown()  # while the backend still answers


@pytest.mark.parametrize("backend", [404], indirect=True)
def test_a_backend_without_metrics_is_told_once_then_left_alone(
    backend: Backend, caplog: pytest.LogCaptureFixture
) -> None:
    tracesim.configure(exporters=["otlp"], otlp_endpoint=backend.url)
    with caplog.at_level(logging.INFO, logger="tracesim"):
        _scored_call()
        assert tracesim.force_flush(10)
        _scored_call()
        assert tracesim.force_flush(10)
        tracesim.shutdown()
    assert [path for path, _ in backend.requests].count("/v1/metrics") == 1
    said = [r for r in caplog.records if "/v1/metrics" in r.getMessage()]
    assert len(said) == 1
    assert said[0].levelno == logging.INFO  # on by default, not asked for: no warning
