"""trajectory_match gives agentevals' numbers, refuses bad options, and says what differed.

The reference scores in ``data/run_cases_agentevals_deepeval.jsonl`` were recorded from
agentevals 0.0.9 by ``data/record_run_cases_agentevals_deepeval.py``.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from evaluators.recorded_runs import AGENTEVALS_DEEPEVAL, recorded

from tracesim import ConfigError
from tracesim.evaluators._trajectory_match import TrajectoryMatch
from tracesim.runs import Expected, Run, Step, ToolCall

CASES = recorded(AGENTEVALS_DEEPEVAL, {"trajectory_match"})


def test_enough_cases_cover_every_mode() -> None:
    assert len(CASES) >= 40
    assert {case["options"]["mode"] for case in CASES} == {"strict", "unordered", "subset", "superset"}
    assert {case["options"]["args"] for case in CASES} == {"exact", "ignore", "subset", "superset"}
    assert any("tool_args" in case["options"] for case in CASES)
    assert {case["score"] for case in CASES} == {0.0, 1.0}


def test_same_scores_as_agentevals() -> None:
    differ = []
    for case in CASES:
        result = TrajectoryMatch(**case["options"]).evaluate(case["output"], case["expected"])
        if result.status != "ok" or result.score != case["score"]:
            differ.append((case["label"], case["options"], case["score"], result.score, result.error))
    assert differ == []


def test_json_text_and_expected_object_give_the_same_scores() -> None:
    for case in CASES[::7]:
        if case["options"]["mode"] == "strict" and any(isinstance(item, list) for item in case["expected"]):
            continue  # an Expected holds a flat list: one message per call
        evaluator = TrajectoryMatch(**case["options"])
        expected = Expected(tool_calls=[c for item in case["expected"] for c in _group(item)])
        result = evaluator.evaluate(json.dumps(case["output"]), expected)
        assert result.score == case["score"], case["label"]


def _group(item: Any) -> list[Any]:
    return item if isinstance(item, list) else [item]


@pytest.mark.parametrize(
    ("options", "setting"),
    [
        ({"mode": "loose"}, "trajectory_match.mode"),
        ({"args": "fuzzy"}, "trajectory_match.args"),
        ({"tool_args": ["q"]}, "trajectory_match.tool_args"),
        ({"tool_args": {"search": "fuzzy"}}, "trajectory_match.tool_args.search"),
        ({"tool_args": {"search": []}}, "trajectory_match.tool_args.search"),
        ({"tool_args": {"search": ["q", 3]}}, "trajectory_match.tool_args.search"),
        ({"tool_args": {"search": 3}}, "trajectory_match.tool_args.search"),
        ({"threshold": 2.0}, "trajectory_match.threshold"),
    ],
)
def test_bad_options_name_the_option(options: dict[str, Any], setting: str) -> None:
    with pytest.raises(ConfigError) as caught:
        TrajectoryMatch(**options)
    assert caught.value.setting == setting


def test_details_name_missing_extra_and_mismatched_calls() -> None:
    actual = [{"name": "search", "arguments": {"q": "a"}}, {"name": "delete_all"}]
    expected = [{"name": "search", "arguments": {"q": "b"}}, {"name": "answer"}]
    result = TrajectoryMatch(mode="unordered").evaluate(actual, expected)
    assert result.score == 0.0
    details = result.details
    assert details["missing"] == [{"name": "answer", "arguments": {}}]
    assert details["extra"] == [{"name": "delete_all", "arguments": {}}]
    assert details["mismatched"] == [
        {
            "call": {"name": "search", "arguments": {"q": "b"}},
            "closest": {"name": "search", "arguments": {"q": "a"}},
        }
    ]
    json.dumps(details)


def test_strict_details_say_where_the_messages_differ() -> None:
    result = TrajectoryMatch().evaluate([[{"name": "a"}, {"name": "b"}]], [{"name": "a"}, {"name": "b"}])
    assert result.details["messages"] == {"actual": 1, "expected": 2}
    result = TrajectoryMatch().evaluate([{"name": "a"}, {"name": "c"}], [{"name": "a"}, {"name": "b"}])
    assert result.details["first_difference"]["message"] == 1
    assert result.details["first_difference"]["unmatched"] == {"name": "c", "arguments": {}}


def test_text_arguments_are_compared_as_text_and_said_so() -> None:
    evaluator = TrajectoryMatch(mode="superset", args="subset")
    same = evaluator.evaluate(
        [{"name": "sql", "arguments": "SELECT 1"}], [{"name": "sql", "arguments": "SELECT 1"}]
    )
    assert same.score == 1.0
    assert same.details["arguments_as_text"] == ["sql"]
    other = evaluator.evaluate(
        [{"name": "sql", "arguments": "SELECT 2"}], [{"name": "sql", "arguments": "SELECT 1"}]
    )
    assert other.score == 0.0
    keys = TrajectoryMatch(tool_args={"sql": ["q"]})
    assert (
        keys.evaluate([{"name": "sql", "arguments": "x"}], [{"name": "sql", "arguments": {"q": None}}]).score
        == 0.0
    )
    assert (
        TrajectoryMatch(args="ignore").evaluate([{"name": "sql", "arguments": "x"}], [{"name": "sql"}]).score
        == 1.0
    )


def _run() -> Run:
    search = ToolCall("search", {"q": "warsaw"}, id="c1")
    weather = ToolCall("weather", {"city": "Warsaw"}, id="c2")
    answer = ToolCall("answer", {"text": "12 C"})
    return Run(
        steps=(
            Step(kind="llm", name="chat", requested=(search, weather)),
            Step(
                kind="tool",
                name="search",
                tool_call=ToolCall("search", {"q": "warsaw"}, output="...", id="c1"),
            ),
            Step(kind="tool", name="weather", tool_call=ToolCall("weather", {"city": "Warsaw"}, id="c2")),
            Step(kind="llm", name="chat"),
            Step(kind="tool", name="answer", tool_call=answer),  # executed, never requested
        ),
        output="12 C",
    )


def test_a_run_is_read_as_messages_of_requested_calls() -> None:
    run = _run()
    one_message = [
        [
            {"name": "weather", "arguments": {"city": "Warsaw"}},
            {"name": "search", "arguments": {"q": "warsaw"}},
        ],
        {"name": "answer", "arguments": {"text": "12 C"}},
    ]
    assert TrajectoryMatch().evaluate(run, one_message).score == 1.0
    flat = [one_message[0][1], one_message[0][0], one_message[1]]
    result = TrajectoryMatch().evaluate(run, flat)
    assert result.score == 0.0  # parallel calls are one message; a flat list is one message per call
    assert result.details["messages"] == {"actual": 2, "expected": 3}
    assert TrajectoryMatch(mode="unordered").evaluate(run, flat).score == 1.0
    assert TrajectoryMatch(mode="superset").evaluate(run, Expected(tool_calls=flat[:1])).score == 1.0


def test_requested_calls_paired_by_name_and_arguments_count_once() -> None:
    call = ToolCall("search", {"q": "x"})
    run = Run(
        steps=(
            Step(kind="llm", name="chat", requested=(call,)),
            Step(kind="tool", name="search", tool_call=call),
        )
    )
    assert TrajectoryMatch().evaluate(run, [{"name": "search", "arguments": {"q": "x"}}]).score == 1.0


def test_a_request_with_an_id_and_an_execution_without_one_are_one_call() -> None:
    run = Run(
        steps=(
            Step(kind="llm", name="chat", requested=(ToolCall("search", {"q": "x"}, id="c1"),)),
            Step(kind="tool", name="search", tool_call=ToolCall("search", {"q": "x"}, output="hit")),
        )
    )
    assert len(run.tool_calls) == 1
    assert TrajectoryMatch().evaluate(run, [{"name": "search", "arguments": {"q": "x"}}]).score == 1.0


def test_expected_without_tool_calls_is_skipped() -> None:
    result = TrajectoryMatch().evaluate([{"name": "a"}], Expected(output="x"))
    assert result.status == "skipped"
    assert TrajectoryMatch().evaluate([{"name": "a"}], None).status == "skipped"


def test_bad_input_is_an_error_result() -> None:
    result = TrajectoryMatch().evaluate("not json", [{"name": "a"}])
    assert result.status == "error"
    assert TrajectoryMatch().evaluate([{"nom": "a"}], [{"name": "a"}]).status == "error"


def test_is_a_run_evaluator() -> None:
    assert TrajectoryMatch.scores_runs is True
    assert TrajectoryMatch().threshold == 1.0


@pytest.mark.parametrize(
    ("requested", "executed"),
    [
        ([("a", "1"), ("a", None)], [("a", None), ("a", None)]),
        ([("a", "1")], [("a", "2")]),
        ([("a", None), ("b", "2")], [("b", "2"), ("a", "9"), ("c", None)]),
        ([], [("a", None), ("a", None)]),
        ([("a", "1"), ("a", "2")], []),
    ],
)
def test_strict_messages_hold_as_many_calls_as_run_tool_calls(
    requested: list[tuple[str, str | None]], executed: list[tuple[str, str | None]]
) -> None:
    steps = [Step(kind="llm", name="chat", requested=tuple(ToolCall(n, {}, id=i) for n, i in requested))]
    steps += [Step(kind="tool", name=n, tool_call=ToolCall(n, {}, id=i)) for n, i in executed]
    run = Run(steps=tuple(steps))
    flat = [{"name": call.name} for call in run.tool_calls]
    assert TrajectoryMatch(mode="unordered").evaluate(run, flat).score == 1.0
    details = TrajectoryMatch().evaluate(run, flat).details
    sizes = details["messages"]
    assert sizes["expected"] == len(flat)
    assert sizes["actual"] == len(flat) - max(len(requested) - 1, 0)  # the requests are one message


def test_every_run_evaluator_comparing_calls_skips_an_expected_without_tool_calls() -> None:
    """One rule for all of them (their shared base): an Expected giving only an output leaves
    nothing to compare calls against, so the result is skipped, saying so; those that need no
    expected calls (run_budget, tool_arguments) still score."""
    from tracesim.evaluators._builtin_types import BUILTIN_TYPES
    from tracesim.runs import Expected

    needs_options = {"run_budget": {"max_tool_calls": 5}, "tool_arguments": {"tool": "a", "arguments": {}}}
    run_types = {  # trajectory_judge asks a model: its tests are in tests/evaluators/models
        name: cls
        for name, cls in BUILTIN_TYPES.items()
        if getattr(cls, "scores_runs", False) and name != "trajectory_judge"
    }
    assert len(run_types) == 8
    for name, cls in run_types.items():
        result = cls(**needs_options.get(name, {})).evaluate([{"name": "a"}], Expected(output="done"))
        if cls.requires_expected:
            assert result.status == "skipped", name
            assert result.explanation == "no expected tool calls to compare against"
        else:
            assert result.status == "ok", name


def test_a_failed_strict_match_names_the_missing_extra_and_mismatched_calls() -> None:
    from tracesim.evaluators import TrajectoryMatch

    actual = [
        {"name": "lookup", "arguments": {"city": "Paris"}},
        {"name": "convert", "arguments": {"celsius": 12}},
        {"name": "log"},
    ]
    expected = [
        {"name": "lookup", "arguments": {"city": "Warsaw"}},
        {"name": "convert", "arguments": {"celsius": 12}},
    ]
    result = TrajectoryMatch().evaluate(actual, expected)
    assert result.score == 0.0
    assert "missing" not in result.details  # each expected name was called
    assert result.details["mismatched"] == [
        {
            "call": {"name": "lookup", "arguments": {"city": "Warsaw"}},
            "closest": {"name": "lookup", "arguments": {"city": "Paris"}},
        }
    ]
    assert result.details["extra"] == [{"name": "log", "arguments": {}}]  # Paris is the closest above
    passing = TrajectoryMatch().evaluate(expected, expected)
    assert passing.score == 1.0
    assert not {"missing", "extra", "mismatched"} & set(passing.details)
