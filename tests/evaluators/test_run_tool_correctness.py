"""tool_correctness gives deepeval's numbers, refuses bad options, and says what it matched.

The reference scores in ``data/run_cases_agentevals_deepeval.jsonl`` were recorded from
deepeval 4.3.1 by ``data/record_run_cases_agentevals_deepeval.py`` (its ToolCorrectnessMetric
without available tools, so without its model-judged part).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from evaluators.recorded_runs import AGENTEVALS_DEEPEVAL, recorded

from tracesim import ConfigError
from tracesim.evaluators._tool_correctness import ToolCorrectness
from tracesim.runs import Expected, Run, Step, ToolCall

CASES = recorded(AGENTEVALS_DEEPEVAL, {"tool_correctness"})


def test_enough_cases_cover_every_option() -> None:
    assert len(CASES) >= 40
    for key in ("consider_ordering", "exact_match", "strict_mode"):
        assert {case["options"][key] for case in CASES} == {False, True}
    assert {tuple(case["options"]["params"]) for case in CASES} == {
        (),
        ("input_parameters",),
        ("output",),
        ("input_parameters", "output"),
    }
    assert len({case["score"] for case in CASES}) > 8  # partial credits, not only 0 and 1


def test_same_scores_and_verdicts_as_deepeval() -> None:
    differ = []
    for case in CASES:
        result = ToolCorrectness(**case["options"]).evaluate(case["output"], case["expected"])
        if result.status != "ok" or result.score != case["score"] or result.passed != case["passed"]:
            differ.append((case["label"], case["options"], case["score"], result.score, result.error))
    assert differ == []


@pytest.mark.parametrize(
    ("options", "setting"),
    [
        ({"consider_ordering": "yes"}, "tool_correctness.consider_ordering"),
        ({"exact_match": 1}, "tool_correctness.exact_match"),
        ({"strict_mode": None}, "tool_correctness.strict_mode"),
        ({"params": "output"}, "tool_correctness.params"),
        ({"params": ["arguments"]}, "tool_correctness.params"),
        ({"params": 3}, "tool_correctness.params"),
        ({"strict_mode": True, "threshold": 0.5}, "tool_correctness.threshold"),
        ({"threshold": -1}, "tool_correctness.threshold"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, Any], setting: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ToolCorrectness(**options)
    assert caught.value.setting == setting


def test_thresholds() -> None:
    assert ToolCorrectness().threshold == 0.5
    assert ToolCorrectness(strict_mode=True).threshold == 1.0
    assert ToolCorrectness(strict_mode=True, threshold=1).threshold == 1.0


def test_details_name_matched_missing_extra_and_partial_calls() -> None:
    actual = [{"name": "search", "arguments": {"q": "a", "n": 1}}, {"name": "delete_all"}]
    expected = [{"name": "search", "arguments": {"q": "a", "n": 2}}, {"name": "answer"}]
    result = ToolCorrectness(params=["input_parameters"]).evaluate(actual, expected)
    assert result.score == 0.25
    details = result.details
    assert details["matched"] == [[0, 0, 0.5]]
    assert details["missing"] == [{"name": "answer", "arguments": {}}]
    assert details["extra"] == [{"name": "delete_all", "arguments": {}}]
    assert details["partial"][0]["credit"] == 0.5
    json.dumps(details)


def test_ordering_details_follow_the_common_subsequence() -> None:
    result = ToolCorrectness(consider_ordering=True).evaluate(
        [{"name": "b"}, {"name": "a"}], [{"name": "a"}, {"name": "b"}]
    )
    assert result.score == 0.5
    assert len(result.details["matched"]) == 1
    assert result.details["method"] == "ordering"


def test_exact_match_details_say_the_first_difference() -> None:
    result = ToolCorrectness(exact_match=True).evaluate(
        [{"name": "a"}, {"name": "c"}], [{"name": "a"}, {"name": "b"}]
    )
    assert result.score == 0.0
    assert result.details["first_difference"]["position"] == 1


def test_text_arguments_are_compared_as_text_and_said_so() -> None:
    evaluator = ToolCorrectness(params=["input_parameters"])
    same = evaluator.evaluate(
        [{"name": "sql", "arguments": "SELECT 1"}], [{"name": "sql", "arguments": "SELECT 1"}]
    )
    assert same.score == 1.0
    assert same.details["arguments_as_text"] == ["sql"]
    other = evaluator.evaluate(
        [{"name": "sql", "arguments": "SELECT 2"}], [{"name": "sql", "arguments": "SELECT 1"}]
    )
    assert other.score == 0.0
    mixed = evaluator.evaluate([{"name": "sql", "arguments": "q"}], [{"name": "sql", "arguments": {"q": 1}}])
    assert mixed.score == 0.0


def test_a_run_with_requested_and_executed_calls() -> None:
    search = ToolCall("search", {"q": "warsaw"}, id="c1")
    run = Run(
        steps=(
            Step(
                kind="llm", name="chat", requested=(search, ToolCall("weather", {"city": "Warsaw"}, id="c2"))
            ),
            Step(
                kind="tool",
                name="search",
                tool_call=ToolCall("search", {"q": "warsaw"}, output="found", id="c1"),
            ),
            Step(kind="llm", name="chat"),
        ),
        output="12 C",
    )
    expected = Expected(
        output="12 C",
        tool_calls=[
            {"name": "search", "arguments": {"q": "warsaw"}, "output": "found"},
            {"name": "weather", "arguments": {"city": "Warsaw"}},
        ],
    )
    # search was executed (its output is known); weather was only requested: both count, once.
    assert ToolCorrectness(params=["input_parameters", "output"]).evaluate(run, expected).score == 1.0
    # Run.tool_calls places a call only requested at the step that requested it: weather first.
    exact = ToolCorrectness(exact_match=True, params=["output"])
    assert exact.evaluate(run, expected).score == 0.0
    assert exact.evaluate(run, list(reversed(expected.tool_calls or ()))).score == 1.0


def test_expected_without_tool_calls_is_skipped() -> None:
    assert ToolCorrectness().evaluate([{"name": "a"}], Expected(output="x")).status == "skipped"


def test_is_a_run_evaluator() -> None:
    assert ToolCorrectness.scores_runs is True
