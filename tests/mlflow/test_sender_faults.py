"""The assessment sender when things go wrong: a server that never answers, a fork, a wrong URL,
a trace that never comes, and what it leaves in the user's logs.

Against the real MLflow server where its own answers matter (a missing trace, an unknown
route); against a socket that accepts and never answers where no server could be arranged to.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tracesim.batch._replay_annotations import results_in
from tracesim.evaluators import EvalResult
from tracesim.exporters import Redaction
from tracesim.exporters._mlflow import MlflowAssessmentSender, MlflowSink, _result_id, mlflow_trace_id

_FEEDBACK = {"assessment_name": "exact", "feedback": {"value": 1.0}}


def _no_trace() -> str:
    return "tr-" + uuid.uuid4().hex


@pytest.fixture
def silent() -> Iterator[tuple[str, list[socket.socket]]]:
    """A server that accepts connections and never answers; its held connections."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                connection, _ = server.accept()
            except OSError:
                return
            held.append(connection)

    threading.Thread(target=accept, daemon=True).start()
    yield f"http://127.0.0.1:{server.getsockname()[1]}", held
    server.close()
    for connection in held:
        connection.close()


def test_shutdown_leaves_a_hung_request_to_its_worker_logs_no_traceback_and_counts_add_up(
    silent: tuple[str, list[socket.socket]], caplog: pytest.LogCaptureFixture
) -> None:
    url, held = silent
    sender = MlflowAssessmentSender(url, timeout_s=120.0, schedule_delay_s=600.0)  # one batch, at shutdown
    for index in range(3):
        sender.submit(_no_trace(), _FEEDBACK, f"r{index}")
    with caplog.at_level(logging.INFO):
        assert sender.shutdown(0.3) is False
        worker = sender._worker
        assert worker is not None
        # Shutdown did not wait for the request that never returns (120 s), nor close its client under it.
        assert worker.is_alive()
        for connection in held:  # the server goes away: the request fails at once
            connection.close()
        worker.join(60)
    assert not worker.is_alive()
    stats = sender.stats
    assert (stats.submitted, stats.sent, stats.failed, stats.pending) == (3, 0, 3, 0)
    assert stats.submitted == stats.sent + stats.dropped + stats.failed + stats.pending
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR or r.exc_info]
    assert sender._client.is_closed  # the worker closed it on its way out


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
def test_a_forked_child_starts_with_an_empty_queue_and_zero_counters(tmp_path: Path) -> None:
    code = """
import json, os
from tracesim.exporters._mlflow import MlflowAssessmentSender
from tracesim.exporters._phoenix import PhoenixAnnotationSink

mlflow = MlflowAssessmentSender("http://127.0.0.1:9", schedule_delay_s=600)
phoenix = PhoenixAnnotationSink("http://127.0.0.1:9", schedule_delay_s=600)
for i in range(5):
    mlflow.submit("tr-" + "ab" * 16, {"assessment_name": f"a{i}", "feedback": {"value": 1.0}}, f"p{i}")
    phoenix.submit("a1b2c3d4e5f60718", f"a{i}", score=1.0, label=None, explanation=None)
read, write = os.pipe()
pid = os.fork()
if pid == 0:
    counts = [list(vars(mlflow.stats).values()), list(vars(phoenix.stats).values())]
    os.write(write, json.dumps(counts).encode())
    os._exit(0)
os.waitpid(pid, 0)
print(os.read(read, 4096).decode())
print(json.dumps([mlflow.stats.pending, phoenix.stats.pending]))
mlflow.shutdown(0.1); phoenix.shutdown(0.1)
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
    result = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    child, parent = (json.loads(line) for line in result.stdout.splitlines())
    assert child == [[0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 0]]  # the parent's five are the parent's to send
    assert parent == [5, 5]


def test_an_llm_judges_result_has_the_same_id_online_and_replayed_and_its_source_is_in_the_file() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tracesim._capture import make_options
    from tracesim._scoring._results import write
    from tracesim.exporters._jsonl import encode_line

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    result = EvalResult(name="judge", score=1.0, details={"model": "judge-model-1"}, explanation="ok")
    with provider.get_tracer("t").start_as_current_span("answer") as span:
        write(span, result, make_options(True, 1000), None, annotator_kind="LLM")
    request = json.loads(encode_line(exporter.get_finished_spans()))
    sink = MlflowSink("http://127.0.0.1:9", None, Redaction())
    (target, replayed, annotator, _expected) = next(iter(results_in(request)))
    assert annotator == "LLM"
    online = sink.feedback(target, result, "LLM")
    again = sink.feedback(target, replayed, annotator)
    assert again["source"] == online["source"] == {"source_type": "LLM_JUDGE", "source_id": "judge-model-1"}
    trace_id = mlflow_trace_id(target.trace_id)
    # A file written before the kind was recorded replays as CODE: still the same assessment's id.
    as_code = sink.feedback(target, replayed, "CODE")
    assert _result_id(trace_id, as_code) == _result_id(trace_id, online)
    sink.shutdown(0.1)
    provider.shutdown()


def test_a_wrong_mlflow_url_is_said_once_naming_the_setting_not_waited_on(
    mlflow_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sender = MlflowAssessmentSender(
        mlflow_server.url + "/no/such/prefix", max_wait_for_span_s=600, schedule_delay_s=0.0
    )
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        for index in range(3):
            sender.submit(_no_trace(), _FEEDBACK, f"r{index}")
        assert sender.force_flush(60)  # nothing left waiting: a route that does not exist is no delay
    stats = sender.stats
    assert (stats.failed, stats.pending) == (3, 0)
    said = [r.getMessage() for r in caplog.records if "mlflow_url" in r.getMessage()]
    assert len(said) == 1
    assert "prefix" in said[0]
    sender.shutdown(1)


def test_a_missing_trace_is_still_waited_for(mlflow_server: Any) -> None:
    sender = MlflowAssessmentSender(mlflow_server.url, max_wait_for_span_s=600, schedule_delay_s=0.0)
    sender.submit(_no_trace(), _FEEDBACK, "r")
    assert sender.force_flush(1.0) is False  # MLflow's own "no such trace": retried, not refused
    assert sender.stats.pending == 1
    sender.shutdown(0.1)


def test_when_mlflow_has_none_of_the_traces_the_wait_is_cut_short(
    mlflow_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sender = MlflowAssessmentSender(
        mlflow_server.url, max_wait_for_span_s=600, give_up_after_s=0.2, schedule_delay_s=0.0
    )
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        for index in range(4):
            sender.submit(_no_trace(), _FEEDBACK, f"r{index}")
        assert sender.force_flush(120)  # not 600 s each
    stats = sender.stats
    assert (stats.submitted, stats.failed, stats.pending) == (4, 4, 0)
    said = [r.getMessage() for r in caplog.records if "are not reaching it" in r.getMessage()]
    assert len(said) == 1
    sender.shutdown(1)


def test_httpx_request_lines_are_left_out_for_the_sender_only(
    mlflow_server: Any, caplog: pytest.LogCaptureFixture
) -> None:
    sender = MlflowAssessmentSender(mlflow_server.url, max_wait_for_span_s=0.1, schedule_delay_s=0.0)
    with caplog.at_level(logging.INFO, logger="httpx"):
        sender.submit(_no_trace(), _FEEDBACK, "r")
        sender.force_flush(30)
        assert sender.stats.failed == 1  # it did ask MLflow
        assert not [r for r in caplog.records if r.name == "httpx"]
        httpx.get(mlflow_server.url + "/health")  # the user's own call logs as ever
    assert [r for r in caplog.records if r.name == "httpx" and "HTTP Request" in r.getMessage()]
    sender.shutdown(1)
