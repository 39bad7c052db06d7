"""Evaluation results as metrics: the counts equal what ScoringStats and `tracesim report` say."""

from __future__ import annotations

import json
import math
import threading
from typing import Any

import pytest

import tracesim
from tracesim._metrics import OUTCOMES
from tracesim.cli import main
from tracesim.evaluators import ExactMatch, evaluator

from .points import METRICS_FILE, last_points, results_by


@evaluator(threshold=None)
def length(output: Any, expected: Any) -> float:
    return float(len(output))


@evaluator
def broken(output: Any, expected: Any) -> float:
    raise ValueError("broken on purpose")


def _report(capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert main(["report", "--json", ".tracesim"]) == 0  # the metrics file beside it is no trace file
    document: dict[str, Any] = json.loads(capsys.readouterr().out)
    return document


def test_counts_per_outcome_equal_scoring_stats_and_the_report(capsys: pytest.CaptureFixture[str]) -> None:
    tracesim.configure(scoring_mode="background", scoring_queue_size=2, scoring_workers=1)

    @tracesim.trace(
        evaluators=[ExactMatch(), length, broken, ExactMatch(name="rare", sample_rate=0.0)],
        expected=lambda q: None if q == "skip" else "ok",
    )
    def answer(q: str) -> str:
        return q

    for q in ("ok", "ok", "no", "skip"):
        answer(q)
        assert tracesim.force_flush(10)  # one call at a time: none is dropped here

    release = threading.Event()

    @evaluator
    def blocked(output: Any, expected: Any) -> float:
        release.wait(30)
        return 1.0

    @tracesim.trace(evaluators=[blocked, ExactMatch()], expected="ok")
    def slow(i: int) -> str:
        return "ok"

    for i in range(5):  # two fill the queue (size 2) while the first is held: three are dropped
        slow(i)
    release.set()
    assert tracesim.force_flush(10)
    stats = tracesim.scoring_stats()
    tracesim.shutdown()

    points = last_points()
    outcomes = results_by(points, "tracesim.evaluation.outcome")
    assert set(outcomes) <= {(o,) for o in OUTCOMES}
    decided = sum(outcomes[(o,)] for o in ("passed", "failed", "undecided", "skipped", "error"))
    assert decided == stats.results == 16
    assert outcomes[("error",)] == stats.errors == 3
    assert outcomes[("not_sampled",)] == stats.not_sampled == 4
    assert stats.dropped == 3
    assert outcomes[("dropped",)] == 2 * stats.dropped  # one per evaluator of each dropped call

    # Per evaluator and span, the same numbers as `tracesim report` over the trace file.
    counted = results_by(
        points, "gen_ai.evaluation.name", "tracesim.span.name", "tracesim.evaluation.outcome"
    )
    rows = _report(capsys)["evaluators"]
    assert {(r["name"], r["span"]) for r in rows} == {(e, s) for e, s, _ in counted if _ != "dropped"}
    for row in rows:
        key = (row["name"], row["span"])
        assert counted[(*key, "passed")] == row["passed"], key
        assert counted[(*key, "failed")] == row["failed"], key
        assert counted[(*key, "error")] == row["errors"], key
        assert counted[(*key, "skipped")] == row["skipped"], key
        assert counted[(*key, "not_sampled")] == row["not_sampled"], key
        assert counted[(*key, "undecided")] == row["ok"] - row["passed"] - row["failed"], key
    assert counted[("exact", "answer", "passed")] == 2
    assert counted[("length", "answer", "undecided")] == 3
    assert counted[("blocked", "slow", "dropped")] == counted[("exact", "slow", "dropped")] == 3


def test_late_results_count_by_their_outcome() -> None:
    release = threading.Event()

    @evaluator(threshold=0.5)
    def waits(output: Any, expected: Any) -> float:
        release.wait(30)
        return 0.0

    tracesim.configure(scoring_mode="background", max_defer_s=0)  # every result goes on a carrier

    @tracesim.trace(evaluators=[waits, ExactMatch()], expected="ok")
    def answer() -> str:
        return "ok"

    answer()
    answer()
    release.set()
    assert tracesim.force_flush(10)
    stats = tracesim.scoring_stats()
    tracesim.shutdown()
    assert stats.late == stats.results == 4
    counted = results_by(last_points(), "gen_ai.evaluation.name", "tracesim.evaluation.outcome")
    assert counted == {("waits", "failed"): 2, ("exact", "passed"): 2}


def test_score_histogram_has_the_tenths_as_buckets() -> None:
    @evaluator(threshold=0.5)
    def given(output: Any, expected: Any) -> float:
        return float(output)

    tracesim.configure()  # metrics beside the trace file by default

    @tracesim.trace(evaluators=[given], expected="x")
    def answer(score: float) -> float:
        return score

    for score in (0.0, 0.05, 0.3, 0.95, 1.0, math.inf):
        answer(score)
    tracesim.shutdown()
    (point,) = last_points()["tracesim.evaluation.score"]
    assert point["unit"] == "1"
    assert point["attrs"] == {"gen_ai.evaluation.name": "given", "tracesim.span.name": "answer"}
    assert point["explicitBounds"] == [0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]
    # upper bounds are inclusive: 0.0 | 0.05 | 0.3 | 0.95 and 1.0; an infinite score is no point
    counts = [int(c) for c in point["bucketCounts"]]
    assert counts == [1, 1, 0, 1, 0, 0, 0, 0, 0, 0, 2, 0]
    assert int(point["count"]) == 5
    assert point["sum"] == pytest.approx(2.3)


def test_span_names_per_evaluator_are_bounded_and_redacted() -> None:
    from tracesim._metrics._counts import SPAN_NAMES_PER_EVALUATOR

    tracesim.configure(scoring_mode="inline")
    for i in range(SPAN_NAMES_PER_EVALUATOR + 5):
        with tracesim.span(f"step-{i}", evaluators=[ExactMatch()], expected="ok") as span:
            span.set_output("ok")
    with tracesim.span("mail marie@curie.org", evaluators=[ExactMatch()], expected="ok") as span:
        span.set_output("ok")
    tracesim.shutdown()
    names = results_by(last_points(), "tracesim.span.name")
    assert len(names) == SPAN_NAMES_PER_EVALUATOR + 1
    assert names[("_other",)] == 6  # five unnamed steps and the mail: past the bound
    assert not any("curie" in name for (name,) in names)


def test_a_redacted_span_name_is_redacted_in_its_label() -> None:
    tracesim.configure(scoring_mode="inline")
    with tracesim.span("mail marie@curie.org", evaluators=[ExactMatch()], expected="ok") as span:
        span.set_output("ok")
    tracesim.shutdown()
    (name,) = results_by(last_points(), "tracesim.span.name")
    assert name == ("mail [REDACTED:email]",)
    assert "curie" not in METRICS_FILE.read_text()


def test_metrics_off_writes_nothing() -> None:
    tracesim.configure(metrics="none")

    @tracesim.trace(evaluators=[ExactMatch()], expected="ok")
    def answer() -> str:
        return "ok"

    answer()
    assert tracesim.force_flush(10)
    assert tracesim._runtime.current is not None
    assert tracesim._runtime.current.metrics is None
    tracesim.shutdown()
    assert not METRICS_FILE.exists()
    assert (METRICS_FILE.parent / "traces.jsonl").exists()


def test_metrics_follow_the_span_exporters_by_default() -> None:
    from tracesim._config import resolve
    from tracesim._metrics import destinations

    assert destinations(resolve({"exporters": ["console"]}, environ={})) == ()
    assert destinations(resolve({"exporters": ["otlp", "jsonl"]}, environ={})) == ("otlp", "jsonl")
    assert destinations(resolve({"exporters": ["console"], "metrics": "jsonl"}, environ={})) == ("jsonl",)


def test_feedback_counts_as_a_result_of_its_span() -> None:
    tracesim.configure()
    with tracesim.span("answer") as span:
        span.set_output("Warsaw")
    tracesim.score(span, name="user_rating", value=1.0, passed=True)
    tracesim.score(span.span_context, name="user_rating", value=0.0, passed=False)  # no name known
    tracesim.shutdown()
    counted = results_by(
        last_points(), "gen_ai.evaluation.name", "tracesim.span.name", "tracesim.evaluation.outcome"
    )
    assert counted == {("user_rating", "answer", "passed"): 1, ("user_rating", "_unknown", "failed"): 1}


def test_another_instrumentations_span_with_nothing_to_score_counts_as_skipped() -> None:
    from opentelemetry import trace as otel_trace

    rule = {"match": "chat gpt-x", "evaluators": ["exact"], "expected": {"value": "Warsaw"}}
    tracesim.configure(evaluators=[rule])
    other = otel_trace.get_tracer("some.instrumentation")
    for _ in range(2):
        with other.start_as_current_span("chat gpt-x") as span:
            span.set_attribute("gen_ai.operation.name", "chat")  # and no content: nothing to score
    assert tracesim.force_flush(10)
    stats = tracesim.scoring_stats()
    tracesim.shutdown()
    assert stats.results == 2
    counted = results_by(
        last_points(), "gen_ai.evaluation.name", "tracesim.span.name", "tracesim.evaluation.outcome"
    )
    assert counted == {("exact", "chat gpt-x", "skipped"): 2}


def test_the_metrics_file_rotates_with_the_trace_files_settings() -> None:
    tracesim.configure(scoring_mode="inline", jsonl_max_bytes=1024, jsonl_backups=1)
    for _ in range(5):
        with tracesim.span("answer", evaluators=[ExactMatch()], expected="ok") as span:
            span.set_output("ok")
        assert tracesim.force_flush(10)  # a line each time: more than 1 KiB each
    tracesim.shutdown()
    folder = METRICS_FILE.parent
    assert sorted(p.name for p in folder.glob("traces.metrics*")) == [
        "traces.metrics.1.jsonl",
        "traces.metrics.jsonl",
    ]
    for path in folder.glob("traces.metrics*"):
        for line in path.read_text().splitlines():
            assert "resourceMetrics" in json.loads(line)  # whole lines only
    assert results_by(last_points(), "tracesim.evaluation.outcome") == {("passed",): 5}


def test_feedback_is_in_the_metrics_and_the_report_but_not_in_scoring_stats(
    capsys: pytest.CaptureFixture[str],
) -> None:
    tracesim.configure(scoring_mode="inline")
    with tracesim.span("answer", evaluators=[ExactMatch()], expected="ok") as span:
        span.set_output("ok")
    tracesim.score(span, name="user_rating", value=1.0, passed=True)
    assert tracesim.force_flush(10)
    stats = tracesim.scoring_stats()
    tracesim.shutdown()
    counted = results_by(last_points(), "gen_ai.evaluation.name", "tracesim.evaluation.outcome")
    assert counted == {("exact", "passed"): 1, ("user_rating", "passed"): 1}
    assert stats.results == 1  # the evaluator's result only, as docs/metrics.md says
    rows = {row["name"]: row for row in _report(capsys)["evaluators"]}
    assert (rows["exact"]["passed"], rows["user_rating"]["passed"]) == (1, 1)


def test_an_experiment_run_in_the_process_leaves_the_online_counts_as_they_were() -> None:
    from tracesim.experiments import Case, Dataset

    tracesim.configure(scoring_mode="inline", metrics="jsonl")
    with tracesim.span("answer", evaluators=[ExactMatch()], expected="ok") as span:
        span.set_output("ok")  # online traffic: one result
    dataset = Dataset([Case("q1", "ok", id="a"), Case("q2", "ok", id="b")], name="offline")
    report = dataset.evaluate(lambda question: "ok" if question == "q1" else "no", evaluators=[ExactMatch()])
    assert (report.passed, report.failed) == (1, 1)  # the experiment did score its runs
    tracesim.shutdown()
    counted = results_by(
        last_points(), "gen_ai.evaluation.name", "tracesim.span.name", "tracesim.evaluation.outcome"
    )
    assert counted == {("exact", "answer", "passed"): 1}  # experiments are offline: not in the metrics


def test_counts_from_callers_are_queued_bounded_and_all_folded_in() -> None:
    from tracesim._metrics._counts import _FOLD_AT, ResultCounts

    counts = ResultCounts()
    threads = [
        threading.Thread(
            target=lambda: [counts.count(("a", "b"), "answer", "not_sampled") for _ in range(3000)]
        )
        for _ in range(2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(counts._queued) <= _FOLD_AT + 2  # folded by a caller past the bound
    assert counts.by_outcome()["not_sampled"] == 2 * 3000 * 2
    assert not counts._queued
