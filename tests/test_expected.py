"""Every source of expected outputs, their precedence, and evaluator rules from tracesim.yaml."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import tracesim
from tracesim.evaluators import ExactMatch
from tracesim.exporters import SpanRecord
from tracesim.testing import CapturedSpans, capture_spans


@pytest.fixture
def captured() -> Iterator[CapturedSpans]:
    with capture_spans() as spans:
        yield spans


def exact(span: SpanRecord) -> Any:
    return span.attributes.get(
        "tracesim.eval.exact.passed", span.attributes.get("tracesim.eval.exact.status")
    )


def test_a_static_expected_value(captured: CapturedSpans) -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected={"city": "Warsaw"})
    def f() -> dict[str, str]:
        return {"city": "Warsaw"}

    f()
    span = captured.by_name("f")
    assert exact(span) is True
    assert json.loads(span.attributes["tracesim.expected.value"]) == {"city": "Warsaw"}
    assert span.attributes["tracesim.expected.mime_type"] == "application/json"


def test_a_callable_of_the_functions_arguments(captured: CapturedSpans) -> None:
    answers = {"Where was Marie Curie born?": "Warsaw"}

    @tracesim.trace(evaluators=[ExactMatch()], expected=lambda question, lang="en": answers.get(question))
    def answer(question: str, lang: str = "en") -> str:
        return "Warsaw"

    answer("Where was Marie Curie born?")
    answer("Unknown question", lang="pl")
    known, unknown = captured.named("answer")
    assert exact(known) is True
    assert exact(unknown) == "skipped"  # no expected output: skipped, never a fake score
    assert "tracesim.expected.value" not in unknown.attributes


def test_an_expect_block_reaches_the_outermost_scored_call_only(captured: CapturedSpans) -> None:
    @tracesim.trace(evaluators=[ExactMatch(name="inner_exact")])
    def inner() -> str:
        return "inner"

    @tracesim.trace(evaluators=[ExactMatch()])
    def outer() -> str:
        inner()
        return "Warsaw"

    @tracesim.trace
    def handler() -> str:  # no evaluators: does not consume the value
        return outer()

    with tracesim.expect("Warsaw"):
        handler()
    outer()  # outside the block: nothing expected
    first, second = captured.named("outer")
    assert exact(first) is True
    assert first.attributes["tracesim.expected.value"] == "Warsaw"
    assert exact(second) == "skipped"
    for span in captured.named("inner"):
        assert span.attributes["tracesim.eval.inner_exact.status"] == "skipped"


def test_set_expected_inside_the_call_wins(captured: CapturedSpans) -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="from decorator")
    def f() -> str:
        tracesim.current_span().set_expected("computed inside")
        return "computed inside"

    with tracesim.expect("from block"):
        f()
    span = captured.by_name("f")
    assert exact(span) is True
    assert span.attributes["tracesim.expected.value"] == "computed inside"


def test_an_expect_block_beats_the_decorator(captured: CapturedSpans) -> None:
    @tracesim.trace(evaluators=[ExactMatch()], expected="from decorator")
    def f() -> str:
        return "from block"

    with tracesim.expect("from block"):
        f()
    assert exact(captured.by_name("f")) is True


def _write_golden_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))


def test_a_golden_jsonl_dataset_keyed_by_an_argument(tmp_path: Path, captured: CapturedSpans) -> None:
    golden = tmp_path / "golden.jsonl"
    _write_golden_jsonl(
        golden,
        [
            {"question": "Where was Marie Curie born?", "expected": "Warsaw"},
            {"question": "Capital of France?", "expected": "Paris"},
        ],
    )

    @tracesim.trace(evaluators=[ExactMatch()], expected=tracesim.Golden(golden, key="question"))
    def answer(question: str, style: str = "short") -> str:
        return "Warsaw"

    answer("Where was Marie Curie born?")
    answer("Capital of France?", style="long")
    answer("Not in the file")
    curie, france, missing = captured.named("answer")
    assert exact(curie) is True
    assert exact(france) is False
    assert france.attributes["tracesim.expected.value"] == "Paris"
    assert exact(missing) == "skipped"


def test_a_golden_csv_dataset_keyed_by_a_function_of_the_arguments(
    tmp_path: Path, captured: CapturedSpans
) -> None:
    golden = tmp_path / "golden.csv"
    golden.write_text("id,answer\nq1,Warsaw\nq2,Paris\n")
    dataset = tracesim.Golden(
        golden, key=lambda request: request["id"], column="id", expected_column="answer"
    )

    @tracesim.trace(evaluators=[ExactMatch()], expected=dataset)
    def handle(request: dict[str, str]) -> str:
        return "Paris"

    handle({"id": "q2", "text": "Capital of France?"})
    assert exact(captured.by_name("handle")) is True
    assert len(dataset) == 2


def test_a_golden_dataset_is_reloaded_when_the_file_changes(tmp_path: Path, captured: CapturedSpans) -> None:
    golden = tmp_path / "golden.jsonl"
    _write_golden_jsonl(golden, [{"q": "a", "expected": "old"}])
    dataset = tracesim.Golden(golden, key="q", reload_every_s=0)

    @tracesim.trace(evaluators=[ExactMatch()], expected=dataset)
    def f(q: str) -> str:
        return "new"

    f("a")
    _write_golden_jsonl(golden, [{"q": "a", "expected": "new"}, {"q": "b", "expected": "x"}])
    os.utime(golden, ns=(10**18, 10**18))  # a different mtime even on coarse file systems
    f("a")
    before, after = captured.named("f")
    assert exact(before) is False
    assert exact(after) is True
    assert len(dataset) == 2


def test_a_bad_golden_file_fails_when_it_is_declared(tmp_path: Path) -> None:
    with pytest.raises(tracesim.ConfigError, match=r"Golden\.path"):
        tracesim.Golden(tmp_path / "missing.jsonl", key="q")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "q"}\n')  # no "expected" column
    with pytest.raises(tracesim.ConfigError, match="expected"):
        tracesim.Golden(bad, key="question")


def test_an_expected_callable_that_raises_gives_error_results(captured: CapturedSpans) -> None:
    def broken(question: str) -> str:
        raise LookupError("no such key")

    @tracesim.trace(evaluators=[ExactMatch()], expected=broken)
    def answer(question: str) -> str:
        return "x"

    assert answer("q") == "x"
    span = captured.by_name("answer")
    (event,) = span.event("gen_ai.evaluation.result")
    assert event.attributes["error.type"] == "LookupError"
    assert "resolving the expected output" in event.attributes["gen_ai.evaluation.explanation"]


def test_rules_in_tracesim_yaml_attach_evaluators_to_undecorated_functions(tmp_path: Path) -> None:
    _write_golden_jsonl(tmp_path / "golden.jsonl", [{"question": "q1", "expected": "A1"}])
    (tmp_path / "tracesim.yaml").write_text(
        """
service_name: staging
evaluators:
  - match: "answer*"
    kind: agent
    evaluators:
      - {type: exact}
      - "levenshtein:threshold=0.5"
    expected: {golden: golden.jsonl, key: question}
  - match: "lookup"
    evaluators: [{type: exact, name: tool_exact}]
"""
    )

    @tracesim.trace(kind="agent")
    def answer_v2(question: str) -> str:
        return "A1"

    @tracesim.trace(kind="chain")
    def answer_chain(question: str) -> str:  # right name, wrong kind
        return "A1"

    @tracesim.trace(kind="tool")
    def lookup(key: str) -> str:
        return "v"

    with capture_spans() as captured:
        answer_v2("q1")
        answer_chain("q1")
        with tracesim.expect("v"):
            lookup("k")
    agent = captured.by_name("answer_v2")
    assert agent.resource["service.name"] == "staging"
    assert agent.attributes["tracesim.eval.exact.passed"] is True
    assert agent.attributes["tracesim.eval.levenshtein.passed"] is True
    assert agent.attributes["tracesim.expected.value"] == "A1"
    assert captured.by_name("answer_chain").event("gen_ai.evaluation.result") == []
    assert captured.by_name("lookup").attributes["tracesim.eval.tool_exact.passed"] is True


def test_decorator_evaluators_win_a_name_clash_with_a_rule() -> None:
    rules = [{"evaluators": [{"type": "exact", "case_sensitive": False}]}]

    @tracesim.trace(evaluators=[ExactMatch()], expected="WARSAW")
    def f() -> str:
        return "warsaw"

    with capture_spans(evaluators=rules) as captured:
        f()
    assert captured.by_name("f").attributes["tracesim.eval.exact.passed"] is False  # case-sensitive one ran


@pytest.mark.parametrize(
    ("rules", "setting"),
    [
        ([{"evaluators": [{"type": "exact"}], "colour": "red"}], "evaluators[0]"),
        ([{"kind": "robot", "evaluators": ["exact"]}], "evaluators[0].kind"),
        ([{"match": "x"}], "evaluators[0].evaluators"),
        ([{"evaluators": [{"type": "nope"}]}], "type"),
        ([{"evaluators": ["exact"], "expected": {"golden": "missing.jsonl", "key": "q"}}], "Golden.path"),
    ],
)
def test_bad_rules_fail_at_configure(rules: list[dict[str, Any]], setting: str) -> None:
    with pytest.raises(tracesim.ConfigError) as info:
        tracesim.configure(evaluators=rules)
    assert setting in str(info.value)
