"""tool_names, trajectory, tool_arguments and run_budget against what pydantic-evals 2.62.0 returned.

``data/run_cases_ragas_pydantic.jsonl`` holds cases recorded from pydantic-evals'
``ToolCorrectness``, ``TrajectoryMatch``, ``ArgumentCorrectness`` and ``MaxToolCalls`` by
``data/record_run_cases_ragas_pydantic.py``, which fed them span trees of real OpenTelemetry
spans (this test needs no pydantic-evals). Every case is replayed with the calls as a list and
as a `Run` (failed calls carrying their error on the tool step), and must give exactly the
recorded number. ``run_budget``'s other limits have no peer and are tested directly.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from evaluators.recorded_runs import RAGAS_PYDANTIC, recorded

from tracesim import ConfigError
from tracesim.evaluators._run_checks import RunBudget, RunEvaluator, ToolArguments, ToolNames, Trajectory
from tracesim.runs import Expected, Run, Step, ToolCall

TYPES: dict[str, type[RunEvaluator]] = {
    "tool_names": ToolNames,
    "trajectory": Trajectory,
    "tool_arguments": ToolArguments,
    "run_budget": RunBudget,
}


def _cases() -> list[dict[str, Any]]:
    return recorded(RAGAS_PYDANTIC, TYPES)


def as_run(calls: list[dict[str, Any]]) -> Run:
    """A run that made ``calls``: a chat step, then one tool step per call, its error on the step."""
    steps = [Step(kind="llm", name="chat", input_tokens=10, output_tokens=5)]
    for item in calls:
        call = ToolCall.of({key: value for key, value in item.items() if key != "error"})
        steps.append(Step(kind="tool", name=call.name, tool_call=call, error=item.get("error")))
    return Run(steps=tuple(steps), output="done")


def test_enough_cases_per_evaluator() -> None:
    for kind in TYPES:
        assert sum(row["evaluator"] == kind for row in _cases()) >= 30, kind


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_same_numbers_as_pydantic_evals(kind: str) -> None:
    """One test per evaluator: a failure lists every case that differs."""
    differ = []
    for case in (row for row in _cases() if row["evaluator"] == kind):
        assert case["peer"]["package"] == "pydantic-evals"
        evaluator = TYPES[kind](**case["options"])
        expected = case["expected"]
        scores = {
            "list": evaluator.evaluate(case["actual"], expected).score,
            "run": evaluator.evaluate(as_run(case["actual"]), expected).score,
        }
        if expected is not None:
            scores["expected"] = evaluator.evaluate(case["actual"], Expected(tool_calls=expected)).score
        if any(score != case["score"] for score in scores.values()):
            differ.append((case["options"], case["actual"], expected, case["score"], scores, case["reason"]))
    assert not differ, differ


def test_tool_names_details() -> None:
    actual = [{"name": "search"}, {"name": "fetch"}, {"name": "fetch"}, {"name": "write", "error": "x"}]
    result = ToolNames().evaluate(actual, [{"name": "search"}, {"name": "search"}, {"name": "write"}])
    assert result.score == 0.0
    assert result.details["missing"] == {"search": 1, "write": 1}
    assert result.details["extra"] == {"fetch": 2}
    assert "missing" in (result.explanation or "")
    assert "unexpected" in (result.explanation or "")
    failed_counted = ToolNames(include_failed=True, allow_extra=True)
    assert failed_counted.evaluate(actual, [{"name": "write"}, {"name": "search"}]).score == 1.0


def test_trajectory_details() -> None:
    result = Trajectory(order="in_order").evaluate(
        [{"name": "a"}, {"name": "x"}, {"name": "b"}], [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    )
    assert result.details["lcs"] == 2
    assert result.details["precision"] == pytest.approx(2 / 3)
    assert result.details["recall"] == pytest.approx(2 / 3)
    assert result.details["missing"] == {"c": 1}
    assert result.details["extra"] == {"x": 1}
    assert Trajectory(order="any_order").evaluate([], []).score == 1.0
    assert Trajectory().order == "exact"
    json.dumps(result.details)


def test_tool_arguments_details() -> None:
    check = ToolArguments(tool="lookup", arguments={"city": "Paris", "days": 3, "unit": "C"}, match="exact")
    result = check.evaluate(
        [{"name": "lookup", "arguments": {"city": "Paris", "days": 4, "lang": "fr"}}], None
    )
    assert result.score == 0.0
    assert result.details["missing_keys"] == ["unit"]
    assert result.details["mismatched"] == {"days": {"expected": 3, "actual": 4}}
    assert result.details["extra_keys"] == ["lang"]
    text = check.evaluate([{"name": "lookup", "arguments": "Paris, 3 days"}], None)
    assert text.score == 0.0
    assert text.details["arguments_text"] is True
    assert "text" in (text.explanation or "")
    assert ToolArguments.requires_expected is False
    assert check.evaluate([{"name": "lookup"}], None).status == "ok"
    assert ToolArguments(tool="t", arguments='{"a": 1}').arguments == {"a": 1}


def test_tool_arguments_occurrence_out_of_range() -> None:
    calls = [{"name": "t", "arguments": {"a": 1}}]
    result = ToolArguments(tool="t", arguments={"a": 1}, occurrence=1).evaluate(calls, None)
    assert result.score == 0.0
    assert result.details["calls_of_tool"] == 1


def test_run_budget_limits_without_peer() -> None:
    run = Run(
        steps=(
            Step(kind="llm", name="chat", input_tokens=700, output_tokens=100, cost_usd=0.02),
            Step(kind="tool", name="search", tool_call=ToolCall("search"), duration_s=0.5),
            Step(kind="llm", name="chat", input_tokens=300, output_tokens=50, cost_usd=0.03),
        ),
        duration_s=4.0,
    )
    within = RunBudget(
        max_tool_calls=1, max_llm_calls=2, max_tokens=1150, max_cost_usd=0.05, max_duration_s=4
    )
    result = within.evaluate(run, None)
    assert result.score == 1.0
    assert result.details["exceeded"] == {}
    assert result.details["unknown"] == []
    assert result.details["limits"]["max_tokens"] == {"limit": 1150, "actual": 1150}
    over = RunBudget(max_llm_calls=1, max_tokens=1000, max_cost_usd=0.04, max_duration_s=3.5).evaluate(
        run, None
    )
    assert over.score == 0.0
    assert over.passed is False
    exceeded = over.details["exceeded"]
    assert exceeded["max_llm_calls"] == {"limit": 1, "actual": 2, "over": 1}
    assert exceeded["max_tokens"] == {"limit": 1000, "actual": 1150, "over": 150}
    assert exceeded["max_cost_usd"]["over"] == pytest.approx(0.01)
    assert exceeded["max_duration_s"] == {"limit": 3.5, "actual": 4.0, "over": 0.5}
    assert "max_tokens: 1150 > 1000 (over by 150)" in (over.explanation or "")
    json.dumps(over.details)


def test_run_budget_unknown_values_are_not_checked() -> None:
    run = Run(steps=(Step(kind="tool", name="a", tool_call=ToolCall("a")),))
    result = RunBudget(max_cost_usd=0.0, max_duration_s=1.0, max_tool_calls=1).evaluate(run, None)
    assert result.score == 1.0
    assert result.details["unknown"] == ["max_cost_usd", "max_duration_s"]
    listed = RunBudget(max_llm_calls=0, max_tool_calls=0).evaluate([{"name": "a"}], None)
    assert listed.score == 0.0
    assert listed.details["unknown"] == ["max_llm_calls"]


@pytest.mark.parametrize(
    ("make", "setting"),
    [
        (lambda: ToolNames(allow_extra="no"), "tool_names.allow_extra"),
        (lambda: ToolNames(include_failed=1), "tool_names.include_failed"),
        (lambda: Trajectory(order="strict"), "trajectory.order"),
        (lambda: ToolArguments(tool="", arguments={}), "tool_arguments.tool"),
        (lambda: ToolArguments(tool="t", arguments=[1]), "tool_arguments.arguments"),
        (lambda: ToolArguments(tool="t", arguments="not json"), "tool_arguments.arguments"),
        (lambda: ToolArguments(tool="t", arguments={}, match="superset"), "tool_arguments.match"),
        (lambda: ToolArguments(tool="t", arguments={}, occurrence=-1), "tool_arguments.occurrence"),
        (lambda: ToolArguments(tool="t", arguments={}, occurrence="second"), "tool_arguments.occurrence"),
        (lambda: ToolArguments(tool="t", arguments={}, occurrence=True), "tool_arguments.occurrence"),
        (lambda: RunBudget(), "run_budget.max_tool_calls"),
        (lambda: RunBudget(max_tool_calls=-1), "run_budget.max_tool_calls"),
        (lambda: RunBudget(max_tokens=1.5), "run_budget.max_tokens"),
        (lambda: RunBudget(max_cost_usd=float("nan")), "run_budget.max_cost_usd"),
        (lambda: RunBudget(max_duration_s=-1), "run_budget.max_duration_s"),
        (lambda: RunBudget(max_llm_calls=1, include_failed="yes"), "run_budget.include_failed"),
    ],
)
def test_bad_options(make: Any, setting: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make()
    assert caught.value.setting == setting


def test_scores_runs_and_skips() -> None:
    for kind in TYPES.values():
        assert kind.scores_runs is True
    assert ToolNames().evaluate([{"name": "a"}], Expected(output="x")).status == "skipped"
    assert Trajectory().evaluate([{"name": "a"}], None).status == "skipped"
    assert RunBudget(max_tool_calls=1).evaluate([{"name": "a"}], Expected(output="x")).score == 1.0
