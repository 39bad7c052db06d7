"""``tracesim report`` sums the ``tracesim.export.dropped`` records of every file it reads.

The records are what an export queue writes when it had to drop spans (see
``tests/test_dropped_spans.py`` for the queue itself); here they are written by hand, so the
report's reading is checked on its own: summed across files and processes, read once when a
file is named twice, never counted as the application's spans, and a span that merely shares
the name without a usable count is an ordinary span.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tracesim._report import read_report, render_html
from tracesim._report._terminal_report import scoring_notes
from tracesim.cli import main

from .tracefiles import TraceWriter

RECORD = "tracesim.export.dropped"
COUNT = "tracesim.export.dropped_spans"


def _file(writer: Callable[[str], TraceWriter], name: str, drops: list[object]) -> Path:
    w = writer(name)
    w.span("answer", kind="AGENT")
    for i, count in enumerate(drops):
        w.span(RECORD, kind=None, start_s=1.0 + i, attributes={COUNT: count})
    w.close()
    return w.path


def test_records_of_several_files_are_summed_and_are_not_spans(
    writer: Callable[[str], TraceWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    first = _file(writer, "a.jsonl", [1200, 34])
    second = _file(writer, "b.jsonl", [5])

    report = read_report([first, second, first])  # a file named twice is read once
    assert report.totals.export_dropped == 1239
    assert (report.totals.spans, report.totals.traces) == (2, 2)
    assert [(row.name, row.count) for row in report.spans] == [("answer", 2)]
    note = "1,239 spans were dropped before reaching the files because an export queue was full"
    assert scoring_notes(report)[0].startswith(note)
    assert note in render_html(report)

    assert main(["report", str(first), str(second), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["export_dropped"] == 1239
    assert main(["report", str(second)]) == 0
    assert "\n5 spans were dropped before reaching the files" in capsys.readouterr().out


@pytest.mark.parametrize("attributes", [{COUNT: -3}, {COUNT: 2.5}, {COUNT: "7"}, {COUNT: True}, {}])
def test_a_span_of_that_name_without_a_count_is_an_ordinary_span(
    writer: Callable[[str], TraceWriter], attributes: dict[str, object]
) -> None:
    w = writer("odd.jsonl")
    w.span("answer", kind="AGENT")
    w.span(RECORD, kind=None, attributes=attributes)
    w.close()
    report = read_report([w.path])
    assert report.totals.export_dropped == 0
    assert sorted(row.name for row in report.spans) == ["answer", RECORD]
    assert scoring_notes(report) == []


def test_no_drops_no_sentence(writer: Callable[[str], TraceWriter]) -> None:
    report = read_report([_file(writer, "clean.jsonl", [])])
    assert report.totals.export_dropped == 0
    assert scoring_notes(report) == []
