"""Scores and latency over time, span status and the scoring markers, on files with known contents."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tracesim._report import read_report, render_html
from tracesim._report._timeline import MAX_BUCKETS, bucket_width
from tracesim.cli import main

from .test_html import check_structure
from .tracefiles import TraceWriter, result, write_timeline

MINUTE_NS = 60 * 10**9
FIRST_HALF, SECOND_HALF = 8, 8  # buckets of 2 min before and after the change at 14:28


@pytest.fixture
def timeline_file(writer: Callable[..., TraceWriter]) -> Path:
    w = writer("timeline.jsonl")
    write_timeline(w)
    w.close()
    return w.path


def test_buckets_of_known_file(timeline_file: Path) -> None:
    timeline = read_report([timeline_file]).timeline

    assert timeline is not None
    # starts 14:13:20 to 14:42:20: 29 min; 1 min buckets would be 30, so 2 min, from 14:12
    assert timeline.bucket_s == 120
    assert len(timeline.starts) == 16
    assert (timeline.starts[0], timeline.starts[-1]) == ("2026-09-21T14:12:00Z", "2026-09-21T14:42:00Z")
    assert timeline.entry_span == "answer"
    answer, retrieve = timeline.spans
    assert (answer.name, retrieve.name) == ("answer", "retrieve")
    assert answer.count == (1, *[2] * 14, 1)
    # answers 20 and 21 started at 14:33:20 and 14:34:20
    assert answer.errors == (0,) * 10 + (1, 1) + (0,) * 4
    assert answer.p50 == (0.1,) * FIRST_HALF + (1.0,) * SECOND_HALF
    assert answer.p95 == answer.p50
    assert retrieve.p95 == (0.02,) * 16


def test_evaluators_over_time(timeline_file: Path) -> None:
    timeline = read_report([timeline_file]).timeline

    assert timeline is not None
    lev, rouge = timeline.evaluators
    # bucket 2 holds answers 3 (dropped) and 4; bucket 3 answers 5 (late, on a carrier) and 6 (lost)
    assert lev.results == (1, 2, 1, 1, *[2] * 11, 1)
    assert lev.passed == (1, 2, 1, 1, 2, 2, 2, 2) + (0,) * SECOND_HALF
    assert lev.failed == (0,) * FIRST_HALF + (2,) * 7 + (1,)
    assert lev.pass_rate == (1.0,) * FIRST_HALF + (0.0,) * SECOND_HALF
    assert lev.mean_score == pytest.approx((0.9,) * FIRST_HALF + (0.5,) * SECOND_HALF, abs=1e-12)
    # bucket 4 holds answer 7, which left rouge out by sampling
    assert rouge.results == rouge.scored == (1, 2, 1, 2, 1, *[2] * 10, 1)
    assert rouge.pass_rate == (None,) * 16
    assert rouge.mean_score == pytest.approx((0.7,) * FIRST_HALF + (0.3,) * SECOND_HALF, abs=1e-12)


def test_status_and_scoring_markers(timeline_file: Path) -> None:
    report = read_report([timeline_file])

    answer, retrieve = report.spans
    assert (answer.status.ok, answer.status.unset, answer.status.error) == (9, 19, 2)
    assert (retrieve.status.ok, retrieve.status.unset, retrieve.status.error) == (0, 30, 0)
    assert (answer.scoring.dropped, answer.scoring.deferred, answer.scoring.not_sampled) == (1, 2, 1)
    assert (retrieve.scoring.dropped, retrieve.scoring.deferred, retrieve.scoring.not_sampled) == (0, 0, 0)
    assert report.totals.status.ok == 9
    assert report.totals.status.unset == 49
    assert report.totals.scoring.dropped == 1
    lev = report.evaluator("levenshtein")
    assert lev is not None
    assert (lev.results, lev.from_carriers, lev.deferred, lev.deferred_missing) == (28, 1, 2, 1)
    rouge = report.evaluator("rouge")
    assert rouge is not None
    assert (rouge.deferred, rouge.deferred_missing, rouge.not_sampled) == (0, 0, 1)


def test_a_span_marked_ok_is_not_an_error(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    w.span("answer", ok=True)
    w.span("answer")
    w.span("answer", error=True)
    w.close()

    (row,) = read_report([w.path]).spans

    assert (row.count, row.errors, row.error_rate) == (3, 1, 1 / 3)
    assert (row.status.ok, row.status.unset, row.status.error) == (1, 1, 1)


def test_late_results_whose_span_is_not_in_the_files_still_arrive(writer: Callable[..., TraceWriter]) -> None:
    # The evaluated span is in one file, the carrier with its late result in another.
    spans, carriers = writer("spans.jsonl"), writer("carriers.jsonl")
    answer = spans.span("answer", attributes={"tracesim.evaluation.deferred": ["judge", "rouge"]})
    carriers.carrier(answer, [result("judge", 4.0, passed=True, threshold=3.0)])
    spans.close()
    carriers.close()

    alone = read_report([spans.path]).evaluator("judge")
    both = read_report([carriers.path, spans.path])

    assert alone is not None
    assert (alone.results, alone.deferred, alone.deferred_missing) == (0, 1, 1)
    judge, rouge = both.evaluator("judge"), both.evaluator("rouge")
    assert judge is not None
    assert rouge is not None
    assert (judge.results, judge.deferred, judge.deferred_missing) == (1, 1, 0)
    assert (rouge.results, rouge.deferred, rouge.deferred_missing) == (0, 1, 1)


def test_a_file_shorter_than_ten_minutes_has_no_timeline(
    known_file: Path, writer: Callable[..., TraceWriter]
) -> None:
    assert read_report([known_file]).timeline is None  # 30 s
    short, long = writer("short.jsonl"), writer("long.jsonl")
    for w, last_s in ((short, 599.999), (long, 600.0)):
        w.span("answer", start_s=0)
        w.span("answer", start_s=last_s, duration_s=5.0)
        w.close()

    assert read_report([short.path]).timeline is None
    timeline = read_report([long.path]).timeline
    assert timeline is not None
    # 14:13:20 to 14:23:20 in 30 s buckets from 14:13:00
    assert (timeline.bucket_s, len(timeline.starts)) == (30, 21)
    assert timeline.spans[0].count == (1,) + (0,) * 19 + (1,)
    assert timeline.spans[0].p50 == (0.1,) + (None,) * 19 + (5.0,)


@pytest.mark.parametrize(
    ("window_s", "width_s", "buckets"),
    [
        (600, 30, 21),
        (690, 30, 24),
        (720, 60, 13),
        (2 * 3600, 600, 13),
        (86340, 3600, 24),
        (86400, 7200, 13),
        (30 * 86400, 172800, 16),
        (365 * 86400, 3 * 7 * 86400, 18),
    ],
)
def test_bucket_widths_are_round(window_s: int, width_s: int, buckets: int) -> None:
    last_ns = window_s * 10**9
    assert bucket_width(0, last_ns) == width_s
    assert last_ns // (width_s * 10**9) + 1 == buckets <= MAX_BUCKETS


def test_json_has_the_timeline(timeline_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["report", str(timeline_file), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)

    timeline = doc["timeline"]
    assert list(timeline) == ["bucket_s", "starts", "entry_span", "spans", "evaluators"]
    answer = timeline["spans"][0]
    assert list(answer) == ["name", "count", "errors", "p50", "p95"]
    assert answer["errors"][10:12] == [1, 1]
    lev = timeline["evaluators"][0]
    assert list(lev) == ["name", "results", "scored", "mean_score", "passed", "failed", "pass_rate"]
    assert lev["pass_rate"][7:9] == [1.0, 0.0]
    assert doc["totals"]["scoring"] == {"dropped": 1, "deferred": 2, "not_sampled": 1}
    assert doc["spans"][0]["status"] == {"ok": 9, "unset": 19, "error": 2}


def test_text_shows_markers_status_and_timeline(
    timeline_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(timeline_file)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()

    assert lines[1] == (
        "1 span was never scored because the scoring queue was full (tracesim.evaluation.dropped): raise "
        "scoring_queue_size or scoring_workers, or lower evaluation_sample_rate."
    )
    assert lines[2] == (
        "2 spans ended with evaluators still running after max_defer_s (tracesim.evaluation.deferred); "
        "their 2 results come on carrier spans, and 1 of them is not in the files."
    )
    assert "Span status: 9 OK, 49 unset, 2 ERROR (OK and unset both mean no error)." in lines
    answer = next(line for line in lines if line.startswith("│ answer "))
    assert [c.strip() for c in answer.split("│")[-4:-1]] == ["1", "2", "1"]  # dropped, deferred, not sampled
    lev = next(line for line in lines if line.startswith("│ levenshtein "))
    assert [c.strip() for c in lev.split("│")[-4:-1]] == ["1", "2", "1"]  # on carriers, deferred, missing
    title = (
        "Over time, per 2 min (UTC, by span start): answer calls, errors and p95; pass rate (else mean "
        "score) per evaluator"
    )
    start = lines.index(title)
    assert lines[start + 2] == "┃ start ┃ calls ┃ errors ┃      p95 ┃ levenshtein ┃ rouge mean ┃"
    rows = [line for line in lines[start:] if line.startswith("│ 14:")]
    assert len(rows) == 16
    assert rows[0] == "│ 14:12 │     1 │      0 │ 100.0 ms │      100.0% │      0.700 │"
    assert rows[10] == "│ 14:32 │     2 │      1 │   1.00 s │        0.0% │      0.300 │"


def test_text_has_no_timeline_or_marker_columns_when_there_are_none(
    known_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(known_file)]) == 0
    out = capsys.readouterr().out

    assert "Over time" not in out
    assert "queue full" not in out
    assert "deferred" not in out
    assert "Span status: 0 OK, 7 unset, 2 ERROR" in out


def test_html_has_the_timeline_and_the_markers(timeline_file: Path) -> None:
    page = render_html(read_report([timeline_file]))

    checker = check_structure(page)

    text = "".join(checker.text)
    assert "1 span was never scored because the scoring queue was full" in text
    assert "Over time, per 2 min (UTC, by span start)" in text
    assert page.count('class="chart timeline evaluator-trend"') == 2
    assert page.count('class="chart timeline span-trend"') == 2
    assert "<title>14:28: pass rate 0.0% (0 of 2)</title>" in page
    assert "<title>14:26: mean score 0.700 (2 scores)</title>" in page
    assert "<title>14:32: 1 error</title>" in page
    assert "2 (1 missing)" in text  # the deferred column of levenshtein
    assert "unscored: queue full" in text


def test_a_bucket_without_spans_leaves_a_gap(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    w.span("answer", start_s=0, results=[result("exact", 1.0, passed=True, threshold=1.0)])
    w.span("answer", start_s=900, results=[result("exact", 0.0, passed=False, threshold=1.0)])
    w.close()
    report = read_report([w.path])

    page = render_html(report)

    assert report.timeline is not None
    assert report.timeline.evaluators[0].pass_rate == (1.0,) + (None,) * 14 + (0.0,)
    timeline = page.split('<section id="timeline">')[1].split("</section>")[0]
    assert "<polyline" not in timeline  # no line drawn through the empty buckets
    assert timeline.count("<circle") == 4 + 4  # two points each: pass rate, mean score; p50, p95
