"""Asserting on an agent's tool calls with the ``tracesim_eval`` fixture: a ``tracesim.record_run``
block around a real traced agent (the ``openai`` client over HTTP against the scripted server,
traced by tracesim's OpenAI integration), a list of tool calls, a traced agent under the marker.

The sessions run as a user runs them (``pytester.runpytest_subprocess``, plugin autoloading
off, only tracesim's plugin loaded), so the failure text is checked as pytest prints it, with
the terminal summary and the JSON file; secrets in the calls are redacted in all three.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from llm_server import CHAT, LLMServer, Reply
from tracesim_pytest import TracesimEval, assert_passes
from tracesim_pytest._report import Row, Summary

import tracesim
from tracesim.runs import Expected, Run, Step, ToolCall
from tracesim.testing import capture_spans

pytest_plugins = ["pytester"]

pytest.importorskip(
    "opentelemetry.instrumentation.genai.openai",
    reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
)

PLUGIN = "tracesim_pytest.plugin"

TESTS = """
import json

import openai
import pytest

import tracesim
from tracesim.runs import Expected

BASE_URL = "{base_url}"
LOOKUP = {{"type": "function", "function": {{"name": "lookup", "parameters": {{"type": "object"}}}}}}
WARSAW = [{{"name": "lookup", "arguments": {{"city": "Warsaw"}}}}]
tracesim.instrument_openai()


@tracesim.trace(kind="tool")
def lookup(city, email=None):
    return {{"Warsaw": "12 C", "Paris": "15 C"}}.get(city, "unknown")


@tracesim.trace(kind="agent")
def agent(question):
    messages = [{{"role": "user", "content": question}}]
    with openai.OpenAI(base_url=BASE_URL, api_key="test", max_retries=0) as client:
        for _ in range(5):
            reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[LOOKUP])
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                found = lookup(**json.loads(call.function.arguments))
                messages.append({{"role": "tool", "tool_call_id": call.id, "content": found}})
    return "gave up"


def test_right_calls(tracesim_eval):
    with tracesim.record_run("weather") as recorded:
        recorded.span.set_output(agent("Weather in Warsaw?"))
    results = tracesim_eval.assert_passes(
        recorded, Expected(output="12 C", tool_calls=WARSAW), evaluators=["trajectory_match", "exact"]
    )
    assert [r.score for r in results] == [1.0, 1.0]


def test_wrong_calls(tracesim_eval):
    with tracesim.record_run("weather") as recorded:
        recorded.span.set_output(agent("Weather in Warsaw?"))
    tracesim_eval.assert_passes(
        recorded.run,
        Expected(output="12 C", tool_calls=WARSAW),
        evaluators=["tool_call_f1:threshold=0.9", "exact"],
        name="weather agent",
    )


def test_a_list_of_calls(tracesim_eval):
    calls = [{{"name": "search", "arguments": {{"q": "Warsaw"}}}}]
    tracesim_eval.assert_passes(calls, WARSAW, evaluators=["tool_names"])


CORRECTNESS = {{"type": "tool_correctness", "params": ["input_parameters"], "threshold": 0.9}}


@tracesim.trace(kind="agent", evaluators=[CORRECTNESS], expected=Expected(tool_calls=WARSAW))
def scored_agent(question):
    return agent(question)


@pytest.mark.tracesim
def test_marker_on_a_traced_agent():
    scored_agent("Weather in Warsaw?")
"""


@pytest.fixture
def session(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, llm_server: LLMServer) -> LLMServer:
    """Subprocess sessions load only our plugin; the agent's model is the scripted server."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
    pytester.makepyfile(test_agent=TESTS.format(base_url=llm_server.base_url))
    return llm_server


def _literal(*patterns: str) -> list[str]:
    """fnmatch patterns whose ``[`` is a character, not a set (``[REDACTED:email]``)."""
    return [pattern.replace("[", "[[]") for pattern in patterns]


def _run(pytester: pytest.Pytester) -> pytest.RunResult:
    return pytester.runpytest_subprocess(
        "-p", PLUGIN, "-p", "no:cacheprovider", "--color=no", "--tracesim-json", "out.json"
    )


def test_a_failing_run_lists_expected_and_actual_calls_missing_and_extra(
    pytester: pytest.Pytester, session: LLMServer
) -> None:
    session.script(
        CHAT,
        # test_right_calls
        Reply.tool_call("lookup", '{"city": "Warsaw"}'),
        Reply.content("12 C"),
        # test_wrong_calls: Berlin first (a secret in its arguments), then Warsaw
        Reply.tool_call("lookup", '{"city": "Berlin", "email": "marie@curie.org"}'),
        Reply.tool_call("lookup", '{"city": "Warsaw"}'),
        Reply.content("12 C"),
        # test_marker_on_a_traced_agent: Paris, never Warsaw
        Reply.tool_call("lookup", '{"city": "Paris"}'),
        Reply.content("15 C"),
    )
    result = _run(pytester)
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        _literal(
            "*AssertionError: 1 of 2 tracesim results did not pass:",
            "*  tool_call_f1 on 'weather agent': failed, score 0.6667, threshold 0.9*",
            '*    expected: lookup({"city":"Warsaw"})',
            '*    actual:   lookup({"city":"Berlin","email":"[REDACTED:email]"}), lookup({"city":"Warsaw"})',
            '*    extra:    lookup({"city":"Berlin","email":"[REDACTED:email]"})',
        )
    )
    result.stdout.fnmatch_lines(
        [
            "*  tool_names on 'score': failed, score 0, threshold 1*",
            '*    expected: lookup({"city":"Warsaw"})',
            '*    actual:   search({"q":"Warsaw"})',
            "*    missing:  lookup ×1",
            "*    extra:    search ×1",
        ]
    )
    # online: the traced agent's own result, its expected calls read back from the span
    result.stdout.fnmatch_lines(
        [
            "*(@pytest.mark.tracesim fails a test whose results fail):",
            "*  tool_correctness on 'scored_agent': failed, score 0, threshold 0.9*",
            '*    expected: lookup({"city":"Warsaw"})',
            '*    missing:  lookup({"city":"Warsaw"})',
            '*    extra:    lookup({"city":"Paris"})',
        ]
    )
    # the session's summary lists them under their test, and the JSON file holds them
    result.stdout.fnmatch_lines(
        [
            "tool calls of the failed run evaluators:",
            "test_agent.py::test_wrong_calls: tool_call_f1 on 'weather agent', fail:",
            '    expected: lookup({"city":"Warsaw"})',
        ]
    )
    assert "marie@curie.org" not in result.stdout.str()
    data = json.loads((pytester.path / "out.json").read_text())
    rows = {(t["nodeid"].split("::")[1], r["evaluator"]): r for t in data["tests"] for r in t["results"]}
    wrong = rows[("test_wrong_calls", "tool_call_f1")]
    assert wrong["calls"] == {
        "expected": 'lookup({"city":"Warsaw"})',
        "actual": 'lookup({"city":"Berlin","email":"[REDACTED:email]"}), lookup({"city":"Warsaw"})',
        "extra": 'lookup({"city":"Berlin","email":"[REDACTED:email]"})',
    }
    assert rows[("test_wrong_calls", "exact")]["score"] == 1.0  # the run's output, "12 C"
    assert "calls" not in rows[("test_wrong_calls", "exact")]
    assert rows[("test_right_calls", "trajectory_match")]["calls"]["actual"] == 'lookup({"city":"Warsaw"})'
    assert "marie@curie.org" not in (pytester.path / "out.json").read_text()


def test_string_evaluators_score_the_runs_output_and_the_expected_output() -> None:
    lookup = ToolCall("lookup", {"city": "Warsaw"}, output="12 C")
    run = Run(steps=(Step(kind="tool", name="lookup", tool_call=lookup),), output="12 C")
    with capture_spans() as captured:
        check = TracesimEval(captured)
        results = check.score(
            run,
            Expected(output="12 C", tool_calls=[{"name": "lookup", "arguments": {"city": "Warsaw"}}]),
            evaluators=["exact", "trajectory_match"],
        )
        calls_only = check.score(run, Expected(tool_calls=[{"name": "lookup"}]), evaluators=["exact"])
    assert [(r.name, r.score) for r in results] == [("exact", 1.0), ("trajectory_match", 1.0)]
    assert calls_only[0].status == "skipped"  # no expected output to compare the run's output with
    with capture_spans() as captured:
        check = TracesimEval(captured)
        text_only = check.score(run, "12 C", evaluators=["trajectory_match", "exact"])
        as_mapping = check.score(run, {"tool_calls": [{"name": "lookup"}]}, evaluators=["tool_names"])
    assert [(r.name, r.status) for r in text_only] == [("trajectory_match", "skipped"), ("exact", "ok")]
    assert as_mapping[0].score == 1.0


def test_the_module_assert_passes_lists_the_differences_of_a_result() -> None:
    from tracesim.evaluators import ToolNames

    result = ToolNames().evaluate([{"name": "search"}], [{"name": "lookup"}])
    with pytest.raises(AssertionError) as info:
        assert_passes(result, source="agent")
    assert str(info.value).splitlines()[1:] == [
        "  tool_names on 'agent': failed, score 0, threshold 1: missing 'lookup' x1; unexpected 'search' x1",
        "    missing: lookup ×1",
        "    extra:   search ×1",
    ]


def test_a_passing_row_prints_no_calls_and_rows_travel_as_json() -> None:
    calls = {"expected": "lookup({})", "actual": "lookup({})"}
    passed = Row("t.py::test_a", "agent", "trajectory_match", 1.0, True, 1.0, "ok", calls=calls)
    failed = Row("t.py::test_b", "agent", "trajectory_match", 0.0, False, 1.0, "ok", calls=calls)
    summary = Summary([passed, Row.from_json(failed.to_json())])
    lines = summary.terminal_lines()
    assert "t.py::test_b: trajectory_match on 'agent', fail:" in lines
    assert not any(line.startswith("t.py::test_a:") for line in lines)
    assert Row.from_json(failed.to_json()) == failed
    markdown = summary.markdown()
    assert "- t\\.py\\:\\:test\\_b\\: trajectory\\_match on &#39;agent&#39;\\, fail" in markdown
    assert "  - expected: lookup\\(\\{\\}\\)" in markdown
    assert "test\\_a\\:" not in markdown
    assert "calls" not in Row("t", "s", "exact", 1.0, True, 1.0, "ok").to_json()


def test_record_run_needs_the_fixture_or_a_configuration() -> None:
    with pytest.raises(tracesim.TracesimError, match=r"capture_spans"), tracesim.record_run():
        pass


def test_the_calls_module_examples_run() -> None:
    import doctest

    from tracesim_pytest import _calls

    outcome = doctest.testmod(_calls)
    assert outcome.failed == 0
    assert outcome.attempted >= 5


def test_written_rows_keep_their_calls(tmp_path: Path) -> None:
    row = Row("t.py::test_a", "agent", "tool_names", 0.0, False, 1.0, "ok", calls={"missing": "lookup ×1"})
    summary = Summary([row])
    summary.write_json(tmp_path / "out.json")
    written = json.loads((tmp_path / "out.json").read_text())
    assert written["tests"][0]["results"][0]["calls"] == {"missing": "lookup ×1"}
