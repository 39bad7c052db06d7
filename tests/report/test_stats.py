"""The report's numbers on files with known contents."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tracesim import _semconv as sc
from tracesim._report import NONE_GROUP, EvaluatorStats, Report, SpanStats, read_report, summarize
from tracesim.tracefile import TraceFileWarning, load_spans

from .tracefiles import TraceWriter, result, write_known


def _span(report: Report, name: str, group: str | None = None) -> SpanStats:
    (row,) = [s for s in report.spans if s.name == name and s.group == group]
    return row


def _eval(report: Report, name: str, group: str | None = None) -> EvaluatorStats:
    (row,) = [e for e in report.evaluators if e.name == name and e.group == group]
    return row


def test_span_table_of_known_file(known_file: Path) -> None:
    report = read_report([known_file])

    assert [(s.name, s.kinds, s.count, s.errors) for s in report.spans] == [
        ("answer", ("AGENT",), 4, 1),
        ("retrieve", ("RETRIEVER",), 4, 0),
        ("search", ("TOOL",), 1, 1),
    ]
    answer = _span(report, "answer")
    assert answer.error_rate == 0.25
    lat = answer.latency_s
    # durations 0.1, 0.2, 0.3, 0.4: p50 halfway between 0.2 and 0.3; p95 at rank 2.85, p99 at 2.97
    assert (lat.min, lat.max) == (0.1, 0.4)
    assert lat.mean == pytest.approx(0.25, abs=1e-15)
    assert lat.p50 == pytest.approx(0.25, abs=1e-15)
    assert lat.p95 == pytest.approx(0.385, abs=1e-15)
    assert lat.p99 == pytest.approx(0.397, abs=1e-15)
    assert _span(report, "search").error_rate == 1.0
    assert _span(report, "retrieve").latency_s.p95 == pytest.approx(0.0385, abs=1e-15)


def test_evaluator_table_of_known_file(known_file: Path) -> None:
    report = read_report([known_file])

    lev = _eval(report, "levenshtein")
    assert (lev.span, lev.results, lev.ok, lev.skipped) == ("answer", 4, 3, 1)
    assert (lev.errors, lev.not_sampled) == (0, 0)
    assert (lev.scored, lev.passed, lev.failed, lev.from_carriers) == (3, 2, 1, 1)
    assert lev.mean_score == pytest.approx((0.9 + 0.5 + 0.95) / 3, abs=1e-15)
    assert lev.pass_rate == 2 / 3
    assert lev.thresholds == (0.8,)
    assert lev.labels == {"pass": 2, "fail": 1}
    assert lev.histogram.counts == (0, 0, 0, 0, 0, 1, 0, 0, 0, 2)

    rouge = _eval(report, "rouge")
    assert (rouge.results, rouge.ok, rouge.skipped, rouge.errors, rouge.not_sampled) == (2, 1, 0, 1, 2)
    assert rouge.mean_score == 0.6
    assert (rouge.passed, rouge.failed, rouge.pass_rate) == (0, 0, None)

    human = _eval(report, "human")
    assert (human.span, human.results, human.from_carriers, human.mean_score) == ("answer", 2, 2, 0.5)
    assert human.labels == {"helpful": 1, "unhelpful": 1}
    assert human.pass_rate is None

    assert [e.name for e in report.evaluator_totals] == ["human", "levenshtein", "rouge"]
    assert report.evaluator("levenshtein") == EvaluatorStats(**{**lev.__dict__, "span": None})


def test_totals_of_known_file(known_file: Path) -> None:
    t = read_report([known_file]).totals
    assert (t.files, t.spans, t.traces, t.errors, t.evaluator_spans, t.results) == (1, 9, 4, 2, 3, 8)
    assert (t.duplicate_spans, t.unresolved_links) == (0, 0)
    assert t.start == "2026-09-21T14:13:20Z"
    assert t.end == "2026-09-21T14:13:50.400000Z"


def test_mean_and_pass_rate_ignore_skipped_and_errored_results(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    w.span("a", results=[result("judge", 1.0, passed=True, threshold=0.5)])
    w.span("a", results=[result("judge", 0.0, passed=False, threshold=0.5, status="skipped")])
    w.span("a", results=[result("judge", 0.0, passed=False, threshold=0.5, status="error", error_type="E")])
    w.span("a", results=[result("judge", 0.2, threshold=0.5)])  # ok, scored, no decision
    w.close()
    judge = summarize(load_spans(w.path)).evaluator("judge")
    assert judge is not None
    assert (judge.results, judge.ok, judge.skipped, judge.errors, judge.scored) == (4, 2, 1, 1, 2)
    assert judge.mean_score == pytest.approx(0.6)
    assert (judge.passed, judge.failed, judge.pass_rate) == (1, 0, 1.0)


def test_status_is_inferred_when_the_attribute_is_missing(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    w.span("a", results=[result("j", 0.5, status=None), result("j", status=None, error_type="ValueError")])
    w.close()
    row = summarize(load_spans(w.path)).evaluator("j")
    assert row is not None
    assert (row.ok, row.errors, row.mean_score) == (1, 1, 0.5)


def test_group_by_span_attribute_splits_both_tables(known_file: Path) -> None:
    report = read_report([known_file], group_by="user.id")

    assert report.group_by == "user.id"
    # user.id is set on answer only; its children take it from there
    assert [(s.group, s.name, s.count) for s in report.spans] == [
        ("alice", "answer", 2),
        ("alice", "retrieve", 2),
        ("alice", "search", 1),
        ("bob", "answer", 2),
        ("bob", "retrieve", 2),
    ]
    assert _span(report, "answer", "bob").errors == 1
    assert _span(report, "retrieve", "bob").latency_s.max == 0.04
    # the late levenshtein result sits on a carrier without user.id; it counts for its target, bob
    bob = _eval(report, "levenshtein", "bob")
    assert (bob.results, bob.passed, bob.failed, bob.from_carriers) == (2, 1, 1, 1)
    alice = _eval(report, "levenshtein", "alice")
    assert (alice.results, alice.skipped, alice.pass_rate) == (2, 1, 1.0)
    assert _eval(report, "human", "alice").labels == {"unhelpful": 1}
    assert _eval(report, "rouge", "bob").not_sampled == 1
    assert _eval(report, "rouge", "alice").not_sampled == 1
    # totals stay over all groups
    totals = report.evaluator("levenshtein")
    assert totals is not None
    assert (totals.group, totals.results, totals.pass_rate) == (None, 4, 2 / 3)


def test_missing_group_attribute_is_its_own_group(known_file: Path) -> None:
    report = read_report([known_file], group_by="tenant")
    assert {s.group for s in report.spans} == {NONE_GROUP}
    assert {e.group for e in report.evaluators} == {NONE_GROUP}
    assert [s.count for s in report.spans] == [4, 4, 1]


def test_a_span_attribute_wins_over_the_parent_and_the_resource(writer: Callable[..., TraceWriter]) -> None:
    w = writer(service="bot")
    root = w.span("answer", attributes={"service.name": "override"})
    w.span("tool", parent=root, attributes={"service.name": "tool-svc"})
    w.span("llm", parent=root)
    w.span("other")
    w.close()
    report = summarize(load_spans(w.path), group_by="service.name")
    assert [(s.group, s.name) for s in report.spans] == [
        ("bot", "other"),
        ("override", "answer"),
        ("override", "llm"),
        ("tool-svc", "tool"),
    ]


def test_group_by_resource_attribute_across_files(writer: Callable[..., TraceWriter]) -> None:
    bot, search = writer("bot.jsonl", service="support-bot"), writer("search.jsonl", service="search-api")
    bot.span("answer", results=[result("lev", 1.0, passed=True, threshold=0.5)])
    bot.span("answer", results=[result("lev", 0.0, passed=False, threshold=0.5)])
    search.span("query", duration_s=0.5)
    search.span("answer", results=[result("lev", 1.0, passed=True, threshold=0.5)])
    bot.close()
    search.close()

    report = read_report([bot.path, search.path], group_by="service.name")

    assert [(s.group, s.name, s.count) for s in report.spans] == [
        ("search-api", "answer", 1),
        ("search-api", "query", 1),
        ("support-bot", "answer", 2),
    ]
    assert [(e.group, e.pass_rate) for e in report.evaluators] == [("search-api", 1.0), ("support-bot", 0.5)]


def test_group_values_that_are_not_strings_are_json(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    w.span("a", attributes={"tier": 2})
    w.span("a", attributes={"tier": True})
    w.close()
    report = summarize(load_spans(w.path), group_by="tier")
    assert sorted(s.group or "" for s in report.spans) == ["2", "true"]


def test_carrier_whose_target_is_missing(writer: Callable[..., TraceWriter]) -> None:
    target_file, carrier_file = writer("old.jsonl"), writer("new.jsonl")
    target = target_file.span("answer", attributes={"user.id": "carol"})
    carrier_file.carrier(target, [result("human", 1.0, label="helpful")])
    target_file.close()
    carrier_file.close()

    report = read_report([carrier_file.path], group_by="user.id")

    assert report.totals.unresolved_links == 1
    assert report.spans == ()
    (row,) = report.evaluators
    assert (row.name, row.span, row.group, row.from_carriers) == ("human", None, NONE_GROUP, 1)
    # with both files the target is found again
    both = read_report([target_file.path, carrier_file.path], group_by="user.id")
    assert [(e.group, e.span) for e in both.evaluators] == [("carol", "answer")]


def test_evaluator_only_seen_as_not_sampled(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    w.span("answer", not_sampled=["judge", "rouge"])
    w.span("answer", not_sampled=["judge"])
    w.close()
    report = summarize(load_spans(w.path))
    assert [(e.name, e.results, e.not_sampled, e.pass_rate) for e in report.evaluator_totals] == [
        ("judge", 0, 2, None),
        ("rouge", 0, 1, None),
    ]


def test_spans_read_twice_count_once(known_file: Path) -> None:
    spans = load_spans([known_file, known_file])
    report = summarize(spans)
    assert report.totals.duplicate_spans == 12
    assert report.totals.spans == 9
    assert report.totals.results == 8


def test_torn_last_line_is_skipped_with_a_warning(known_file: Path) -> None:
    whole = read_report([known_file])
    with known_file.open("ab") as f:
        f.write(b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"ab')
    with pytest.warns(TraceFileWarning, match="torn last line"):
        load_spans(known_file)

    report = read_report([known_file])  # keeps the warning instead of raising it

    assert len(report.warnings) == 1
    assert "torn last line" in report.warnings[0]
    assert report.spans == whole.spans
    assert report.evaluators == whole.evaluators


def test_rotated_files_are_read_together(writer: Callable[..., TraceWriter]) -> None:
    w = writer(max_bytes=4000, backups=9)
    write_known(w)
    w.close()
    files = sorted(w.path.parent.glob("traces*.jsonl"))
    assert len(files) > 2, "the fixture should have rotated"

    report = read_report(files)

    assert report.totals.files == len(files)
    assert (report.totals.spans, report.totals.results, report.totals.evaluator_spans) == (9, 8, 3)
    lev = report.evaluator("levenshtein")
    assert lev is not None
    assert (lev.from_carriers, lev.pass_rate) == (1, 2 / 3)


def test_empty_file(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    report = read_report([empty])
    assert report.spans == ()
    assert report.evaluators == ()
    assert report.totals.spans == 0
    assert report.totals.start is None
    assert json.loads(report.to_json())["totals"]["traces"] == 0


def test_non_finite_scores_are_not_averaged(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    w.span("a", results=[result("j", float("nan")), result("j", 0.25)])
    w.close()
    row = summarize(load_spans(w.path)).evaluator("j")
    assert row is not None
    assert (row.ok, row.scored, row.mean_score) == (2, 1, 0.25)


def test_unnamed_result_and_unknown_kind(writer: Callable[..., TraceWriter]) -> None:
    w = writer()
    w.span("plain", kind=None, results=[{sc.EVALUATION_SCORE_VALUE: 1.0}])
    w.close()
    report = summarize(load_spans(w.path))
    assert report.evaluator_totals[0].name == "(unnamed)"
    assert report.spans[0].kinds == ()
