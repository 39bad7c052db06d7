"""tool_call_accuracy and tool_call_f1 against what ragas 0.4.3 itself returned.

``data/run_cases_ragas_pydantic.jsonl`` holds cases recorded from ragas' ``ToolCallAccuracy``
and ``ToolCallF1`` by ``data/record_run_cases_ragas_pydantic.py`` (its own virtualenv; this
test needs no ragas). Every case is replayed three ways (the calls as a list, as a `Run` whose
LLM step also requested them, and with the expected calls in an `Expected`), and each must give
exactly the recorded number. The rest checks options, details and the corners ragas has no say
on (text arguments, an `Expected` without tool calls).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from evaluators.recorded_runs import RAGAS_PYDANTIC, recorded

from tracesim import ConfigError
from tracesim.evaluators._ragas_tool_calls import ToolCallAccuracy, ToolCallF1
from tracesim.evaluators._run_checks import RunEvaluator
from tracesim.runs import Expected, Run, Step, ToolCall

TYPES: dict[str, type[RunEvaluator]] = {"tool_call_accuracy": ToolCallAccuracy, "tool_call_f1": ToolCallF1}


def _cases() -> list[dict[str, Any]]:
    return recorded(RAGAS_PYDANTIC, TYPES)


def as_run(calls: list[dict[str, Any]]) -> Run:
    """A run that made ``calls``: an LLM step requesting them all, then one tool step each
    (a call's error on its step), so `Run.tool_calls` must count each call once."""
    made = [ToolCall.of({key: value for key, value in item.items() if key != "error"}) for item in calls]
    steps = [Step(kind="llm", name="chat", requested=tuple(made))]
    steps += [
        Step(kind="tool", name=call.name, tool_call=call, error=item.get("error"))
        for call, item in zip(made, calls, strict=True)
    ]
    return Run(steps=tuple(steps), output="done")


def test_enough_cases_per_evaluator() -> None:
    for kind in TYPES:
        assert sum(row["evaluator"] == kind for row in _cases()) >= 30, kind


@pytest.mark.parametrize("kind", sorted(TYPES))
def test_same_numbers_as_ragas(kind: str) -> None:
    """One test per evaluator: a failure lists every case that differs."""
    differ = []
    for case in (row for row in _cases() if row["evaluator"] == kind):
        assert case["peer"]["package"] == "ragas"
        evaluator = TYPES[kind](**case["options"])
        expected = case["expected"]
        scores = {
            "list": evaluator.evaluate(case["actual"], expected).score,
            "run": evaluator.evaluate(as_run(case["actual"]), expected).score,
            "expected": evaluator.evaluate(case["actual"], Expected(tool_calls=expected)).score,
            "json": evaluator.evaluate(json.dumps(case["actual"]), json.dumps(expected)).score,
        }
        if any(score != case["score"] for score in scores.values()):
            differ.append((case["options"], case["actual"], expected, case["score"], scores))
    assert not differ, differ


def test_str_comparison_and_order() -> None:
    weather = [{"name": "weather", "arguments": {"city": "Paris", "days": 3}}]
    as_text = [{"name": "weather", "arguments": {"city": "Paris", "days": "3"}}]
    as_float = [{"name": "weather", "arguments": {"city": "Paris", "days": 3.0}}]
    assert ToolCallAccuracy().evaluate(weather, as_text).score == 1.0
    result = ToolCallAccuracy().evaluate(as_float, weather)
    assert result.score == 0.5
    (pair,) = result.details["mismatched"]
    assert pair["mismatched_keys"] == ["days"]
    assert pair["missing_keys"] == []
    assert pair["expected"] == {"city": "Paris", "days": 3}
    assert pair["actual"]["days"] == 3.0


def test_names_not_aligned_details() -> None:
    actual = [{"name": "b"}, {"name": "c"}]
    result = ToolCallAccuracy().evaluate(actual, [{"name": "a"}, {"name": "b"}])
    assert result.score == 0.0
    assert result.passed is False
    assert result.details["aligned"] is False
    assert result.details["missing"] == [{"name": "a", "arguments": {}}]
    assert result.details["extra"] == [{"name": "c", "arguments": {}}]
    json.dumps(result.details)


def test_text_arguments_compared_as_text() -> None:
    text = [{"name": "search", "arguments": "warsaw weather"}]
    assert ToolCallAccuracy().evaluate(text, text).score == 1.0
    result = ToolCallAccuracy().evaluate(text, [{"name": "search", "arguments": {"q": "warsaw weather"}}])
    assert result.score == 0.0
    assert result.details["mismatched"][0]["compared_as_text"] is True
    assert ToolCallF1().evaluate(text, text).score == 1.0
    assert ToolCallF1().evaluate(text, [{"name": "search", "arguments": "warsaw  weather"}]).score == 0.0


def test_f1_details_and_duplicates() -> None:
    search = {"name": "search", "arguments": {"q": "a"}}
    result = ToolCallF1().evaluate([search, search, {"name": "open"}], [search])
    assert result.score == 0.6667
    assert result.details["precision"] == 0.5
    assert result.details["recall"] == 1.0
    assert result.details["extra"] == [{"name": "open", "arguments": {}}]
    assert result.details["missing"] == []
    assert ToolCallF1().evaluate([], []).score == 0.0
    assert ToolCallAccuracy().evaluate([], []).score == 1.0


def test_expected_without_tool_calls_is_skipped() -> None:
    for evaluator in (ToolCallAccuracy(), ToolCallF1()):
        result = evaluator.evaluate([{"name": "a"}], Expected(output="text"))
        assert result.status == "skipped"
        assert "tool calls" in (result.explanation or "")
        assert evaluator.evaluate([{"name": "a"}], None).status == "skipped"
        assert type(evaluator).scores_runs is True


def test_bad_data_is_an_error_result() -> None:
    result = ToolCallAccuracy().evaluate([{"arguments": {}}], [{"name": "a"}])
    assert result.status == "error"
    assert "output[0].name" in (result.error or "")


@pytest.mark.parametrize(
    ("make", "setting"),
    [
        (lambda: ToolCallAccuracy(strict_order="yes"), "tool_call_accuracy.strict_order"),
        (lambda: ToolCallAccuracy(threshold=2), "tool_call_accuracy.threshold"),
        (lambda: ToolCallF1(threshold=-0.1), "tool_call_f1.threshold"),
    ],
)
def test_bad_options(make: Any, setting: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make()
    assert caught.value.setting == setting
