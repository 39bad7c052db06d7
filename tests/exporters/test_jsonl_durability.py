"""The local trace file when the disk fills up or the path goes bad: nothing reported written is
lost, no torn or glued line, one log line per cause. Real short writes (a file size limit in a
subprocess, a small tmpfs), a real /dev/full, real directories."""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from _disk import (
    SPANS_SETUP_HEAD,
    assert_nothing_lost,
    fill_then_free,
    mount_tmpfs,
    run_with_file_size_limit,
    small_tmpfs,
    umount,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tracesim.exporters import JsonlExporter, _jsonl
from tracesim.tracefile import load_spans, read_jsonl

Spans = Callable[..., list[ReadableSpan]]


@pytest.fixture
def spans() -> Iterator[Spans]:
    """One finished span named ``name``, carrying ``payload`` bytes of attribute, per call."""
    memory = InMemorySpanExporter()
    provider = TracerProvider(resource=Resource.create({"service.name": "durability"}))
    provider.add_span_processor(SimpleSpanProcessor(memory))
    tracer = provider.get_tracer("tests")

    def make(name: str, payload: int = 300) -> list[ReadableSpan]:
        memory.clear()
        with tracer.start_as_current_span(name, attributes={"payload": "x" * payload}):
            pass
        return list(memory.get_finished_spans())

    yield make
    provider.shutdown()


def _read_strictly(path: Path) -> list[str]:
    """Span names in the file; any torn, glued or unreadable line fails the test."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return [s.name for s in load_spans(path)]


_SPANS_SETUP = (
    SPANS_SETUP_HEAD
    + """
def batch(name):
    memory.clear()
    with tracer.start_as_current_span(name, attributes={"payload": "x" * 300}):
        pass
    return memory.get_finished_spans()

line_bytes = len(encode_line(batch("full-00")))
"""
)


def test_a_short_write_is_cut_back_and_retried_when_space_returns(tmp_path: Path) -> None:
    result, stderr = run_with_file_size_limit(tmp_path, _SPANS_SETUP)
    assert result["flushed"] is True
    # and what waited in memory while the file was "full" was written once space returned
    names = _read_strictly(tmp_path / "traces.jsonl")
    assert_nothing_lost(names, result["written"], set(result["written"] + result["failed"]))
    assert stderr.count("cannot write spans") == 1  # once per cause, no traceback
    assert "Traceback" not in stderr
    assert stderr.count("works again") == 1


def test_a_full_tmpfs_loses_nothing_reported_written(
    tmp_path: Path, spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    with small_tmpfs(tmp_path / "disk") as disk:
        exporter = JsonlExporter(disk / "traces.jsonl")
        try:
            with caplog.at_level(logging.INFO, logger="tracesim"):
                written, failed = fill_then_free(
                    disk, lambda name: exporter.export(spans(name, payload=2500)) is SpanExportResult.SUCCESS
                )
                assert exporter.force_flush()
            exporter.shutdown()
            names = _read_strictly(disk / "traces.jsonl")
        finally:
            exporter.shutdown()  # closes the file, or the tmpfs stays busy
    assert_nothing_lost(names, written, {*written, *failed, "after0", "after1", "after2"})
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].exc_info is None
    assert "No space left" in errors[0].getMessage()
    assert len([r for r in caplog.records if "works again" in r.getMessage()]) == 1


def test_dev_full_logs_one_error_and_keeps_a_bounded_backlog(
    spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("needs /dev/full")
    exporter = JsonlExporter("/dev/full", backlog_bytes=4096)
    with caplog.at_level(logging.INFO, logger="tracesim"):
        results = [exporter.export(spans(f"s{i}", payload=1000)) for i in range(10)]
        assert exporter.force_flush() is False
        exporter.shutdown()
    assert results == [SpanExportResult.FAILURE] * 10
    assert exporter.dropped == 10  # the backlog kept the newest few until shutdown, then gave up
    problems = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.exc_info for r in problems] == [None] * len(problems)  # no tracebacks
    messages = [r.getMessage() for r in problems]
    assert len([m for m in messages if "cannot write spans" in m]) == 1
    assert len([m for m in messages if "dropping the oldest" in m]) == 1
    assert any("could not be written" in m and "are lost" in m for m in messages)


def test_a_missing_directory_that_cannot_be_recreated_logs_once_then_recovers(
    tmp_path: Path, spans: Spans, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "traces"
    exporter = JsonlExporter(folder / "t.jsonl")
    assert exporter.export(spans("before")) is SpanExportResult.SUCCESS
    with caplog.at_level(logging.INFO, logger="tracesim"):
        shutil.rmtree(folder)
        folder.write_text("")  # a file where the directory was: it cannot be recreated
        waiting = [exporter.export(spans(f"waiting{i}")) for i in range(3)]
        assert exporter.pending == 3
        folder.unlink()  # now the exporter can recreate it
        assert exporter.export(spans("after")) is SpanExportResult.SUCCESS
    exporter.shutdown()
    assert waiting == [SpanExportResult.FAILURE] * 3
    assert _read_strictly(folder / "t.jsonl") == ["waiting0", "waiting1", "waiting2", "after"]
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1
    assert errors[0].exc_info is None
    assert len([r for r in caplog.records if "works again" in r.getMessage()]) == 1


def test_check_writable_names_what_is_wrong_without_writing(tmp_path: Path) -> None:
    assert _jsonl.check_writable(tmp_path) == f"{tmp_path} is a directory"
    blocker = tmp_path / "blocker"
    blocker.write_text("not a directory")
    problem = _jsonl.check_writable(blocker / "sub" / "t.jsonl")
    assert problem is not None
    assert "not a directory" in problem
    assert str(blocker) in problem
    existing = tmp_path / "existing.jsonl"
    existing.write_text("kept\n")
    assert _jsonl.check_writable(existing) is None
    assert existing.read_text() == "kept\n"
    assert _jsonl.check_writable(tmp_path / "new" / "deeper" / "t.jsonl") is None
    assert not (tmp_path / "new").exists()  # checking creates nothing


def test_check_writable_finds_a_read_only_directory(tmp_path: Path) -> None:
    frozen = tmp_path / "frozen"
    frozen.mkdir()
    if os.geteuid() == 0:
        mount_tmpfs(frozen, "ro,size=64k")  # root writes through permission bits
    else:
        frozen.chmod(0o500)
    try:
        problem = _jsonl.check_writable(frozen / "t.jsonl")
        assert problem is not None
        assert "not writable" in problem
        assert str(frozen) in problem
    finally:
        if os.geteuid() == 0:
            umount(frozen)
        else:
            frozen.chmod(0o700)


_FORK = r"""
import json, os, shutil
from tracesim.exporters._linefile import LineFile

lines = LineFile("d/t.jsonl")

def line(name):
    return (json.dumps({"name": name}) + "\n").encode()

assert lines.append(line("parent-first"))
shutil.rmtree("d")
open("d", "w").close()  # a file where the directory was: the next line waits in memory
assert not lines.append(line("parent-waiting"))
os.remove("d")  # and now it can be written
pid = os.fork()
if pid == 0:
    ok = lines.append(line("child"))
    print(json.dumps({"child": [ok, lines.pending, lines.dropped]}), flush=True)
    lines.close()
    os._exit(0)
_, status = os.waitpid(pid, 0)
assert status == 0, status
assert lines.pending == 1
assert lines.append(line("parent-after"))
lines.close()
"""


def test_a_forked_child_writes_its_own_lines_not_the_parents_waiting_ones(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", _FORK], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"child": [True, 0, 0]}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        names = [line["name"] for line in read_jsonl(tmp_path / "d" / "t.jsonl")]
    # the line waiting in the parent's memory is written once, by the parent
    assert names == ["child", "parent-waiting", "parent-after"]
