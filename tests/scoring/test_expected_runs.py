"""`tracesim.Expected` (an output and/or tool calls) wherever an expected value goes.

Run evaluators (``scores_runs = True``) are handed the `Expected`; string evaluators its output,
and they skip, as without an expected output, when only tool calls are expected.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest

import tracesim
from tracesim.evaluators import Evaluator, Levenshtein
from tracesim.runs import NOT_GIVEN, Expected, ToolCall
from tracesim.testing import CapturedSpans, capture_spans
from tracesim.tracefile import SpanRecord

SEARCH = [{"name": "search", "arguments": {"city": "Warsaw"}}]


class Recorder(Evaluator):
    """A run evaluator that keeps what it was given as the expected value."""

    type_name = "recorder"
    scores_runs: ClassVar[bool] = True

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[Any] = []

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        self.seen.append(expected)
        return 1.0


@pytest.fixture
def captured() -> Iterator[CapturedSpans]:
    with capture_spans() as spans:
        yield spans


def levenshtein(span: SpanRecord) -> Any:
    attributes = span.attributes
    return attributes.get(
        "tracesim.eval.levenshtein.passed", attributes.get("tracesim.eval.levenshtein.status")
    )


def test_the_name_is_public() -> None:
    assert tracesim.Expected is Expected
    assert "Expected" in tracesim.__all__


def test_a_decorators_expected_goes_whole_to_run_evaluators_and_as_output_to_string_ones(
    captured: CapturedSpans,
) -> None:
    recorder = Recorder()
    expected = Expected(output="Warsaw", tool_calls=SEARCH)

    @tracesim.trace(evaluators=[recorder, Levenshtein()], expected=expected)
    def answer(question: str) -> str:
        return "Warsaw"

    answer("Where was Marie Curie born?")
    span = captured.by_name("answer")
    assert recorder.seen == [expected]
    assert levenshtein(span) is True  # compared with "Warsaw", not with the Expected
    assert span.attributes["tracesim.expected.value"] == "Warsaw"
    assert json.loads(span.attributes["tracesim.expected.tool_calls"]) == SEARCH


def test_only_tool_calls_expected_skips_string_evaluators(captured: CapturedSpans) -> None:
    recorder = Recorder()

    @tracesim.trace(evaluators=[recorder, Levenshtein()], expected=Expected(tool_calls=SEARCH))
    def answer(question: str) -> str:
        return "Warsaw"

    answer("q")
    span = captured.by_name("answer")
    assert levenshtein(span) == "skipped"
    assert recorder.seen[0].output is NOT_GIVEN
    assert recorder.seen[0].tool_calls == (ToolCall("search", {"city": "Warsaw"}),)
    assert "tracesim.expected.value" not in span.attributes
    assert json.loads(span.attributes["tracesim.expected.tool_calls"]) == SEARCH


def test_a_callable_may_return_an_expected(captured: CapturedSpans) -> None:
    recorder = Recorder()

    @tracesim.trace(
        evaluators=[recorder, Levenshtein()],
        expected=lambda city: Expected(
            output=city, tool_calls=[{"name": "search", "arguments": {"city": city}}]
        ),
    )
    def answer(city: str) -> str:
        return city

    answer("Paris")
    span = captured.by_name("answer")
    assert recorder.seen[0].tool_calls[0].arguments == {"city": "Paris"}
    assert levenshtein(span) is True
    assert json.loads(span.attributes["tracesim.expected.tool_calls"])[0]["arguments"] == {"city": "Paris"}


def test_an_expect_block_and_set_expected_take_an_expected(captured: CapturedSpans) -> None:
    recorder = Recorder()

    @tracesim.trace(evaluators=[recorder, Levenshtein()])
    def answer(question: str, override: bool = False) -> str:
        if override:
            tracesim.current_span().set_expected(Expected(tool_calls=[{"name": "lookup"}]))
        return "Warsaw"

    with tracesim.expect(Expected(output="Warsaw", tool_calls=SEARCH)):
        answer("q")
    answer("q", override=True)
    block, inside = captured.named("answer")
    assert [e.tool_calls[0].name for e in recorder.seen] == ["search", "lookup"]
    assert levenshtein(block) is True
    assert levenshtein(inside) == "skipped"
    assert json.loads(inside.attributes["tracesim.expected.tool_calls"]) == [
        {"name": "lookup", "arguments": {}}
    ]


def test_a_span_block_takes_an_expected(captured: CapturedSpans) -> None:
    recorder = Recorder()
    with tracesim.span("step", evaluators=[recorder], expected=Expected(output=1, tool_calls=SEARCH)) as span:
        span.set_output(1)
    assert recorder.seen == [Expected(output=1, tool_calls=SEARCH)]
    assert json.loads(captured.by_name("step").attributes["tracesim.expected.tool_calls"]) == SEARCH


def test_a_plain_expected_value_reaches_a_run_evaluator_as_the_output(captured: CapturedSpans) -> None:
    recorder = Recorder()

    @tracesim.trace(evaluators=[recorder, Levenshtein()], expected="Warsaw")
    def answer() -> str:
        return "Warsaw"

    answer()
    span = captured.by_name("answer")
    assert recorder.seen == [Expected(output="Warsaw")]
    assert levenshtein(span) is True
    assert span.attributes["tracesim.expected.value"] == "Warsaw"
    assert "tracesim.expected.tool_calls" not in span.attributes


def test_no_expected_value_skips_a_run_evaluator_too(captured: CapturedSpans) -> None:
    recorder = Recorder()

    @tracesim.trace(evaluators=[recorder])
    def answer() -> str:
        return "Warsaw"

    answer()
    assert recorder.seen == []
    assert captured.by_name("answer").attributes["tracesim.eval.recorder.status"] == "skipped"


def test_a_rule_in_tracesim_yaml_may_expect_tool_calls(tmp_path: Path) -> None:
    (tmp_path / "tracesim.yaml").write_text(
        """
evaluators:
  - match: "answer"
    evaluators: [levenshtein]
    expected: {output: Warsaw, tool_calls: [{name: search, arguments: {city: Warsaw}}]}
  - match: "tools_only"
    evaluators: [levenshtein]
    expected: {tool_calls: '[{"name": "search", "arguments": {"city": "Warsaw"}}]'}
"""
    )

    @tracesim.trace
    def answer() -> str:
        return "Warsaw"

    @tracesim.trace
    def tools_only() -> str:
        return "Warsaw"

    with capture_spans() as captured:
        answer()
        tools_only()
    full, calls = captured.by_name("answer"), captured.by_name("tools_only")
    assert levenshtein(full) is True
    assert full.attributes["tracesim.expected.value"] == "Warsaw"
    assert json.loads(full.attributes["tracesim.expected.tool_calls"]) == SEARCH
    assert levenshtein(calls) == "skipped"
    assert json.loads(calls.attributes["tracesim.expected.tool_calls"]) == SEARCH


def test_a_rule_in_code_may_hold_an_expected() -> None:
    recorder = Recorder()
    rules = [{"match": "answer", "evaluators": [recorder], "expected": Expected(tool_calls=SEARCH)}]

    @tracesim.trace
    def answer() -> str:
        return "Warsaw"

    with capture_spans(evaluators=rules) as captured:
        answer()
    assert recorder.seen == [Expected(tool_calls=SEARCH)]
    assert json.loads(captured.by_name("answer").attributes["tracesim.expected.tool_calls"]) == SEARCH


@pytest.mark.parametrize(
    ("expected", "setting"),
    [
        ({"tool_calls": [{"arguments": {}}]}, "evaluators[0].expected.tool_calls[0]"),
        ({"tool_calls": [{"name": "search"}, "lookup"]}, "evaluators[0].expected.tool_calls[1]"),
        ({"tool_calls": {"name": "search"}}, "evaluators[0].expected.tool_calls"),
        ({"tool_calls": "[not json"}, "evaluators[0].expected.tool_calls"),
        ({"output": "x", "tools": []}, "evaluators[0].expected"),
        ({"city": "Paris"}, "evaluators[0].expected"),
    ],
)
def test_bad_expected_tool_calls_in_a_rule_fail_at_configure_naming_the_field(
    expected: dict[str, Any], setting: str
) -> None:
    with pytest.raises(tracesim.ConfigError) as info:
        tracesim.configure(exporters=[], evaluators=[{"evaluators": ["exact"], "expected": expected}])
    assert info.value.setting.startswith(setting)


def test_a_mapping_that_is_neither_form_names_both(tmp_path: Path) -> None:
    (tmp_path / "tracesim.yaml").write_text(
        "evaluators:\n  - {evaluators: [exact], expected: {city: Paris}}\n"
    )
    with pytest.raises(tracesim.ConfigError) as info:
        tracesim.configure(exporters=[])
    assert info.value.setting == "evaluators[0].expected"
    assert "{golden: FILE, key: ARGUMENT}" in info.value.accepted
    assert "{output: VALUE, tool_calls:" in info.value.accepted


def test_bad_tool_calls_fail_when_the_expected_is_made() -> None:
    with pytest.raises(tracesim.ConfigError) as info:
        Expected(tool_calls=[{"name": ""}])
    assert info.value.setting.startswith("expected.tool_calls[0]")


def _golden(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_a_golden_row_with_expected_tool_calls_gives_an_expected(
    tmp_path: Path, captured: CapturedSpans
) -> None:
    golden = _golden(
        tmp_path / "golden.jsonl",
        [
            {"question": "both", "expected": "Warsaw", "expected_tool_calls": SEARCH},
            {"question": "calls", "expected_tool_calls": json.dumps(SEARCH)},
            {"question": "plain", "expected": "Warsaw"},
        ],
    )
    recorder = Recorder()

    @tracesim.trace(evaluators=[recorder, Levenshtein()], expected=tracesim.Golden(golden, key="question"))
    def answer(question: str) -> str:
        return "Warsaw"

    for question in ("both", "calls", "plain"):
        answer(question)
    both, calls, plain = captured.named("answer")
    assert recorder.seen == [
        Expected(output="Warsaw", tool_calls=SEARCH),
        Expected(tool_calls=SEARCH),
        Expected(output="Warsaw"),
    ]
    assert [levenshtein(span) for span in (both, calls, plain)] == [True, "skipped", True]
    assert "tracesim.expected.tool_calls" not in plain.attributes
    assert json.loads(calls.attributes["tracesim.expected.tool_calls"]) == SEARCH


def test_a_golden_csv_column_of_tool_calls(tmp_path: Path, captured: CapturedSpans) -> None:
    golden = tmp_path / "golden.csv"
    golden.write_text(
        'question,expected,expected_tool_calls\nboth,Warsaw,"[{""name"": ""search""}]"\nplain,Paris,\n'
        'calls,,"[{""name"": ""search""}]"\n'
    )
    found = tracesim.Golden(golden, key="question")
    assert found.lookup((), {}, {"question": "both"}) == Expected(
        output="Warsaw", tool_calls=[{"name": "search"}]
    )
    assert found.lookup((), {}, {"question": "plain"}) == "Paris"
    assert found.lookup((), {}, {"question": "calls"}) == Expected(tool_calls=[{"name": "search"}])


@pytest.mark.parametrize(
    ("calls", "problem"),
    [
        ([{"arguments": {}}], "expected_tool_calls[0]"),
        ("[{broken", "expected_tool_calls"),
        ({"name": "search"}, "expected_tool_calls"),
    ],
)
def test_bad_tool_calls_in_a_golden_row_name_the_file_and_line(
    tmp_path: Path, calls: Any, problem: str
) -> None:
    golden = _golden(
        tmp_path / "golden.jsonl",
        [
            {"question": "fine", "expected": "x"},
            {"question": "bad", "expected": "y", "expected_tool_calls": calls},
        ],
    )
    with pytest.raises(tracesim.ConfigError) as info:
        tracesim.Golden(golden, key="question")
    message = str(info.value)
    assert info.value.setting == "Golden.path"
    assert f"{golden}, line 2: {problem}" in message


class AsyncRecorder(Recorder):
    """The same, scored on the pipeline's asyncio loop."""

    type_name = "async_recorder"

    async def aevaluate(self, output: Any, expected: Any, *, input: Any = None) -> Any:
        return self.evaluate(output, expected, input=input)


def test_an_async_run_evaluator_gets_the_expected_too(captured: CapturedSpans) -> None:
    recorder = AsyncRecorder()
    assert recorder.is_async

    @tracesim.trace(evaluators=[recorder], expected="Warsaw")
    def answer() -> str:
        return "Warsaw"

    with tracesim.expect(Expected(tool_calls=SEARCH)):
        answer()
    answer()
    assert captured.named("answer")  # both scored and exported
    assert recorder.seen == [Expected(tool_calls=SEARCH), Expected(output="Warsaw")]


def test_a_rules_golden_may_name_its_tool_calls_column(tmp_path: Path) -> None:
    _golden(tmp_path / "golden.jsonl", [{"question": "q", "answer": "Warsaw", "calls": SEARCH}])
    (tmp_path / "tracesim.yaml").write_text(
        "evaluators:\n  - match: answer\n    evaluators: [levenshtein]\n"
        "    expected: {golden: golden.jsonl, key: question, expected_column: answer,\n"
        "               tool_calls_column: calls}\n"
    )

    @tracesim.trace
    def answer(question: str) -> str:
        return "Warsaw"

    with capture_spans() as captured:
        answer("q")
    span = captured.by_name("answer")
    assert levenshtein(span) is True
    assert json.loads(span.attributes["tracesim.expected.tool_calls"]) == SEARCH


def test_result_sinks_are_shown_the_expected_output() -> None:
    from tracesim._scoring._expect import NOT_SET
    from tracesim._scoring._pipeline import _for_sinks

    assert _for_sinks(Expected(output="Warsaw", tool_calls=SEARCH)) == "Warsaw"
    assert _for_sinks(Expected(tool_calls=SEARCH)) is NOT_SET  # nothing to show beside the score
    assert _for_sinks("Warsaw") == "Warsaw"
    assert _for_sinks(NOT_SET) is NOT_SET


def test_expected_tool_calls_are_cut_like_any_captured_value() -> None:
    many = [{"name": "search", "arguments": {"page": n}} for n in range(200)]

    @tracesim.trace(evaluators=[Recorder()], expected=Expected(tool_calls=many))
    def answer() -> str:
        return "Warsaw"

    with capture_spans(max_value_chars=300) as captured:
        answer()
    text = captured.by_name("answer").attributes["tracesim.expected.tool_calls"]
    assert isinstance(text, str)
    assert len(text) < 400


def test_two_rules_on_one_span_give_it_the_output_of_one_and_the_tool_calls_of_the_other() -> None:
    def answer() -> str:
        return "Warsaw"

    rules = [
        {"match": "answer", "evaluators": ["levenshtein"], "expected": "Warsaw"},
        {"match": "answer", "evaluators": [Recorder()], "expected": {"tool_calls": SEARCH}},
    ]
    recorder = rules[1]["evaluators"][0]
    with capture_spans(evaluators=rules) as captured:
        tracesim.trace(kind="agent")(answer)()
    span = captured.by_name("answer")
    assert levenshtein(span) is True
    (seen,) = recorder.seen
    assert (seen.output, seen.tool_calls) == ("Warsaw", (ToolCall("search", {"city": "Warsaw"}),))
    assert json.loads(span.attributes["tracesim.expected.tool_calls"]) == SEARCH


def test_of_two_rules_the_first_ones_expected_output_wins() -> None:
    recorder = Recorder()
    rules = [
        {"match": "answer", "evaluators": [recorder], "expected": "Warsaw"},
        {"match": "answer", "evaluators": ["levenshtein"], "expected": "Paris"},
    ]
    with capture_spans(evaluators=rules) as captured:
        tracesim.trace(kind="agent", name="answer")(lambda: "Warsaw")()
    assert [e.output for e in recorder.seen] == ["Warsaw"]
    assert levenshtein(captured.by_name("answer")) is True  # against "Warsaw", not "Paris"
