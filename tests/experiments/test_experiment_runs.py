"""Experiments whose evaluators score runs: each case's task runs under its span, the spans under
it become the case's `Run`, run evaluators score that run (string evaluators the output), and the
report shows a failed run's steps and how it differs from the expected calls, redacted.

The agent is a ``@trace`` function driving the real ``openai`` client over HTTP against the
scripted server (``tests/llm_server.py``), traced by tracesim's OpenAI integration.
"""

from __future__ import annotations

import asyncio
import contextlib
import doctest
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
from llm_server import CHAT, LLMServer, Reply
from scripted_agent import lookup, weather_agent

import tracesim
from tracesim import _runtime
from tracesim.evaluators import Evaluator
from tracesim.experiments import Case, Dataset, ExperimentReport, _run_steps
from tracesim.runs import Expected, Run
from tracesim.testing import capture_spans

pytest.importorskip(
    "opentelemetry.instrumentation.genai.openai",
    reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
)
from tracesim.integrations import uninstrument_openai

WARSAW = [{"name": "lookup", "arguments": {"city": "Warsaw"}}]
PARIS = [{"name": "lookup", "arguments": {"city": "Paris"}}]


@pytest.fixture
def server(llm_server: LLMServer) -> Iterator[LLMServer]:
    tracesim.instrument_openai()
    yield llm_server
    uninstrument_openai()


def cases() -> Dataset:
    return Dataset(
        [
            Case("Weather in Warsaw?", expected=Expected(output="12 C", tool_calls=WARSAW), id="warsaw"),
            Case("Weather in Paris?", expected=Expected(output="15 C", tool_calls=PARIS), id="paris"),
        ],
        name="weather",
    )


def script(server: LLMServer) -> None:
    """Warsaw: the right call. Paris: the model looks up Berlin, then Paris."""
    server.script(
        CHAT,
        Reply.tool_call("lookup", '{"city": "Warsaw"}'),
        Reply.content("12 C"),
        Reply.tool_call("lookup", '{"city": "Berlin"}'),
        Reply.tool_call("lookup", '{"city": "Paris"}'),
        Reply.content("15 C"),
    )


EVALUATORS = [
    {"type": "trajectory_match", "mode": "strict"},
    {"type": "tool_names"},
    "exact",
]


def test_run_evaluators_score_each_cases_run_and_string_evaluators_its_output(server: LLMServer) -> None:
    script(server)
    with capture_spans() as captured:
        report = cases().evaluate(weather_agent(server), evaluators=EVALUATORS, max_concurrency=1)
    warsaw, paris = report.row("warsaw"), report.row("paris")
    assert (warsaw.output, paris.output) == ("12 C", "15 C")
    assert {name: r.passed for name, r in warsaw.scores.items()} == {
        "trajectory_match": True,
        "tool_names": True,
        "exact": True,
    }
    assert {name: r.passed for name, r in paris.scores.items()} == {
        "trajectory_match": False,
        "tool_names": False,
        "exact": True,
    }
    assert paris.scores["tool_names"].details["extra"] == {"lookup": 1}  # Berlin, then Paris
    assert paris.scores["trajectory_match"].score == 0.0
    assert paris.scores["exact"].score == 1.0  # the output, not the run

    # a passed run keeps nothing; a failed one its steps, model calls and tool calls alike
    assert warsaw.run is None
    run = paris.run
    assert run is not None
    assert run["failed"][0] == "trajectory_match"
    assert (run["tool_calls"], run["llm_calls"]) == (2, 3)
    kinds = [(step["kind"], step["name"]) for step in run["steps"]]
    assert kinds[0] == ("agent", "agent")
    tools = [step for step in run["steps"] if step["kind"] == "tool"]
    assert [(t["arguments"], t["output"]) for t in tools] == [
        ('{"city":"Berlin"}', "unknown"),
        ('{"city":"Paris"}', "15 C"),
    ]
    assert all(isinstance(step.get("duration_s"), float) for step in run["steps"])
    # the run's steps are under the case's span, in its trace
    agent_spans = [s for s in captured.named("agent") if s.trace_id == paris.trace_id]
    assert len(agent_spans) == 1


def test_the_report_shows_a_failed_runs_steps_and_differences(server: LLMServer, tmp_path: Path) -> None:
    script(server)
    with capture_spans():
        report = cases().evaluate(
            weather_agent(server),
            evaluators=["tool_call_f1:threshold=0.9", {"type": "tool_names"}],
            max_concurrency=1,
        )
    paris = report.row("paris")
    assert paris.scores["tool_call_f1"].passed is False
    text = str(report)
    section = text[text.index("failed runs") :]
    assert "warsaw" not in section  # only failed runs are shown
    lines = [line.strip() for line in section.splitlines()]
    assert 'expected calls: lookup({"city":"Paris"})' in lines
    assert 'extra: lookup({"city":"Berlin"})' in lines
    assert any(line.startswith("tool_call_f1 failed, score 0.") for line in lines)
    steps = [line for line in lines if line[:2] in {f"{n}." for n in range(1, 10)}]
    assert steps[0].startswith("1. agent agent")
    assert any('asked for lookup({"city":"Berlin"})' in line for line in steps)

    saved = ExperimentReport.load(report.to_json(tmp_path / "run.json"))
    assert saved.row("paris").run == json.loads(json.dumps(paris.run))
    assert saved.row("warsaw").run is None
    assert str(saved) == text  # the file holds what the report shows

    page = report.to_html(tmp_path / "run.html").read_text()
    failed = page[page.index('<section id="failed-runs">') :]
    assert 'data-case-id="paris"' in failed
    assert 'data-case-id="warsaw"' not in failed
    assert '<td>tool</td><td>lookup</td><td class="text">{&quot;city&quot;:&quot;Berlin&quot;}</td>' in failed
    assert "extra: <code>lookup({&quot;city&quot;:&quot;Berlin&quot;})</code>" in failed


class Keeps(Evaluator):
    """A run evaluator that fails every run and says what it was given."""

    type_name = "keeps_runs"
    scores_runs: ClassVar[bool] = True
    requires_expected = False

    def __init__(self) -> None:
        super().__init__(threshold=0.5)
        self.seen: list[Any] = []

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        self.seen.append(output)
        return 0.0


def test_secrets_and_markup_in_a_run_are_redacted_and_escaped_in_every_view(tmp_path: Path) -> None:
    @tracesim.trace(kind="tool")
    def send(to: str, body: str) -> str:
        raise PermissionError(f"cannot mail {to}")

    def task(question: str) -> str:
        with contextlib.suppress(PermissionError):
            send("marie@curie.org", "<script>alert(1)</script>")
        return "sent"

    keeps = Keeps()
    dataset = Dataset([Case("mail her", expected=Expected(tool_calls=[{"name": "send"}]), id="mail")])
    with capture_spans():
        report = dataset.evaluate(task, evaluators=[keeps])
    run = keeps.seen[0]
    assert isinstance(run, Run)
    assert run.steps[0].error is not None
    assert "marie@curie.org" in json.dumps(report.row("mail").run)  # in memory, as the agent did it
    text = str(report)
    data = report.to_json(tmp_path / "run.json").read_text()
    page = report.to_html(tmp_path / "run.html").read_text()
    for written in (text, data, page):
        assert "marie@curie.org" not in written
        assert "[REDACTED:email]" in written
    assert "<script>" not in page
    assert "&lt;script&gt;" in page
    assert "error: PermissionError: cannot mail [REDACTED:email]" in text


def test_without_configure_a_run_evaluator_scores_what_the_task_returns_or_says_why_not() -> None:
    calls = [{"name": "lookup", "arguments": {"city": "Paris"}}]
    dataset = Dataset([Case("q", expected=Expected(tool_calls=PARIS), id="q")])
    returned = dataset.evaluate(lambda question: calls, evaluators=["trajectory_match"])
    assert returned.row("q").scores["trajectory_match"].score == 1.0

    text = dataset.evaluate(lambda question: "15 C", evaluators=["trajectory_match", "exact"])
    result = text.row("q").scores["trajectory_match"]
    assert result.status == "error"
    assert "the case's run (its spans) was not recorded: tracesim is not configured" in (result.error or "")
    assert "call tracesim.configure() before evaluating" in (result.error or "")
    assert text.row("q").scores["exact"].status == "skipped"  # no expected output: not the run's fault


def test_with_online_scoring_off_the_runs_are_still_recorded() -> None:
    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return "15 C"

    dataset = Dataset([Case("Paris", expected=Expected(tool_calls=PARIS), id="q")])
    with capture_spans(scoring_mode="off"):
        report = dataset.evaluate(lookup, evaluators=["trajectory_match"])
    result = report.row("q").scores["trajectory_match"]
    assert (result.status, result.score) == ("ok", 1.0), result.error


def test_an_async_task_with_repeats_and_a_file_of_expected_tool_calls(tmp_path: Path) -> None:
    @tracesim.trace(kind="tool")
    async def fetch(city: str) -> str:
        await asyncio.sleep(0)
        return city

    async def task(question: dict[str, str]) -> str:
        return await fetch(question["city"])

    path = tmp_path / "cases.csv"
    path.write_text(
        "id,city,expected_tool_calls\n"
        'ok,Paris,"[{""name"": ""fetch"", ""arguments"": {""city"": ""Paris""}}]"\n'
        'bad,Rome,"[{""name"": ""fetch"", ""arguments"": {""city"": ""Milan""}}]"\n'
    )
    dataset = Dataset.from_file(path, input=["city"])
    with capture_spans():
        report = dataset.evaluate(task, evaluators=["trajectory_match"], repeat=2, max_concurrency=4)
    scores = {(row.case_id, row.repeat): row.score("trajectory_match") for row in report.rows}
    assert scores == {("ok", 0): 1.0, ("ok", 1): 1.0, ("bad", 0): 0.0, ("bad", 1): 0.0}
    kept = report.row("bad", 1).run
    assert kept is not None
    assert [s["arguments"] for s in kept["steps"]] == ['{"city":"Rome"}']
    assert "bad (repeat 1): 1 tool calls, 0 LLM calls" in str(report)


def test_the_recorder_lets_every_cases_spans_go_whatever_became_of_the_case() -> None:
    def task(question: str) -> str:
        lookup("Warsaw")
        if question == "boom":
            raise LookupError("no such city")
        return "12 C"

    expected = Expected(output="12 C", tool_calls=WARSAW)
    dataset = Dataset([Case(q, expected=expected, id=q) for q in ("fine", "boom", "again")])
    with capture_spans():
        report = dataset.evaluate(task, evaluators=["trajectory_match"], repeat=3)
        recorder = _runtime.active().runs  # type: ignore[union-attr]
        assert recorder is not None
        assert recorder.traces == {}
    assert report.row("boom").error == "LookupError: no such city"
    assert report.row("boom").run is None  # no run evaluator ran: the task failed
    assert report.row("again", 2).score("trajectory_match") == 1.0


def test_a_long_run_is_kept_bounded() -> None:
    def task(question: str) -> str:
        for number in range(120):
            lookup(f"city {number} " + "x" * 1000)
        return "done"

    dataset = Dataset([Case("many", expected=Expected(tool_calls=WARSAW), id="many")])
    with capture_spans():
        report = dataset.evaluate(task, evaluators=["trajectory_match"])
    run = report.row("many").run
    assert run is not None
    assert (len(run["steps"]), run["steps_total"], run["tool_calls"]) == (_run_steps.MAX_STEPS, 120, 120)
    assert all(len(step["arguments"]) <= _run_steps.MAX_CHARS for step in run["steps"])
    text = str(report)
    assert "... 100 more steps" in text  # 20 printed of the 120
    assert text.count(" tool lookup ") == 20


def test_a_step_still_running_when_the_task_returns_is_waited_for_then_marked() -> None:
    release = threading.Event()
    started = threading.Event()

    def task(question: str) -> str:
        def background() -> None:
            with tracesim.span("straggler", kind="tool"):
                started.set()
                release.wait(30)

        threading.Thread(target=_in_context(background)).start()  # under the case's span
        started.wait(10)
        return "done"

    dataset = Dataset([Case("q", expected=Expected(tool_calls=WARSAW), id="q")])
    try:
        with capture_spans():
            report = dataset.evaluate(task, evaluators=["trajectory_match"])
            release.set()
    finally:
        release.set()
    result = report.row("q").scores["trajectory_match"]
    assert result.details["run_truncated"]
    kept = report.row("q").run
    assert kept is not None
    assert kept["truncated"]
    assert "(the run was cut short:" in str(report)


def _in_context(function: Any) -> Any:
    import contextvars

    context = contextvars.copy_context()
    return lambda: context.run(function)


def test_the_run_steps_module_examples_run() -> None:
    outcome = doctest.testmod(_run_steps, optionflags=doctest.ELLIPSIS)
    assert outcome.failed == 0
    assert outcome.attempted > 5


AGENT_MODULE = """
import tracesim


@tracesim.trace(kind="tool")
def lookup(city):
    return {"Warsaw": "12 C"}.get(city, "unknown")


def agent(question):
    if question.endswith("?"):
        lookup("Berlin")  # a wrong call first
    return lookup("Warsaw")
"""


def test_from_the_command_line_a_file_of_expected_calls_and_the_failed_runs_in_its_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tracesim.cli._experiment import main

    (tmp_path / "weather_agent.py").write_text(AGENT_MODULE)
    rows = [
        {"id": "plain", "input": "Warsaw", "expected": "12 C", "expected_tool_calls": WARSAW},
        {"id": "asked", "input": "Warsaw?", "expected": "12 C", "expected_tool_calls": WARSAW},
    ]
    (tmp_path / "cases.jsonl").write_text("".join(json.dumps(row) + "\n" for row in rows))
    argv = ["run", "weather_agent.py:agent", "--dataset", "cases.jsonl", "-e", "trajectory_match"]
    assert main([*argv, "-e", "exact", "--no-progress", "--out", "run.json"]) == 0
    printed = capsys.readouterr().out
    section = printed[printed.index("failed runs") :]
    assert "asked: 2 tool calls, 0 LLM calls" in section
    assert 'tool lookup {"city":"Berlin"} -> unknown' in section
    assert "plain:" not in section
    saved = ExperimentReport.load(tmp_path / "run.json")
    assert saved.row("plain").score("trajectory_match") == 1.0
    assert saved.row("asked").score("trajectory_match") == 0.0
    assert saved.row("asked").score("exact") == 1.0


def test_a_sync_tasks_time_is_the_time_it_ran_in_its_thread() -> None:
    inner: dict[str, float] = {}

    def task(question: str) -> str:
        import time

        began = time.perf_counter()
        time.sleep(0.02)  # done before the event loop looks again
        inner[question] = time.perf_counter() - began
        return question

    report = Dataset([Case(q, id=q) for q in ("a", "b", "c")]).evaluate(task, max_concurrency=3)
    for row in report.rows:
        assert row.duration_s >= inner[row.case_id]  # it covers the task's own time, whenever the loop woke
