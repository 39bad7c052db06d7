"""Experiments with expected tool calls: `Case(expected=Expected(...))` and an
``expected_tool_calls`` field in a dataset file, handed to each evaluator as it takes them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest

import tracesim
from tracesim.evaluators import Evaluator, Levenshtein
from tracesim.experiments import Case, Dataset, DatasetError
from tracesim.runs import NOT_GIVEN, Expected, ToolCall
from tracesim.tracefile import load_spans

SEARCH = [{"name": "search", "arguments": {"city": "Warsaw"}}]


class Recorder(Evaluator):
    """A run evaluator that keeps the expected values it was given, by case input."""

    type_name = "recorder"
    scores_runs: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: dict[Any, Any] = {}

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        self.seen[input] = expected
        return 1.0


def test_a_case_may_expect_tool_calls_and_each_evaluator_gets_its_part() -> None:
    tracesim.configure(exporters=["jsonl"])
    recorder = Recorder()
    dataset = Dataset(
        [
            Case("both", expected=Expected(output="Warsaw", tool_calls=SEARCH), id="both"),
            Case("calls", expected=Expected(tool_calls=SEARCH), id="calls"),
            Case("plain", expected="Warsaw", id="plain"),
        ],
        name="tools",
    )
    report = dataset.evaluate(lambda question: "Warsaw", evaluators=[recorder, Levenshtein()])
    assert recorder.seen == {
        "both": Expected(output="Warsaw", tool_calls=SEARCH),
        "calls": Expected(tool_calls=SEARCH),
        "plain": Expected(output="Warsaw"),
    }
    statuses = {row.case_id: row.scores["levenshtein"].status for row in report.rows}
    assert statuses == {"both": "ok", "calls": "skipped", "plain": "ok"}
    assert report.row("both").scores["levenshtein"].score == 1.0
    data = {row["case_id"]: row["expected"] for row in report.to_dict()["rows"]}
    assert data == {
        "both": {"output": "Warsaw", "tool_calls": SEARCH},
        "calls": {"tool_calls": SEARCH},
        "plain": "Warsaw",
    }

    tracesim.force_flush()
    spans = {span.span_id: span for span in load_spans(Path(".tracesim/traces.jsonl"))}
    both = spans[report.row("both").span_id].attributes
    assert both["tracesim.expected.value"] == "Warsaw"
    assert json.loads(both["tracesim.expected.tool_calls"]) == SEARCH
    calls = spans[report.row("calls").span_id].attributes
    assert "tracesim.expected.value" not in calls
    assert json.loads(calls["tracesim.expected.tool_calls"]) == SEARCH
    assert "tracesim.expected.tool_calls" not in spans[report.row("plain").span_id].attributes


def test_a_jsonl_dataset_field_of_expected_tool_calls(tmp_path: Path) -> None:
    path = tmp_path / "cases.jsonl"
    rows = [
        {"id": "both", "input": "q1", "expected": "Warsaw", "expected_tool_calls": SEARCH},
        {"id": "text", "input": "q2", "expected_tool_calls": json.dumps(SEARCH)},
        {"id": "plain", "input": "q3", "expected": "Paris", "topic": "geo"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    dataset = Dataset.from_file(path)
    assert dataset["both"].expected == Expected(output="Warsaw", tool_calls=SEARCH)
    assert dataset["text"].expected.output is NOT_GIVEN
    assert dataset["text"].expected.tool_calls == (ToolCall("search", {"city": "Warsaw"}),)
    assert dataset["plain"].expected == "Paris"
    assert dataset["both"].metadata == {}  # the field is not metadata
    assert dataset["plain"].metadata == {"topic": "geo"}


def test_a_csv_column_of_expected_tool_calls(tmp_path: Path) -> None:
    path = tmp_path / "cases.csv"
    path.write_text(
        'id,input,expected,expected_tool_calls\nboth,q1,Warsaw,"[{""name"": ""search""}]"\n'
        'calls,q2,,"[{""name"": ""search""}]"\nplain,q3,Paris,\n'
    )
    dataset = Dataset.from_file(path)
    assert dataset["both"].expected == Expected(output="Warsaw", tool_calls=[{"name": "search"}])
    assert dataset["calls"].expected == Expected(tool_calls=[{"name": "search"}])
    assert dataset["plain"].expected == "Paris"


@pytest.mark.parametrize(
    ("calls", "field"),
    [
        ([{"arguments": {}}], "'expected_tool_calls[0]"),
        ([{"name": "search"}, 3], "'expected_tool_calls[1]"),
        ("[broken", "'expected_tool_calls'"),
        ({"name": "search"}, "'expected_tool_calls'"),
    ],
)
def test_bad_tool_calls_in_a_dataset_file_name_the_file_line_and_field(
    tmp_path: Path, calls: Any, field: str
) -> None:
    path = tmp_path / "cases.jsonl"
    rows = [{"input": "q1", "expected": "a"}, {"input": "q2", "expected_tool_calls": calls}]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    with pytest.raises(DatasetError) as info:
        Dataset.from_file(path)
    message = str(info.value)
    assert message.startswith(f"{path}, line 2: field {field}")


def test_bad_tool_calls_in_a_case_fail_when_it_is_made() -> None:
    with pytest.raises(tracesim.ConfigError) as info:
        Case("q", expected=Expected(tool_calls=[{"name": 3}]))
    assert info.value.setting.startswith("expected.tool_calls[0]")


class AsyncRecorder(Recorder):
    """The same, scored by the experiment's async path."""

    type_name = "async_recorder"

    async def aevaluate(self, output: Any, expected: Any, *, input: Any = None) -> Any:
        return self.evaluate(output, expected, input=input)


def test_an_async_run_evaluator_gets_the_expected() -> None:
    recorder = AsyncRecorder()
    dataset = Dataset([Case("calls", expected=Expected(tool_calls=SEARCH)), Case("plain", expected="Warsaw")])
    dataset.evaluate(lambda question: "Warsaw", evaluators=[recorder])
    assert recorder.seen == {"calls": Expected(tool_calls=SEARCH), "plain": Expected(output="Warsaw")}


def test_the_report_files_hold_the_expected_tool_calls(tmp_path: Path) -> None:
    dataset = Dataset([Case("q", expected=Expected(output="Warsaw", tool_calls=SEARCH), id="q")])
    report = dataset.evaluate(lambda question: "Warsaw", evaluators=[Levenshtein()])
    saved = report.to_json(tmp_path / "run.json")
    again = type(report).load(saved)
    assert again.row("q").expected == {"output": "Warsaw", "tool_calls": SEARCH}
    page = report.to_html(tmp_path / "run.html").read_text()
    assert "search" in page
    assert "NOT_GIVEN" not in page
