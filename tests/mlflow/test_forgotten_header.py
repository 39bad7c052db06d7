"""The forgotten header: spans sent to MLflow without an experiment give one line naming it."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.trace import SpanContext

import tracesim


def test_spans_to_mlflow_without_an_experiment_give_one_line_naming_the_header(
    mlflow_server: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tracesim.configure(exporters=["otlp"], otlp_endpoint=mlflow_server.url, spool_dir=tmp_path / "spool")
    seen: list[SpanContext] = []

    @tracesim.trace(evaluators=["exact"], expected="Warsaw")
    def answer(question: str) -> str:
        seen.append(tracesim.current_span().span_context)
        return "Warsaw"

    with caplog.at_level(logging.INFO):
        for question in ("Where was Curie born?", "Capital of Poland?", "Largest Polish city?"):
            answer(question)
            tracesim.force_flush(30)  # each batch refused alike
        tracesim.shutdown(30)
    said = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(said) == 1, said  # one line, whatever the number of batches; nothing else complains
    assert "x-mlflow-experiment-id" in said[0]
    assert "mlflow_experiment_id" in said[0]  # and what to set
    # nothing delivered: MLflow has none of the traces
    found = mlflow_server.read_assessments([f"tr-{c.trace_id:032x}" for c in seen])
    assert set(found.values()) == {None}
