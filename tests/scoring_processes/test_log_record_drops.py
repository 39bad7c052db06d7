"""The results' log records that a full queue drops are counted, by the host and by its workers.

OpenTelemetry's batch processor drops a log record when its queue is full and counts it
nowhere a user reads. tracesim's queue of result records (`ResultLogQueue`) drops at its own
gate and counts: every record is either delivered or in ``scoring_stats().log_records_dropped``.
A real OTLP/HTTP backend on loopback (tests/scripted_backend.py) hangs its log requests to fill
the queue; the worker-process case uses real worker processes.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

import pytest
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import LogRecordExporter, LogRecordExportResult
from pool_test_evaluators import support_agent
from scripted_backend import ScriptedBackend

import tracesim
from tracesim._scoring._log_queue import ResultLogQueue


class Held(LogRecordExporter):
    """Takes batches only once ``open`` is set; counts the records it took."""

    def __init__(self) -> None:
        self.open = threading.Event()
        self.entered = threading.Event()  # a batch is being exported
        self.exported = threading.Event()  # one was
        self.records = 0

    def export(self, batch: Sequence[ReadableLogRecord]) -> LogRecordExportResult:
        self.entered.set()
        self.open.wait(30)
        self.records += len(batch)
        self.exported.set()
        return LogRecordExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return True

    def shutdown(self) -> None:
        pass


def test_every_record_is_delivered_or_counted_dropped_and_the_drop_is_said_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    exporter = Held()
    queue = ResultLogQueue(exporter, queue_size=8, name="the test exporter")
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(queue)
    logger = provider.get_logger("test")
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        for i in range(40):
            logger.emit(body=f"record {i}", event_name="gen_ai.evaluation.result")
    assert queue.dropped >= 40 - 8 - 8  # the gate's 8, and at most one batch (half of it) taken
    exporter.open.set()
    queue.close(10)
    assert exporter.records + queue.dropped == 40
    said = [record for record in caplog.records if "log records" in record.getMessage()]
    assert len(said) == 1
    assert "export_queue_size" in said[0].getMessage()
    assert "the test exporter" in said[0].getMessage()
    provider.shutdown()


def test_records_left_in_the_queue_at_its_deadline_are_counted(caplog: pytest.LogCaptureFixture) -> None:
    exporter = Held()
    queue = ResultLogQueue(exporter, queue_size=100, name="a backend that hangs")  # batches of 50
    provider = LoggerProvider(shutdown_on_exit=False)
    provider.add_log_record_processor(queue)
    logger = provider.get_logger("test")
    for i in range(50):
        logger.emit(body=f"record {i}")
    assert exporter.entered.wait(10)  # the first batch is with the exporter, which hangs
    for i in range(50, 60):
        logger.emit(body=f"record {i}")
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        queue.close(0.2)  # past its deadline: the ten still queued never reach the exporter
    assert queue.dropped == 10
    (said,) = [record.getMessage() for record in caplog.records]
    # nobody reads the counts after a shutdown: said, with the batch the exporter still holds
    assert "10 evaluation log records for a backend that hangs were still queued" in said
    assert "and 50 in an export that had not returned" in said
    logger.emit(body="after close")  # closed: dropped and counted, not queued
    assert queue.dropped == 11
    exporter.open.set()
    assert exporter.exported.wait(10)
    provider.shutdown()
    assert exporter.records == 50  # the batch that was with the exporter: delivered, not dropped


@pytest.fixture
def backend(scripted_backend: ScriptedBackend) -> ScriptedBackend:
    return scripted_backend


def _configured_with_logs_held(backend: ScriptedBackend, **more: Any) -> None:
    """Spans and log records to ``backend`` (no spool), which hangs its log requests."""
    backend.logs_open.clear()
    tracesim.configure(
        exporters=["otlp"],
        otlp_endpoint=backend.traces_url,
        phoenix_annotations=False,
        mlflow_assessments=False,
        spool_dir="none",
        **more,
    )


def _scored_with_logs_held(backend: ScriptedBackend, **more: Any) -> None:
    _configured_with_logs_held(backend, export_queue_size=20, **more)  # the records' queue fills
    agent = support_agent()
    for order in range(40):
        agent(order)
    # Scored, but the log records wait on the backend, in the host or in its worker: said.
    assert tracesim.force_flush(5) is False
    backend.logs_open.set()
    assert tracesim.force_flush(30)  # now every record that was kept is out


@pytest.mark.parametrize("where", ["threads", "a worker process"])
def test_a_full_queue_of_result_records_is_counted_in_scoring_stats(
    backend: ScriptedBackend, where: str
) -> None:
    more: dict[str, Any] = {"scoring_processes": 1, "scoring_export": "workers"} if where != "threads" else {}
    _scored_with_logs_held(backend, **more)
    stats = tracesim.scoring_stats()
    assert stats.results == 120  # three evaluators, 40 calls
    if where != "threads":
        assert stats.written_by_workers == 40  # the worker's queue dropped them, and said so
    assert stats.log_records_dropped > 0
    assert stats.log_records_dropped + len(backend.logs) == 120
    scored = [span for span in backend.spans if span.name == "support_agent"]
    # The span queue is as small (20): on the host's path a burst of scored spans overflows it
    # too, and those are counted where spans are. A worker sends its spans itself.
    dropped_spans = tracesim.export_stats().dropped if where == "threads" else 0
    assert len(scored) + dropped_spans == 40
    assert all(len(span.events) == 3 for span in scored)  # the span events keep every result


def test_what_a_worker_drops_as_it_closes_is_said_by_the_host(
    backend: ScriptedBackend, caplog: pytest.LogCaptureFixture
) -> None:
    # The worker closes after the host marked it gone: its last frame (the WARNING of records
    # still queued at its deadline) is still read and logged, not lost with the worker.
    _configured_with_logs_held(backend, scoring_processes=1, scoring_export="workers")
    agent = support_agent()
    for order in range(40):
        agent(order)
    assert tracesim.force_flush(2) is False  # the first batch of records hangs in the worker's exporter
    for order in range(40):
        agent(order)
    assert tracesim.force_flush(2) is False  # the rest wait behind it
    with caplog.at_level(logging.WARNING, logger="tracesim"):
        tracesim.shutdown(6)
    said = [r.getMessage() for r in caplog.records if "at the shutdown deadline" in r.getMessage()]
    assert len(said) == 1, said
    assert "(in scoring worker process " in said[0]
