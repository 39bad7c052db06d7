"""The pytest plugin, in real pytest sessions: fixture, marker, failure messages and every report.

Sessions run in a subprocess (``pytester.runpytest_subprocess``) with plugin autoloading off,
so that they load tracesim's plugin with ``-p`` and nothing else (hypothesis' and langsmith's
plugins alone take seconds to import).
"""

from __future__ import annotations

import doctest
import importlib
import json
import xml.etree.ElementTree as ET
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from tracesim_pytest._report import markdown_cell

pytest_plugins = ["pytester"]

PLUGIN = "tracesim_pytest.plugin"

AGENT = """
import pytest
import tracesim
from tracesim.evaluators import Levenshtein

EXPECTED = "Marie Curie was born in Warsaw."

@tracesim.trace(kind="agent", evaluators=[Levenshtein(threshold=0.8), "rouge"], expected=EXPECTED)
def answer(text):
    return text

@tracesim.trace(kind="agent", evaluators=[Levenshtein(threshold=0.8), "rouge"])
def unknown_answer(text):  # no expected output: its results are skipped
    return text

@tracesim.trace(kind="agent")
def plain_answer(text):
    return text
"""

TESTS = """
from agent import EXPECTED, answer, plain_answer, unknown_answer
import pytest

LONG = "Marie Curie was born in Warsaw in 1867."

@pytest.mark.tracesim
def test_marker_fails_on_a_failing_traced_call():
    assert answer(LONG) == LONG  # levenshtein 0.79 < 0.8: the marker fails the test after it returns

@pytest.mark.tracesim
def test_marker_passes():
    answer(EXPECTED)

@pytest.mark.tracesim
def test_marker_ignores_skipped_results():
    unknown_answer("How high is Mount Everest?")

@pytest.mark.tracesim(evaluators=[{"match": "plain_answer", "evaluators": ["levenshtein:threshold=0.95"],
                                   "expected": {"value": "Warsaw"}}])
def test_marker_settings_attach_rules():
    plain_answer("Warsaw, Poland")

def test_fixture_sees_inline_results(tracesim_eval):
    answer(LONG)  # scored before it returns: the results are there at once
    scores = {r.name: r.score for r in tracesim_eval.results}
    assert scores["levenshtein"] == 0.79
    assert tracesim_eval.spans.by_name("answer").attributes["tracesim.eval.levenshtein.passed"] is False

def test_fixture_assert_passes(tracesim_eval):
    results = tracesim_eval.assert_passes("Hello World!", "Hello World", evaluators=["levenshtein"])
    assert results[0].score == 0.92

def test_fixture_assert_passes_fails(tracesim_eval):
    tracesim_eval.assert_passes(LONG, EXPECTED, evaluators=[{"type": "levenshtein", "threshold": 0.9}],
                                name="answer_v2")

def test_fixture_assert_passes_without_expected_fails(tracesim_eval):
    tracesim_eval.assert_passes(LONG, None, evaluators=["rouge"])

def test_bad_evaluator_is_a_clear_error(tracesim_eval):
    tracesim_eval.score("a", "b", evaluators=["levenshtein:threshhold=0.8"])

def test_untouched():
    assert plain_answer("x") == "x"
"""


@pytest.fixture
def session_env(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Subprocess sessions load only our plugin; the step summary goes to a file of ours."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    summary = tmp_path / "step_summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return summary


def _markdown_row(*cells: str) -> str:
    """A row of the step summary's table, each cell escaped for Markdown (``test\\_a\\.py``)."""
    return "| " + " | ".join(markdown_cell(cell) for cell in cells) + " |"


def _properties(junit: Path) -> dict[str, list[tuple[str, str]]]:
    found: dict[str, list[tuple[str, str]]] = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        props = [(p.get("name", ""), p.get("value", "")) for p in case.iter("property")]
        found[case.get("name", "")] = props
    return found


def test_the_plugin_scores_fails_and_reports(pytester: pytest.Pytester, session_env: Path) -> None:
    pytester.makepyfile(agent=AGENT, test_agent=TESTS)
    result = pytester.runpytest_subprocess(
        "-p",
        PLUGIN,
        "-p",
        "no:cacheprovider",
        "--tracesim-json",
        "out/results.json",
        "--junitxml",
        "junit.xml",
    )
    result.assert_outcomes(passed=5, failed=5)

    # Failure messages name the metric, what was scored, the score, the threshold and the reason.
    result.stdout.fnmatch_lines(
        [
            "*AssertionError: 1 of 2 tracesim results did not pass (@pytest.mark.tracesim fails a test*",
            "*levenshtein on 'answer': failed, score 0.79, threshold 0.8: the score is below the threshold",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*levenshtein on 'answer_v2': failed, score 0.79, threshold 0.9: the score is below the threshold"]
    )
    result.stdout.fnmatch_lines(
        ["*rouge on 'score': skipped, score -, threshold 0.5: no expected output to compare against"]
    )
    result.stdout.fnmatch_lines(["*ConfigError*threshhold*"])
    assert "test_marker_settings_attach_rules" in result.stdout.str().split("short test summary")[1]

    # The terminal table: one line per test and evaluator.
    result.stdout.fnmatch_lines(
        [
            "*= tracesim evaluations =*",
            "test*source*evaluator*score*verdict*threshold",
            "test_agent.py::test_marker_fails_on_a_failing_traced_call*answer*levenshtein*0.79*fail*0.8",
            "test_agent.py::test_marker_fails_on_a_failing_traced_call*answer*rouge*0.8571*pass*0.5",
        ]
    )
    result.stdout.fnmatch_lines(["12 results in 8 tests: 5 pass, 4 fail, 3 skipped"])

    data = json.loads((pytester.path / "out" / "results.json").read_text())
    tests = {t["nodeid"].split("::")[1]: t for t in data["tests"]}
    assert data["summary"] == {
        "tests": 8,
        "results": 12,
        "pass": 5,
        "fail": 4,
        "error": 0,
        "skipped": 3,
        "no_verdict": 0,
    }
    assert "test_untouched" not in tests  # a test that scored nothing is not listed
    failing = tests["test_marker_fails_on_a_failing_traced_call"]
    assert failing["outcome"] == "failed"
    assert failing["results"][0] == {
        "source": "answer",
        "evaluator": "levenshtein",
        "score": 0.79,
        "passed": False,
        "threshold": 0.8,
        "status": "ok",
        "label": "fail",
        "reason": None,
    }
    assert tests["test_fixture_assert_passes"]["outcome"] == "passed"
    assert [r["status"] for r in tests["test_marker_ignores_skipped_results"]["results"]] == ["skipped"] * 2
    assert tests["test_marker_settings_attach_rules"]["results"][0]["source"] == "plain_answer"

    props = _properties(pytester.path / "junit.xml")
    assert ("tracesim.levenshtein.score", "0.79") in props["test_marker_fails_on_a_failing_traced_call"]
    assert ("tracesim.levenshtein.passed", "false") in props["test_marker_fails_on_a_failing_traced_call"]
    assert ("tracesim.levenshtein.threshold", "0.8") in props["test_marker_fails_on_a_failing_traced_call"]
    assert ("tracesim.rouge.status", "skipped") in props["test_fixture_assert_passes_without_expected_fails"]
    assert props["test_untouched"] == []

    markdown = session_env.read_text()
    assert markdown.startswith("### tracesim evaluations\n")
    assert "| test | source | evaluator | score | verdict | threshold |" in markdown
    assert (
        _markdown_row(
            "test_agent.py::test_fixture_assert_passes", "score", "levenshtein", "0.92", "pass", "0.7"
        )
        in markdown
    )


def test_a_suite_that_does_not_use_it_gets_nothing(pytester: pytest.Pytester, session_env: Path) -> None:
    pytester.makepyfile(
        agent=AGENT, test_plain="from agent import plain_answer\ndef test_a(): plain_answer('x')"
    )
    pytester.makepyfile(
        test_scored="def test_b(tracesim_eval): tracesim_eval.score('a', 'a', evaluators=['exact'])"
    )
    quiet = pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider", "test_plain.py")
    quiet.assert_outcomes(passed=1)
    assert "tracesim evaluations" not in quiet.stdout.str()
    assert not session_env.exists()  # no Markdown without results
    assert not (pytester.path / ".tracesim").exists()  # tracesim was not configured: no spans written

    hushed = pytester.runpytest_subprocess("-p", PLUGIN, "-p", "no:cacheprovider", "--tracesim-no-summary")
    hushed.assert_outcomes(passed=2)
    assert "tracesim evaluations" not in hushed.stdout.str()
    assert (
        _markdown_row("test_scored.py::test_b", "score", "exact", "1", "pass", "1") in session_env.read_text()
    )


def test_assert_passes_names_what_failed() -> None:
    from tracesim_pytest.plugin import assert_passes

    from tracesim.evaluators import EvalResult, Levenshtein

    assert_passes([Levenshtein(threshold=0.8).evaluate("Hello World!", "Hello World")])
    error = EvalResult(
        name="judge", status="error", error="HTTP 429", error_type="rate_limited", threshold=0.5
    )
    unjudged = EvalResult(name="rouge", score=0.4)
    with pytest.raises(AssertionError) as caught:
        assert_passes([error, unjudged], source="answer")
    assert str(caught.value).splitlines() == [
        "2 of 2 tracesim results did not pass:",
        "  judge on 'answer': error, score -, threshold 0.5: rate_limited: HTTP 429",
        "  rouge on 'answer': no_verdict, score 0.4, threshold -: the evaluator has no threshold; "
        "give it threshold=... to get a verdict",
    ]


def test_results_survive_the_report_serialization_xdist_uses(pytester: pytest.Pytester) -> None:
    from tracesim_pytest._report import Row, Summary

    row = Row("t.py::test_a", "answer", "levenshtein", 0.79, False, 0.8, "ok", "fail", None)
    report = pytest.TestReport(
        "t.py::test_a",
        ("t.py", 0, "test_a"),
        {},
        "passed",
        None,
        "teardown",
        tracesim_results=[row.to_json()],
    )
    config = pytester.parseconfig()
    data = config.hook.pytest_report_to_serializable(config=config, report=report)
    back = config.hook.pytest_report_from_serializable(config=config, data=json.loads(json.dumps(data)))
    summary = Summary()
    summary.add_report(back)  # what the controller's plugin does with a worker's report
    assert summary.rows == [row]


@pytest.mark.parametrize(
    "module",
    [
        PLUGIN,
        "tracesim_pytest._report",
        "tracesim_pytest.agenttest",
        "tracesim_pytest._agenttest_config",
        "tracesim_pytest._agenttest_score",
    ],
)
def test_docstring_examples(module: str) -> None:
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0


def test_the_entry_point_is_registered() -> None:
    # Fails until pyproject.toml declares [project.entry-points.pytest11] and tracesim is reinstalled.
    plugins = {ep.value for ep in entry_points(group="pytest11")}
    assert PLUGIN in plugins
