"""Spans dropped at the export queue are counted, warned about once, and shown by ``tracesim report``.

Issue 23, item 6: a traced CPU loop overflowed OpenTelemetry's 2,048-span queue and lost a
third of its spans (1 thread) or most of them (4 threads) with one ``Queue full`` log line and
no count. The exporter here is a real trace file behind a gate: while the gate is shut its
writes wait, as on a disk that stopped taking data, so the queue overflows for certain and
the counts can be checked exactly.
"""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest
from opentelemetry import context as otel_context
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

import tracesim
from tracesim.cli import main
from tracesim.exporters import ConsoleExporter, JsonlExporter
from tracesim.tracefile import load_spans

RECORD = "tracesim.export.dropped"
COUNT = "tracesim.export.dropped_spans"
NOTE = re.compile(r"([\d,]+) spans? (?:was|were) dropped at the export queue \(see export_queue_size\)")
CEILING_S = 60.0  # only a hang gets near this
RunPython = Callable[..., "subprocess.CompletedProcess[str]"]


class GatedFile(SpanExporter):
    """A trace file whose writes wait while ``gate`` is shut: a disk that stopped taking data.

    ``inner`` puts another exporter behind the gate (a console) instead of the file at ``path``.
    """

    def __init__(self, path: Path, inner: SpanExporter | None = None) -> None:
        self.file = inner if inner is not None else JsonlExporter(path)
        self.gate = threading.Event()
        self.gate.set()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.gate.wait(CEILING_S)
        return self.file.export(spans)

    def force_flush(self, timeout_millis: int = 30_000) -> bool:
        return self.file.force_flush(timeout_millis)

    def shutdown(self) -> None:
        self.gate.set()
        self.file.shutdown()


@tracesim.trace
def step(i: int) -> int:
    return i * i


def _loop(calls: int, threads: int) -> None:
    """``calls`` traced calls on each of ``threads`` threads, as fast as they go."""

    def run() -> None:
        for i in range(calls):
            step(i)

    workers = [threading.Thread(target=run) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(CEILING_S)


def _in_file(path: Path) -> tuple[int, int, int]:
    """Spans of the application in the file, records of drops, and the drops they add up to."""
    spans = load_spans(path)
    records = [s for s in spans if s.name == RECORD]
    return len(spans) - len(records), len(records), sum(int(r.attributes[COUNT]) for r in records)


def _queue_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    messages = [r.getMessage() for r in caplog.records if r.name == "tracesim"]
    return [m for m in messages if "export queue" in m]


@pytest.mark.parametrize("threads", [1, 4])
def test_every_span_the_full_queue_drops_is_counted_warned_once_and_reported(
    threads: int, tmp_path: Path, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
) -> None:
    caplog.set_level(logging.WARNING, logger="tracesim")
    path = tmp_path / "traces.jsonl"
    exporter = GatedFile(path)
    tracesim.configure(exporters=[exporter], export_queue_size=8, scoring_mode="off")
    calls = 300
    produced = 0
    for _ in range(2):  # two overflows: one warning
        exporter.gate.clear()
        _loop(calls, threads)
        produced += calls * threads
        exporter.gate.set()
        assert tracesim.force_flush(timeout_s=CEILING_S)

    stats = tracesim.export_stats()
    assert stats.dropped > 0
    assert stats.dropped == produced - stats.exported
    assert stats.enqueued == stats.exported  # flushed: nothing left in the queue
    assert stats.recorded == stats.dropped  # every drop went to the file in a record
    warnings = _queue_warnings(caplog)
    assert len(warnings) == 1
    assert "export_queue_size=8" in warnings[0]
    assert "TRACESIM_EXPORT_QUEUE_SIZE" in warnings[0]

    tracesim.shutdown()
    spans, records, recorded = _in_file(path)
    assert spans == stats.exported
    assert recorded == stats.dropped
    assert records >= 1

    assert main(["report", str(path), "--json"]) == 0
    totals = json.loads(capsys.readouterr().out)["totals"]
    assert (totals["spans"], totals["traces"], totals["export_dropped"]) == (spans, spans, stats.dropped)
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert f"{stats.dropped:,} spans were dropped before reaching the files" in out
    assert "export_queue_size" in out


def _overflow(exporter: GatedFile, calls: int = 300) -> tuple[int, int]:
    """``calls`` traced calls through a queue of 8 while ``exporter`` is shut: (exported, dropped)."""
    tracesim.configure(exporters=[exporter], export_queue_size=8, scoring_mode="off")
    exporter.gate.clear()
    _loop(calls, 1)
    exporter.gate.set()
    assert tracesim.force_flush(timeout_s=CEILING_S)
    stats = tracesim.export_stats()
    assert stats.dropped > 0
    assert stats.recorded == stats.dropped  # flushed: every drop is in a record
    tracesim.shutdown()
    return stats.exported, stats.dropped


@pytest.mark.parametrize(
    ("options", "shown"), [((), None), (("--last", "2"), 2), (("--name", "step", "--no-details"), None)]
)
def test_show_says_how_many_spans_were_dropped_in_one_last_line_and_shows_no_record_as_a_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], options: tuple[str, ...], shown: int | None
) -> None:
    """The records of drops were shown as traces of one span each, and counted among the traces."""
    path = tmp_path / "traces.jsonl"
    exported, dropped = _overflow(GatedFile(path))
    assert _in_file(path)[::2] == (exported, dropped)

    assert main(["show", str(path), *options]) == 0
    out = capsys.readouterr().out
    assert RECORD not in out
    assert COUNT not in out
    lines = out.splitlines()
    headers = [line for line in lines if line.startswith("trace ")]
    assert len(headers) == (shown or exported)  # every traced call is a trace of its own
    assert lines[-2].startswith(f"showing {shown or exported:,} of {exported:,} traces")
    assert lines[-1] == f"{dropped:,} spans were dropped at the export queue (see export_queue_size)"


def test_show_of_a_file_holding_only_records_of_drops_shows_no_trace(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    class RecordsOnly(JsonlExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            return super().export([span for span in spans if span.name == RECORD])

    path = tmp_path / "records.jsonl"
    _, dropped = _overflow(GatedFile(path, RecordsOnly(path)))
    assert _in_file(path)[::2] == (0, dropped)

    assert main(["show", str(path), "--since", "1h"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "showing 0 of 0 traces (filters: --since 1h)",
        f"{dropped:,} spans were dropped at the export queue (see export_queue_size)",
    ]


def test_the_console_exporter_prints_a_note_of_the_drops_not_a_tree(tmp_path: Path) -> None:
    """The console drew each record as a tree: a span named ``tracesim.export.dropped``."""
    out = io.StringIO()
    exported, dropped = _overflow(GatedFile(tmp_path / "unused.jsonl", ConsoleExporter(out, details=False)))

    text = out.getvalue()
    assert RECORD not in text
    lines = text.splitlines()
    assert sum(line.startswith("step  ") for line in lines) == exported
    notes = [m for line in lines if (m := NOTE.fullmatch(line))]
    assert notes
    assert sum(int(m[1].replace(",", "")) for m in notes) == dropped
    assert len([line for line in lines if line]) == exported + len(notes)  # nothing else printed


def test_the_standard_queue_variable_sets_the_queue_and_the_report_reads_the_drops(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Through ``OTEL_BSP_MAX_QUEUE_SIZE``, which tracesim honoured before: the trace file then
    held fewer spans than were made and nothing said how many were missing."""
    monkeypatch.setenv("OTEL_BSP_MAX_QUEUE_SIZE", "8")
    monkeypatch.setenv("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4")
    path = tmp_path / "traces.jsonl"
    exporter = GatedFile(path)
    tracesim.configure(exporters=[exporter], scoring_mode="off")
    exporter.gate.clear()
    _loop(500, 1)
    exporter.gate.set()
    tracesim.shutdown()

    spans, _, recorded = _in_file(path)
    assert spans < 500
    assert spans + recorded == 500
    assert main(["report", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["export_dropped"] == 500 - spans


def test_the_count_reaches_the_file_when_the_process_exits_without_a_flush(
    run_python: RunPython, tmp_path: Path
) -> None:
    code = """
import threading
import tracesim
from tracesim.exporters import JsonlExporter

class Gated(JsonlExporter):
    gate = threading.Event()
    def export(self, spans):
        self.gate.wait(60)
        return super().export(spans)

exporter = Gated("traces.jsonl")
tracesim.configure(exporters=[exporter], export_queue_size=8)

@tracesim.trace
def step(i):
    return i

for i in range(2000):
    step(i)
exporter.gate.set()
print(tracesim.export_stats().dropped)
"""
    done = run_python(code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    spans, _, recorded = _in_file(tmp_path / "traces.jsonl")
    assert recorded == int(done.stdout) > 0
    assert spans + recorded == 2000
    assert "export queue of the Gated exporter (export_queue_size=8) is full" in done.stderr


@pytest.mark.parametrize("threads", [1, 4])
def test_waiting_for_room_loses_nothing_when_the_exporter_catches_up(tmp_path: Path, threads: int) -> None:
    path = tmp_path / "traces.jsonl"
    exporter = GatedFile(path)
    tracesim.configure(
        exporters=[exporter], export_queue_size=8, export_on_full="wait", export_wait_s=CEILING_S
    )
    exporter.gate.clear()
    producer = threading.Thread(target=_loop, args=(200, threads))
    producer.start()
    deadline = time.monotonic() + CEILING_S
    while tracesim.export_stats().waits < threads and time.monotonic() < deadline:
        time.sleep(0.01)  # until every caller waits for room: then let the exporter catch up
    waits = tracesim.export_stats().waits
    exporter.gate.set()  # the exporter catches up long before a wait runs out
    producer.join(CEILING_S)
    assert tracesim.force_flush(timeout_s=CEILING_S)

    stats = tracesim.export_stats()
    assert waits >= threads
    assert (stats.dropped, stats.exported) == (0, 200 * threads)
    tracesim.shutdown()
    assert _in_file(path) == (200 * threads, 0, 0)


@pytest.mark.parametrize("threads", [1, 4])
def test_a_hung_exporter_holds_waiting_callers_once_for_the_bound_then_they_drop(
    tmp_path: Path, threads: int, caplog: pytest.LogCaptureFixture
) -> None:
    """Without the stall rule each of the 1,000 refused spans would wait 0.2 s: 200 s."""
    caplog.set_level(logging.WARNING, logger="tracesim")
    path = tmp_path / "traces.jsonl"
    exporter = GatedFile(path)
    tracesim.configure(exporters=[exporter], export_queue_size=8, export_on_full="wait", export_wait_s=0.2)
    exporter.gate.clear()  # never opened while the loop runs
    started = time.monotonic()
    _loop(1000 // threads, threads)
    elapsed = time.monotonic() - started
    stats = tracesim.export_stats()
    exporter.gate.set()

    assert elapsed < CEILING_S / 2
    # a wait ran out and the exporter took nothing since: nobody waits again (at most one wait
    # per caller met room when the exporter took its one batch)
    assert 1 <= stats.waits <= 2 * threads
    assert stats.dropped == 1000 - stats.enqueued > 900
    assert len(_queue_warnings(caplog)) == 1
    assert tracesim.force_flush(timeout_s=CEILING_S)
    assert tracesim.export_stats().exported == stats.enqueued


def test_a_span_ended_on_the_export_thread_never_waits_for_that_thread(tmp_path: Path) -> None:
    """An exporter whose own work is traced (a client library instrumented by someone) ends
    spans on the export thread: waiting there for room would wait for itself.

    The SDK exports under OpenTelemetry's suppression, which tracesim honours (no span is made);
    an exporter that runs its work in a context of its own ends spans there all the same.
    """
    inner = JsonlExporter(tmp_path / "traces.jsonl")
    first = threading.Event()

    class Traced(SpanExporter):
        def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
            if not first.is_set():
                first.set()
                token = otel_context.attach(otel_context.Context())  # outside the SDK's suppression
                try:
                    for i in range(20):  # more than the queue holds, on the thread that empties it
                        step(i)
                finally:
                    otel_context.detach(token)
            return inner.export(spans)

        def force_flush(self, timeout_millis: int = 30_000) -> bool:
            return inner.force_flush(timeout_millis)

    tracesim.configure(
        exporters=[Traced()], export_queue_size=8, export_on_full="wait", export_wait_s=CEILING_S
    )
    started = time.monotonic()
    _loop(8, 1)
    assert tracesim.force_flush(timeout_s=CEILING_S)
    assert time.monotonic() - started < CEILING_S / 2
    stats = tracesim.export_stats()
    assert stats.waits == 0
    assert stats.dropped >= 12
    assert stats.dropped + stats.exported == 28


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_starts_with_an_empty_queue_and_its_own_counts(tmp_path: Path) -> None:
    """The SDK empties its queue in a child process; the gate's counts must follow, or the
    child would take the parent's full queue for its own and drop everything."""
    exporter = GatedFile(tmp_path / "traces.jsonl")
    tracesim.configure(exporters=[exporter], export_queue_size=8, scoring_mode="off")
    exporter.gate.clear()
    _loop(100, 1)  # the parent's queue is full
    assert tracesim.export_stats().dropped > 0
    pid = os.fork()
    if pid == 0:  # the child: fewer spans than the queue holds, none may be dropped
        exporter.gate.set()
        _loop(4, 1)
        tracesim.force_flush(timeout_s=CEILING_S)
        stats = tracesim.export_stats()
        os._exit(0 if (stats.dropped, stats.exported) == (0, 4) else 1)
    _, status = os.waitpid(pid, 0)
    exporter.gate.set()
    assert os.waitstatus_to_exitcode(status) == 0


@pytest.mark.parametrize(
    ("setting", "value", "accepted"),
    [
        ("export_queue_size", 0, "an integer >= 1"),
        ("export_on_full", "block", "drop or wait"),
        ("export_wait_s", -1, "a number >= 0"),
    ],
)
def test_bad_queue_settings_fail_at_configure_naming_the_setting(
    setting: str, value: object, accepted: str
) -> None:
    with pytest.raises(tracesim.ConfigError) as error:
        tracesim.configure(exporters=[], **{setting: value})  # type: ignore[arg-type]
    assert error.value.setting == setting
    assert accepted in str(error.value)


def test_queue_settings_come_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRACESIM_EXPORT_ON_FULL", "later")
    with pytest.raises(tracesim.ConfigError) as error:
        tracesim.configure(exporters=["jsonl"])
    assert (error.value.setting, error.value.env_var) == ("export_on_full", "TRACESIM_EXPORT_ON_FULL")
    monkeypatch.setenv("TRACESIM_EXPORT_ON_FULL", "wait")
    monkeypatch.setenv("TRACESIM_EXPORT_QUEUE_SIZE", "16")
    tracesim.configure(exporters=["jsonl"])
    from tracesim import _runtime

    assert _runtime.current is not None
    queue = _runtime.current.processors[0]
    assert (queue.queue_size, queue.on_full) == (16, "wait")  # type: ignore[attr-defined]
