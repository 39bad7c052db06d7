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
from tracesim.testing import CapturedSpans, capture_spans
from tracesim.tracefile import SpanRecord, load_spans


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
        (
            [{"evaluators": ["exact"], "expected": {"golden": "missing.jsonl", "key": "q"}}],
            "evaluators[0].expected.golden",
        ),
        ([{"evaluators": ["exact"], "expected": {"golden": 3, "key": "q"}}], "evaluators[0].expected.golden"),
        ([{"evaluators": ["exact"], "expected": {"golden": "g.jsonl"}}], "evaluators[0].expected.key"),
        ([{"evaluators": ["exact"], "expected": {"city": "Paris"}}], "{value: {...}}"),
        ([{"evaluators": ["exact"], "expected": {"value": 1, "unit": "m"}}], "evaluators[0].expected"),
    ],
)
def test_bad_rules_fail_at_configure(rules: list[dict[str, Any]], setting: str) -> None:
    with pytest.raises(tracesim.ConfigError) as info:
        tracesim.configure(evaluators=rules)
    assert setting in str(info.value)


def _traced_file_spans(path: Path) -> dict[str, SpanRecord]:
    assert tracesim.force_flush(30)
    return {span.name: span for span in load_spans(path)}


def test_a_rules_expected_may_be_a_plain_value_like_the_decorators(tmp_path: Path) -> None:
    (tmp_path / "tracesim.yaml").write_text(
        """
jsonl_path: traces.jsonl
evaluators:
  - {match: capital, evaluators: [exact], expected: Paris}
  - {match: count, evaluators: [exact], expected: 42}
  - {match: cities, evaluators: [exact], expected: [Warsaw, Paris]}
  - {match: record, evaluators: [exact], expected: {value: {city: Paris}}}
  - {match: wrong, evaluators: [exact], expected: Paris}
"""
    )
    tracesim.configure()  # scoring_mode "background": scored off the caller's path

    @tracesim.trace
    def capital(country: str) -> str:
        return "Paris"

    @tracesim.trace
    def count() -> int:
        return 42

    @tracesim.trace
    def cities() -> list[str]:
        return ["Warsaw", "Paris"]

    @tracesim.trace
    def record() -> dict[str, str]:
        return {"city": "Paris"}

    @tracesim.trace
    def wrong() -> str:
        return "Lyon"

    for call in (lambda: capital("France"), count, cities, record, wrong):
        call()
    spans = _traced_file_spans(tmp_path / "traces.jsonl")
    for name in ("capital", "count", "cities", "record"):
        assert exact(spans[name]) is True, name
    assert exact(spans["wrong"]) is False
    assert spans["capital"].attributes["tracesim.expected.value"] == "Paris"
    assert json.loads(spans["cities"].attributes["tracesim.expected.value"]) == ["Warsaw", "Paris"]
    assert json.loads(spans["record"].attributes["tracesim.expected.value"]) == {"city": "Paris"}


def test_a_rules_expected_in_code_may_be_a_callable_of_the_arguments(tmp_path: Path) -> None:
    rule = {"match": "shout", "evaluators": [ExactMatch()], "expected": lambda text: text.upper()}
    tracesim.configure(jsonl_path=tmp_path / "traces.jsonl", evaluators=[rule])

    @tracesim.trace
    def shout(text: str) -> str:
        return text.upper()

    shout("warsaw")
    span = _traced_file_spans(tmp_path / "traces.jsonl")["shout"]
    assert exact(span) is True
    assert span.attributes["tracesim.expected.value"] == "WARSAW"


def test_a_mapping_that_is_no_expected_form_is_refused_with_the_way_to_write_it(tmp_path: Path) -> None:
    (tmp_path / "tracesim.yaml").write_text(
        "evaluators:\n  - {evaluators: [exact], expected: {city: Paris}}\n"
    )
    with pytest.raises(tracesim.ConfigError) as info:
        tracesim.configure(exporters=[])
    assert info.value.setting == "evaluators[0].expected"
    assert info.value.source == "tracesim.yaml"
    assert "'Paris' or 42, {golden: FILE, key: ARGUMENT}, or {value: VALUE}" in info.value.accepted
    assert "{value: {...}}" in info.value.accepted


def test_golden_paths_in_the_config_file_are_read_from_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf, elsewhere, shared = tmp_path / "conf", tmp_path / "elsewhere", tmp_path / "shared"
    for folder in (conf / "data", elsewhere / "data", shared):
        folder.mkdir(parents=True)
    _write_golden_jsonl(
        conf / "data" / "golden.jsonl", [{"q": "capital?", "expected": "from the conf folder"}]
    )
    _write_golden_jsonl(elsewhere / "data" / "golden.jsonl", [{"q": "capital?", "expected": "from the cwd"}])
    _write_golden_jsonl(shared / "golden.jsonl", [{"q": "capital?", "expected": "absolute"}])
    (conf / "tracesim.yaml").write_text(
        f"""
evaluators:
  - match: relative
    evaluators: [exact]
    expected: {{golden: data/golden.jsonl, key: q}}
  - match: absolute
    evaluators: [exact]
    expected: {{golden: {json.dumps(str(shared / "golden.jsonl"))}, key: q}}
"""
    )
    monkeypatch.chdir(elsewhere)
    monkeypatch.setenv("TRACESIM_CONFIG_FILE", str(conf / "tracesim.yaml"))
    in_code = {
        "match": "in_code",
        "evaluators": ["exact"],
        "expected": {"golden": "data/golden.jsonl", "key": "q"},
    }

    def expected_of(**settings: Any) -> dict[str, Any]:
        @tracesim.trace
        def relative(q: str) -> str:
            return "x"

        @tracesim.trace
        def absolute(q: str) -> str:
            return "x"

        @tracesim.trace
        def in_code(q: str) -> str:
            return "x"

        with capture_spans(**settings) as captured:
            relative("capital?")
            absolute("capital?")
            in_code("capital?")
        return {s.name: s.attributes.get("tracesim.expected.value") for s in captured.spans}

    assert expected_of() == {"relative": "from the conf folder", "absolute": "absolute", "in_code": None}
    # rules given to configure() read the same relative path from the working directory
    assert expected_of(evaluators=[in_code])["in_code"] == "from the cwd"


def test_a_missing_golden_file_of_the_config_file_is_named_by_where_it_was_looked_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "tracesim.yaml").write_text(
        "evaluators:\n  - {evaluators: [exact], expected: {golden: golden.jsonl, key: q}}\n"
    )
    (tmp_path / "golden.jsonl").write_text('{"q": "a", "expected": "b"}\n')  # in the cwd: not this one
    monkeypatch.setenv("TRACESIM_CONFIG_FILE", str(conf / "tracesim.yaml"))
    with pytest.raises(tracesim.ConfigError) as info:
        tracesim.configure(exporters=[])
    assert info.value.setting == "evaluators[0].expected.golden"
    assert info.value.value == str(conf / "golden.jsonl")
    assert info.value.source == str(conf / "tracesim.yaml")
