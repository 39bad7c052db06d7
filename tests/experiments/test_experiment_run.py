"""Running a task over a dataset: passing, failing and erroring cases, traces, limits."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import tracesim
from tracesim.evaluators import ExactMatch, Levenshtein, evaluator
from tracesim.experiments import Case, Dataset, ExperimentReport
from tracesim.tracefile import load_spans

ANSWERS = {
    "Where was Marie Curie born?": "Marie Curie was born in Warsaw.",
    "Where was Marie Curie born, and when?": "Marie Curie was born in Warsaw in 1867.",
}
DATASET = Dataset(
    [
        Case("Where was Marie Curie born?", "Marie Curie was born in Warsaw.", id="right"),
        Case("Where was Marie Curie born, and when?", "Marie Curie was born in Warsaw.", id="wordy"),
        Case("What did Alan Turing propose?", "The imitation game.", id="unknown"),
    ],
    name="curie",
)
EVALUATORS = [ExactMatch(), Levenshtein(threshold=0.8)]


def answer_sync(question: str) -> str:
    if question not in ANSWERS:
        raise LookupError(f"no answer for {question!r}")
    return ANSWERS[question]


async def answer_async(question: str) -> str:
    await asyncio.sleep(0)  # a real suspension point, as an LLM call would have
    return answer_sync(question)


def check_rows(report: ExperimentReport) -> None:
    right, wordy, unknown = (report.row(case_id) for case_id in ("right", "wordy", "unknown"))
    assert (right.passed, right.score("exact"), right.score("levenshtein")) == (True, 1.0, 1.0)
    assert right.output == "Marie Curie was born in Warsaw."
    assert right.error is None
    assert (wordy.passed, wordy.score("exact"), wordy.score("levenshtein")) == (False, 0.0, 0.79)
    assert wordy.scores["levenshtein"].label == "fail"
    assert (unknown.passed, unknown.output, unknown.scores) == (False, None, {})
    assert unknown.error == "LookupError: no answer for 'What did Alan Turing propose?'"
    assert unknown.error_type == "LookupError"
    assert report.passed == 1
    assert report.failed == 2
    assert report.errors == 1
    assert report.pass_rate == pytest.approx(1 / 3)
    exact, levenshtein = report.summary["exact"], report.summary["levenshtein"]
    assert (exact.count, exact.mean, exact.passed, exact.failed, exact.pass_rate) == (2, 0.5, 1, 1, 0.5)
    assert levenshtein.mean == pytest.approx(0.895)
    assert [case.case_id for case in report.worst_first()] == ["unknown", "wordy", "right"]


@pytest.mark.parametrize("task", [answer_sync, answer_async], ids=["sync", "async"])
def test_a_passing_a_failing_and_an_erroring_case(task: Callable[[str], Any]) -> None:
    report = DATASET.evaluate(task, evaluators=EVALUATORS)
    check_rows(report)
    assert report.name == task.__name__
    assert report.dataset == "curie"
    assert all(
        row.trace_id is None for row in report.rows
    )  # tracesim is not configured: no spans, no warning
    assert all(row.duration_s >= 0 for row in report.rows)


@tracesim.trace(kind="tool")
def lookup(question: str) -> str:
    return answer_sync(question)


@tracesim.trace(kind="agent")
def agent_sync(question: str) -> str:
    return lookup(question)


@tracesim.trace(kind="agent")
async def agent_async(question: str) -> str:
    await asyncio.sleep(0)
    return lookup(question)


@pytest.mark.parametrize("task", [agent_sync, agent_async], ids=["sync", "async"])
def test_each_run_is_a_trace_with_the_tasks_calls_nested_and_the_scores_on_it(
    task: Callable[[str], Any],
) -> None:
    tracesim.configure(exporters=["jsonl"], service_name="experiments")
    with tracesim.span("outer"):  # an enclosing span does not swallow the runs: each is its own trace
        report = DATASET.evaluate(task, evaluators=EVALUATORS, name="curie-agent")
    tracesim.force_flush()
    check_rows(report)
    spans = load_spans(Path(".tracesim/traces.jsonl"))
    for row in report.rows:
        in_trace = {s.name: s for s in spans if s.trace_id == row.trace_id}
        case = in_trace["experiment curie-agent"]
        assert case.parent_span_id is None
        assert case.span_id == row.span_id
        assert in_trace[task.__name__].parent_span_id == case.span_id
        assert in_trace["lookup"].parent_span_id == in_trace[task.__name__].span_id
        attributes = case.attributes
        assert attributes["openinference.span.kind"] == "CHAIN"
        assert attributes["tracesim.experiment.name"] == "curie-agent"
        assert attributes["tracesim.experiment.dataset"] == "curie"
        assert attributes["tracesim.experiment.case_id"] == row.case_id
        assert attributes["tracesim.experiment.repeat"] == 0
        assert attributes["tracesim.experiment.run_id"] == report.run_id
        assert attributes["input.value"] == row.input
        assert attributes["tracesim.expected.value"] == row.expected
    right = next(s for s in spans if s.span_id == report.row("right").span_id)
    assert right.attributes["output.value"] == "Marie Curie was born in Warsaw."
    assert right.attributes["tracesim.eval.levenshtein.score"] == 1.0
    assert [e.attributes["gen_ai.evaluation.name"] for e in right.event("gen_ai.evaluation.result")] == [
        "exact",
        "levenshtein",
    ]
    wordy = next(s for s in spans if s.span_id == report.row("wordy").span_id)
    assert wordy.attributes["tracesim.eval.levenshtein.passed"] is False
    unknown = next(s for s in spans if s.span_id == report.row("unknown").span_id)
    assert unknown.status_code == "ERROR"
    assert unknown.attributes["error.type"] == "LookupError"
    assert "output.value" not in unknown.attributes


def test_repeats_are_separate_runs_and_traces() -> None:
    tracesim.configure(exporters=["jsonl"])
    report = DATASET.evaluate(answer_sync, evaluators=[ExactMatch()], repeat=3)
    assert [(r.case_id, r.repeat) for r in report.rows][:3] == [("right", 0), ("right", 1), ("right", 2)]
    assert len({r.trace_id for r in report.rows}) == 9


def test_a_task_past_its_time_limit_is_an_error_row() -> None:
    released = threading.Event()

    def stuck_sync(question: str) -> str:
        if question.startswith("What"):
            released.wait()  # until the test lets it go: it can only time out
        return answer_sync(question)

    async def stuck_async(question: str) -> str:
        if question.startswith("What"):
            await asyncio.Event().wait()  # never set: the experiment cancels it
        return answer_sync(question)

    try:
        for task in (stuck_sync, stuck_async):
            report = DATASET.evaluate(task, evaluators=EVALUATORS, timeout_s=0.05)
            row = report.row("unknown")
            assert row.error == "TimeoutError: the task gave no output within timeout_s=0.05"
            assert report.row("right").passed is True
    finally:
        released.set()


def test_evaluator_errors_and_timeouts_fail_the_run_without_raising() -> None:
    @evaluator(threshold=0.5)
    def broken(output: str, expected: str) -> float:
        raise ValueError("metric exploded")

    @evaluator(threshold=0.5, timeout_s=0.05)
    async def hung(output: str, expected: str) -> float:
        await asyncio.Event().wait()
        return 1.0

    report = DATASET.evaluate(answer_sync, evaluators=[ExactMatch(), broken, hung])
    right = report.row("right")
    assert right.passed is False
    assert right.scores["broken"].error == "ValueError: metric exploded"
    assert right.scores["hung"].error_type == "timeout"
    assert report.summary["broken"].errors == 2
    assert report.summary["broken"].pass_rate == 0.0


def test_sync_runs_respect_max_concurrency() -> None:
    lock = threading.Lock()
    in_flight = [0, 0]  # now, most seen
    pair = threading.Barrier(2)

    def task(value: int) -> int:
        with lock:
            in_flight[0] += 1
            in_flight[1] = max(in_flight)
        pair.wait(timeout=30)  # two runs must be in flight together to get past this
        with lock:
            in_flight[0] -= 1
        return value

    report = Dataset([Case(n, n) for n in range(6)]).evaluate(task, evaluators=["exact"], max_concurrency=2)
    assert report.pass_rate == 1.0
    assert in_flight[1] == 2


def test_evaluate_inside_an_event_loop_points_to_aevaluate() -> None:
    async def main() -> ExperimentReport:
        with pytest.raises(RuntimeError, match=r"use `await dataset.aevaluate\(task, ...\)`"):
            DATASET.evaluate(answer_async)
        return await DATASET.aevaluate(answer_async, evaluators=EVALUATORS)

    check_rows(asyncio.run(main()))


def test_cases_without_expected_output_are_skipped_not_scored() -> None:
    report = Dataset([Case("Where was Marie Curie born?")]).evaluate(answer_sync, evaluators=EVALUATORS)
    row = report.rows[0]
    assert {r.status for r in row.scores.values()} == {"skipped"}
    assert row.passed is None
    assert report.pass_rate is None
    assert report.summary["exact"].skipped == 1


@pytest.mark.parametrize(
    ("arguments", "setting"),
    [
        ({"repeat": 0}, "repeat"),
        ({"max_concurrency": 0}, "max_concurrency"),
        ({"timeout_s": -1}, "timeout_s"),
        ({"evaluators": ["no-such-metric"]}, "type"),
        ({"evaluators": [ExactMatch(), ExactMatch()]}, "experiment.evaluators"),
    ],
)
def test_bad_arguments_raise_before_anything_runs(arguments: dict[str, Any], setting: str) -> None:
    calls: list[str] = []
    with pytest.raises(tracesim.ConfigError) as caught:
        DATASET.evaluate(calls.append, **arguments)
    assert setting in caught.value.setting
    assert calls == []


def test_the_report_survives_a_json_round_trip(tmp_path: Path) -> None:
    report = DATASET.evaluate(answer_sync, evaluators=EVALUATORS)
    loaded = ExperimentReport.load(report.to_json(tmp_path / "run.json"))
    assert loaded.rows == report.rows
    assert loaded.summary == report.summary
    assert loaded.evaluators == report.evaluators
    assert str(loaded) == str(report)
    (tmp_path / "other.json").write_text('{"schema": "something/else"}')
    with pytest.raises(ValueError, match=r"other\.json: not a tracesim experiment run"):
        ExperimentReport.load(tmp_path / "other.json")
