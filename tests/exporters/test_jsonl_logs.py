"""The local evaluation log file (``<trace file>.logs.jsonl``) is as durable as the trace file:
one OTLP/JSON logs request per line, rotation by size, and when the disk refuses data nothing
reported written is lost, no torn or glued line, one log line per cause. Real short writes (a
file size limit in a subprocess, a small tmpfs), a real /dev/full."""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _disk import assert_nothing_lost, fill_then_free, run_with_file_size_limit, small_tmpfs
from opentelemetry.proto_json.collector.logs.v1.logs_service import ExportLogsServiceRequest
from opentelemetry.sdk._logs import LoggerProvider, ReadableLogRecord
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter,
    LogRecordExportResult,
    SimpleLogRecordProcessor,
)
from opentelemetry.sdk.resources import Resource

from tracesim.exporters._jsonl_logs import JsonlLogExporter
from tracesim.tracefile import read_jsonl, rotated_files

Records = Callable[..., list[ReadableLogRecord]]
SUCCESS = LogRecordExportResult.SUCCESS
FAILURE = LogRecordExportResult.FAILURE


@pytest.fixture
def records() -> Iterator[Records]:
    """One evaluation log record whose body is ``name``, carrying ``payload`` bytes, per call."""
    memory = InMemoryLogRecordExporter()
    resource = Resource.create({"service.name": "durability"})
    provider = LoggerProvider(resource=resource, shutdown_on_exit=False)
    provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
    logger = provider.get_logger("tests")

    def make(name: str, payload: int = 300) -> list[ReadableLogRecord]:
        memory.clear()
        logger.emit(body=name, event_name="gen_ai.evaluation.result", attributes={"payload": "x" * payload})
        return list(memory.get_finished_logs())

    yield make
    provider.shutdown()


def _read_strictly(path: Path) -> list[str]:
    """Record bodies in the file, each line read by the official OTLP/JSON logs model; any torn,
    glued or unreadable line fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        requests = [ExportLogsServiceRequest.from_dict(line) for line in read_jsonl(path)]
    return [
        record.body.string_value
        for request in requests
        for resource_logs in request.resource_logs
        for scope_logs in resource_logs.scope_logs
        for record in scope_logs.log_records
        if record.body is not None and record.body.string_value is not None
    ]


def test_each_batch_is_one_otlp_json_logs_request_per_line(tmp_path: Path, records: Records) -> None:
    path = tmp_path / "deeper" / "t.logs.jsonl"
    exporter = JsonlLogExporter(path)
    assert [exporter.export(records(name)) for name in ("a", "b", "c")] == [SUCCESS] * 3
    assert exporter.export([]) is SUCCESS
    exporter.shutdown()
    assert exporter.export(records("late")) is FAILURE  # closed: refused, not half done
    assert len(path.read_bytes().splitlines()) == 3
    assert _read_strictly(path) == ["a", "b", "c"]
    (request,) = list(read_jsonl(path))[:1]
    (record,) = request["resourceLogs"][0]["scopeLogs"][0]["logRecords"]
    assert record["eventName"] == "gen_ai.evaluation.result"


def test_the_log_file_rotates_by_size_and_keeps_a_bounded_number_of_backups(
    tmp_path: Path, records: Records
) -> None:
    path = tmp_path / "t.logs.jsonl"
    exporter = JsonlLogExporter(path, max_bytes=4096, backups=2)
    for i in range(100):
        assert exporter.export(records(f"r{i:03d}", payload=200)) is SUCCESS
    exporter.shutdown()
    files = rotated_files(path, 2)
    assert [f.name for f in files] == ["t.logs.jsonl", "t.logs.1.jsonl", "t.logs.2.jsonl"]
    assert all(f.exists() and f.stat().st_size <= 4096 for f in files)
    assert not path.with_name("t.logs.3.jsonl").exists()
    names = [name for f in reversed(files) for name in _read_strictly(f)]
    # the newest records survive, in order, without gaps
    assert 10 < len(names) < 100
    assert names == [f"r{i:03d}" for i in range(100 - len(names), 100)]


_LOGS_SETUP = """
import json
from opentelemetry.exporter.otlp.json.common._log_encoder import encode_logs
from opentelemetry.sdk._logs import LoggerProvider
from opentelemetry.sdk._logs.export import (
    InMemoryLogRecordExporter, LogRecordExportResult, SimpleLogRecordProcessor,
)
from tracesim.exporters._jsonl_logs import JsonlLogExporter

memory = InMemoryLogRecordExporter()
provider = LoggerProvider(shutdown_on_exit=False)
provider.add_log_record_processor(SimpleLogRecordProcessor(memory))
logger = provider.get_logger("t")

def batch(name):
    memory.clear()
    logger.emit(body=name, event_name="gen_ai.evaluation.result", attributes={"payload": "x" * 300})
    return memory.get_finished_logs()

exporter = JsonlLogExporter("traces.logs.jsonl")
SUCCESS = LogRecordExportResult.SUCCESS
line_bytes = len(json.dumps(encode_logs(batch("full-00")).to_dict(), separators=(",", ":"))) + 1
"""


def test_a_short_write_is_cut_back_and_retried_when_space_returns(tmp_path: Path) -> None:
    result, stderr = run_with_file_size_limit(tmp_path, _LOGS_SETUP)
    assert result["flushed"] is True
    # and what waited in memory while the file was "full" was written once space returned
    names = _read_strictly(tmp_path / "traces.logs.jsonl")
    assert_nothing_lost(names, result["written"], set(result["written"] + result["failed"]))
    assert stderr.count("cannot write evaluation log records") == 1  # once per cause
    assert "Traceback" not in stderr
    assert stderr.count("works again") == 1


def test_a_full_tmpfs_loses_nothing_reported_written(
    tmp_path: Path, records: Records, caplog: pytest.LogCaptureFixture
) -> None:
    with small_tmpfs(tmp_path / "disk") as disk:
        exporter = JsonlLogExporter(disk / "traces.logs.jsonl")
        try:
            with caplog.at_level(logging.INFO, logger="tracesim"):
                written, failed = fill_then_free(
                    disk, lambda name: exporter.export(records(name, payload=2500)) is SUCCESS
                )
                assert exporter.force_flush()
                assert exporter.pending == 0
            exporter.shutdown()
            names = _read_strictly(disk / "traces.logs.jsonl")
        finally:
            exporter.shutdown()  # closes the file, or the tmpfs stays busy
    assert_nothing_lost(names, written, {*written, *failed, "after0", "after1", "after2"})
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].exc_info is None  # no traceback per failed export
    assert "cannot write evaluation log records" in errors[0].getMessage()
    assert "No space left" in errors[0].getMessage()
    assert len([r for r in caplog.records if "works again" in r.getMessage()]) == 1


def test_dev_full_logs_one_error_and_keeps_a_bounded_backlog(
    records: Records, caplog: pytest.LogCaptureFixture
) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    exporter = JsonlLogExporter("/dev/full", backlog_bytes=4096)
    with caplog.at_level(logging.INFO, logger="tracesim"):
        results = [exporter.export(records(f"r{i}", payload=1000)) for i in range(10)]
        assert 0 < exporter.pending < 10  # the newest few, within backlog_bytes
        assert exporter.force_flush() is False
        exporter.shutdown()
    assert results == [FAILURE] * 10
    assert exporter.dropped == 10  # the backlog kept the newest few until shutdown, then gave up
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.exc_info for r in problems] == [None] * len(problems)
    messages = [r.getMessage() for r in problems]
    assert len([m for m in messages if "cannot write evaluation log records" in m]) == 1
    assert len([m for m in messages if "dropping the oldest" in m]) == 1
    assert any("could not be written" in m and "are lost" in m for m in messages)
