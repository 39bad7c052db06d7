"""When tracesim sends assessments, where, and what it says when it cannot.

Against the scripted OTLP endpoint (``tests/otlp_sink.py``, some other collector) and a
scripted edge that answers as MLflow's assessments API does (a 404 "not found" while the
trace is not ingested, a 401 without credentials): the answers a real server gives only with
authentication or timing that a test cannot arrange.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from opentelemetry.trace import SpanContext

import tracesim
from tracesim import _runtime
from tracesim.evaluators import EvalResult
from tracesim.exporters import Redaction
from tracesim.exporters._mlflow import MlflowSink


def _mlflow_sinks() -> list[MlflowSink]:
    runtime = _runtime.current
    assert runtime is not None
    return [s for s in runtime.sinks if isinstance(s, MlflowSink)]


def test_an_otlp_endpoint_that_is_not_mlflow_gets_no_assessments_and_one_info_line(
    sink: Any, caplog: pytest.LogCaptureFixture
) -> None:
    tracesim.configure(
        exporters=["otlp"],
        otlp_endpoint=sink.url,  # a collector that takes spans and nothing else
        mlflow_experiment_id="0",
        spool_dir="none",
        metrics="none",
        evaluation_log_events=False,
    )

    @tracesim.trace(evaluators=["exact"], expected="Warsaw")
    def answer() -> str:
        return "Warsaw"

    with caplog.at_level(logging.INFO, logger="tracesim"):
        answer()
        assert tracesim.force_flush(30)
        answer()
        assert tracesim.force_flush(30)
    (mlflow,) = _mlflow_sinks()
    assert mlflow.is_mlflow is False
    assert mlflow.stats.submitted == mlflow.stats.sent == 0  # never meant for anyone
    said = [r.getMessage() for r in caplog.records if "is not MLflow" in r.getMessage()]
    assert len(said) == 1
    assert "mlflow_assessments=false" in said[0]
    assert sink.delivered_names.count("answer") == 2  # the spans went on as ever


def test_assessments_true_with_no_way_to_mlflow_names_the_setting() -> None:
    with pytest.raises(tracesim.ConfigError, match="mlflow_url"):
        tracesim.configure(exporters=["jsonl"], mlflow_assessments=True)
    with pytest.raises(tracesim.ConfigError, match="mlflow_experiment_id"):
        tracesim.configure(exporters=["otlp"], otlp_endpoint="http://127.0.0.1:9", mlflow_assessments=True)


def test_without_an_experiment_spans_never_reach_mlflow_and_no_sink_waits_for_them() -> None:
    tracesim.configure(exporters=["otlp"], otlp_endpoint="http://127.0.0.1:9", spool_dir="none")
    assert _mlflow_sinks() == []
    tracesim.configure(
        exporters=["otlp"],
        otlp_endpoint="http://127.0.0.1:9",
        otlp_headers={"X-MLflow-Experiment-Id": "3"},  # the header given by hand counts too
        spool_dir="none",
    )
    (mlflow,) = _mlflow_sinks()
    assert mlflow.is_mlflow is None  # asked on first use


def test_a_named_mlflow_url_needs_no_otlp() -> None:
    tracesim.configure(exporters=["jsonl"], mlflow_url="http://127.0.0.1:9")
    (mlflow,) = _mlflow_sinks()
    assert mlflow.is_mlflow is True  # named: not asked
    tracesim.configure(exporters=["jsonl"], mlflow_url="http://127.0.0.1:9", mlflow_assessments=False)
    assert _mlflow_sinks() == []


# ---------------------------------------------------------------- MLflow's answers, scripted


class _Edge:
    """Answers ``server-info`` as MLflow does, and each assessment POST with ``script`` in turn."""

    def __init__(self) -> None:
        self.script: list[tuple[int, dict[str, Any]]] = []
        self.posted: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.lock = threading.Lock()
        edge = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _send(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/api/3.0/mlflow/server-info":
                    self._send(200, {"store_type": "SqlStore", "workspaces_enabled": False})
                else:
                    self._send(404, {"error_code": "ENDPOINT_NOT_FOUND"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with edge.lock:
                    edge.paths.append(self.path)
                    status, answer = edge.script.pop(0) if edge.script else (200, {"assessment": {}})
                    if status == 200:
                        edge.posted.append(body["assessment"])
                self._send(status, answer)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


@pytest.fixture
def edge() -> Iterator[_Edge]:
    server = _Edge()
    try:
        yield server
    finally:
        server.server.shutdown()
        server.server.server_close()


TARGET = SpanContext(0x94C4878C0D7E4C30A1B2C3D4E5F60718, 0xFDF8DC0D60CAF975, is_remote=True)
NOT_YET = (404, {"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "Trace with ID 'tr-94c4' not found."})


def test_a_trace_not_ingested_yet_is_waited_for(edge: _Edge) -> None:
    edge.script = [NOT_YET, NOT_YET]
    mlflow = MlflowSink(edge.url, None, Redaction(), detect=True)
    mlflow.submit(TARGET, EvalResult(name="exact", score=1.0, passed=True), "CODE", expected="Warsaw")
    assert mlflow.shutdown(30)
    stats = mlflow.stats
    assert (stats.submitted, stats.sent, stats.failed, stats.pending) == (2, 2, 0, 0)
    assert len(edge.paths) == 4  # two answered "not found", then both taken
    assert set(edge.paths) == {"/api/3.0/mlflow/traces/tr-94c4878c0d7e4c30a1b2c3d4e5f60718/assessments"}
    assert [a["assessment_name"] for a in edge.posted] == ["exact", "expected_response"]
    assert {a["span_id"] for a in edge.posted} == {"fdf8dc0d60caf975"}


def test_a_refusal_retrying_cannot_fix_is_said_once_naming_what_to_change(
    edge: _Edge, caplog: pytest.LogCaptureFixture
) -> None:
    refused = (401, {"error_code": "UNAUTHENTICATED", "message": "You are not authenticated."})
    edge.script = [refused, refused, refused]
    mlflow = MlflowSink(edge.url, None, Redaction())
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        for name in ("a", "b", "c"):
            mlflow.submit(TARGET, EvalResult(name=name, score=1.0), "CODE")
        assert mlflow.force_flush(30)  # nothing left to wait for: given up at once, not retried
    stats = mlflow.stats
    assert (stats.sent, stats.failed, stats.pending) == (0, 3, 0)
    assert len(edge.paths) == 3
    (said,) = [r.getMessage() for r in caplog.records]
    assert "HTTP 401: You are not authenticated." in said
    assert "MLFLOW_TRACKING_TOKEN" in said
    mlflow.shutdown(5)
