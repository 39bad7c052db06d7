"""``tracesim show``: the steps of a run a run evaluator failed, listed at the end of its trace.

The files are written by a real traced agent scored online (``report/agentfiles.py``):
``weather`` calls ``lookup`` and, for fahrenheit, ``convert``; ``tool_names`` expects both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from report.agentfiles import write_weather_runs
from report.tracefiles import TraceWriter, result

from tracesim import _semconv as sc
from tracesim.cli import main
from tracesim.evaluators import TrajectoryMatch
from tracesim.tracefile import load_spans


@pytest.fixture
def weather_file(tmp_path: Path) -> Path:
    path = tmp_path / "traces.jsonl"
    write_weather_runs(path, ["Warsaw in fahrenheit?", "Warsaw in celsius?"])
    return path


def _show(capsys: pytest.CaptureFixture[str], *args: str) -> list[str]:
    assert main(["show", *args]) == 0
    return capsys.readouterr().out.splitlines()


def test_a_failed_run_evaluator_lists_the_runs_steps_at_the_end_of_its_trace(
    weather_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = _show(capsys, str(weather_file))
    head = lines.index("run of weather  ✗ tool_names 0.000  1 tool call  1 step:")
    # the calls it should have made (tracesim.expected.tool_calls), then the result's explanation
    assert lines[head + 1] == '   expected: lookup({"city":"Warsaw"}), convert({"celsius":12.0})'
    assert lines[head + 2] == "   why (tool_names): missing 'convert' x1"
    assert lines[head + 3].startswith('   1. tool lookup {"city": "Warsaw"}  ')
    assert lines[head + 4] == ""  # the end of the trace's block
    trace = max(i for i, line in enumerate(lines[:head]) if line.startswith("trace "))
    assert lines[trace + 2] == "│  in: Warsaw in celsius?"  # under the run that missed convert
    assert sum(line.startswith("run of ") for line in lines) == 1  # the passing run lists nothing
    assert lines[-1] == "showing 2 of 2 traces"


def test_no_details_lists_no_steps(weather_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert not any(line.startswith("run of ") for line in _show(capsys, str(weather_file), "--no-details"))


def test_steps_are_bounded_by_steps_n_and_the_rest_counted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = TraceWriter(tmp_path / "traces.jsonl")
    agent = w.span(
        "planner",
        kind="AGENT",
        duration_s=5,
        results=[result("trajectory_match", 0.0, passed=False, threshold=1.0)],
    )
    for i in range(30):
        w.span(
            "search",
            kind="TOOL",
            start_s=0.1 * i,
            duration_s=0.05,
            parent=agent,
            error=i == 2,
            attributes={"gen_ai.tool.call.arguments": json.dumps({"page": i, "query": "x" * 200})},
        )
    w.close()
    lines = _show(capsys, str(w.path), "--steps", "3", "--width", "30")
    head = lines.index("run of planner  ✗ trajectory_match 0.000  30 tool calls  30 steps:")
    assert lines[head + 1 : head + 5] == [
        '   1. tool search {"page": 0, "query": "xxxxxxx…  50.0 ms',
        '   2. tool search {"page": 1, "query": "xxxxxxx…  50.0 ms',
        '   3. tool search {"page": 2, "query": "xxxxxxx…  ERROR boom  50.0 ms',
        "   ... and 27 more",
    ]
    default = _show(capsys, str(w.path))
    assert "   ... and 10 more" in default  # 20 steps by default


def test_a_late_result_on_a_carrier_lists_the_run_of_the_span_it_scored(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = TraceWriter(tmp_path / "traces.jsonl")
    agent = w.span("agent", kind="AGENT", duration_s=1)
    w.span("lookup", kind="TOOL", parent=agent, attributes={"gen_ai.tool.call.arguments": '{"q": 1}'})
    w.carrier(agent, [result("tool_correctness", 0.5, passed=False, threshold=1.0)], start_s=1)
    w.span("other", kind="AGENT", start_s=10, results=[result("levenshtein", 0.1, passed=False)])
    w.close()
    lines = _show(capsys, str(w.path))
    assert "run of agent  ✗ tool_correctness 0.500  1 tool call  1 step:" in lines  # the carrier too
    assert any(line.startswith('   1. tool lookup {"q": 1}') for line in lines)
    assert sum(line.startswith("run of ") for line in lines) == 1  # levenshtein does not score runs


def test_another_run_evaluator_failing_lists_the_steps_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "traces.jsonl"
    expected = [{"name": "lookup", "arguments": "not json"}]
    write_weather_runs(path, ["Warsaw in fahrenheit?"], evaluator=TrajectoryMatch(), expected=expected)
    lines = _show(capsys, str(path), "--failed", "trajectory_match")
    assert any(
        line.startswith("run of weather  ✗ trajectory_match 0.000  2 tool calls  2 steps:") for line in lines
    )


def test_an_errored_run_evaluator_lists_the_steps_too(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    w = TraceWriter(tmp_path / "traces.jsonl")
    agent = w.span(
        "agent", kind="AGENT", results=[result("run_budget", status="error", error_type="Timeout")]
    )
    w.span("lookup", kind="TOOL", parent=agent)
    w.close()
    lines = _show(capsys, str(w.path))
    assert "run of agent  ! run_budget error  1 tool call  1 step:" in lines


def test_the_steps_shown_are_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    secret = "marie@curie.org"
    w = TraceWriter(tmp_path / "traces.jsonl")
    agent = w.span("agent", kind="AGENT", results=[result("tool_names", 0.0, passed=False)])
    w.span(
        "lookup",
        kind="TOOL",
        parent=agent,
        error=True,
        attributes={sc.SPAN_KIND: "TOOL", "gen_ai.tool.call.arguments": json.dumps({"user": secret})},
    )
    w.close()
    out = "\n".join(_show(capsys, str(w.path), "--width", "200"))
    assert secret not in out
    assert '1. tool lookup {"user": "[REDACTED:email]"}' in out


def _weather_looked_up_paris(path: Path, evaluators: list[Any]) -> None:
    """A trace file of one agent run, scored online, that looked up Paris when asked for Warsaw."""
    import tracesim

    tracesim.configure(jsonl_path=str(path))

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return "12 C"

    expected = tracesim.Expected(tool_calls=[{"name": "lookup", "arguments": {"city": "Warsaw"}}])

    @tracesim.trace(kind="agent", evaluators=evaluators, expected=expected)
    def weather(city: str) -> str:
        return lookup("Paris")

    weather("Warsaw")
    tracesim.shutdown()


def test_without_an_explanation_the_differences_in_the_details_say_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "traces.jsonl"
    _weather_looked_up_paris(path, [{"type": "tool_correctness", "params": ["input_parameters"]}])
    lines = _show(capsys, str(path))
    assert '   expected: lookup({"city":"Warsaw"})' in lines
    assert (
        '   why (tool_correctness): missing lookup({"city":"Warsaw"}); extra lookup({"city":"Paris"})'
        in lines
    )


def test_a_run_evaluator_renamed_in_its_configuration_is_still_shown_as_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "traces.jsonl"
    renamed = [{"type": "trajectory_match", "name": "route_check"}, {"type": "exact", "name": "answer_check"}]
    _weather_looked_up_paris(path, renamed)
    events = [e.attributes for s in load_spans(path) for e in s.events]
    marks = {e["gen_ai.evaluation.name"]: e.get("tracesim.evaluation.run") for e in events}
    assert marks == {"route_check": True, "answer_check": None}  # only the run evaluator's result
    lines = _show(capsys, str(path))
    assert any(line.startswith("run of weather  ✗ route_check 0.000") for line in lines), lines
