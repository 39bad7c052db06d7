"""Run evaluators over trace files, offline: `tracesim.batch.score` rebuilds each scored span's run.

The trace file is written by a real traced agent: ``@tracesim.trace(kind="agent")`` calling a
``@tracesim.trace(kind="tool")`` function as the real ``openai`` client (traced by the OpenAI
integration) asks it to, against the scripted server of ``tests/llm_server.py``. The agent
flushes the exporter after each model call, so a run's spans are on three lines of the file;
with parts of a few bytes, a part cut between those lines would hold a third of a run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_server import CHAT, LLMServer, Reply

import tracesim
from tracesim.runs import Expected

pd = pytest.importorskip("pandas", reason="the 'dask' extra is not installed")
openai = pytest.importorskip("openai")
pytest.importorskip(
    "opentelemetry.instrumentation.genai.openai",
    reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
)

from scripted_agent import weather_agent  # noqa: E402

from tracesim.batch import Spans, score  # noqa: E402
from tracesim.integrations import uninstrument_openai  # noqa: E402

TRAJECTORY = {"type": "trajectory_match"}
CORRECTNESS = {"type": "tool_correctness", "params": ["input_parameters"]}
BUDGET = {"type": "run_budget", "max_llm_calls": 2, "max_tool_calls": 1}
EVALUATORS = [TRAJECTORY, CORRECTNESS, BUDGET, "exact"]
WARSAW = [{"name": "lookup", "arguments": {"city": "Warsaw"}}]
OSLO = [{"name": "lookup", "arguments": {"city": "Oslo"}}, {"name": "convert", "arguments": {"celsius": 3}}]
EXPECTED = {
    "Weather in Warsaw?": Expected(output="12 C", tool_calls=WARSAW),
    "Weather in Oslo?": Expected(output="3 C", tool_calls=OSLO),
}


@pytest.fixture
def server(llm_server: LLMServer) -> Iterator[LLMServer]:
    tracesim.instrument_openai()
    yield llm_server
    uninstrument_openai()


def agent_trace(directory: Path, server: LLMServer) -> Path:
    """Two runs of a weather agent: one as expected, one that looked up the wrong city twice."""
    path = directory / "traces.jsonl"
    tracesim.configure(jsonl_path=str(path), scoring_mode="off")

    agent = weather_agent(
        server,
        rounds=4,
        before=lambda question: tracesim.current_span().set_expected(EXPECTED[question]),
        after_reply=tracesim.force_flush,  # the run's spans so far on one line, the rest on later ones
    )

    server.script(
        CHAT,
        Reply.tool_call("lookup", '{"city": "Warsaw"}'),
        Reply.content("12 C"),
        Reply.tool_call("lookup", '{"city": "Paris"}'),
        Reply.tool_call("lookup", '{"city": "Paris"}'),
        Reply.content("15 C"),
    )
    assert agent("Weather in Warsaw?") == "12 C"
    assert tracesim.force_flush()  # the first run's last span: its trace ends on this line
    assert agent("Weather in Oslo?") == "15 C"
    assert tracesim.force_flush()
    tracesim.shutdown()
    return path


def results(directory: Path) -> list[dict[str, Any]]:
    """Every results line of a run, in file order, details decoded."""
    lines = [
        json.loads(line)
        for part in sorted(directory.glob("part-*.jsonl"))
        for line in part.read_text(encoding="utf-8").splitlines()
    ]
    for line in lines:
        for key in [key for key in line if key.endswith((".details", "tool_calls"))]:
            line[key] = None if line[key] is None else json.loads(line[key])
    return sorted(lines, key=lambda line: line["row"])


@pytest.fixture
def traces(tmp_path: Path, server: LLMServer) -> Path:
    return agent_trace(tmp_path, server)


def test_each_agent_span_is_scored_on_its_run_rebuilt_from_the_trace_file(
    traces: Path, tmp_path: Path
) -> None:
    report = score(
        Spans(str(traces), kind="agent", block_bytes=64),
        evaluators=EVALUATORS,
        output=tmp_path / "out",
        engine="local",
        output_format="jsonl",
    )
    assert len(traces.read_text().splitlines()) == 7  # a line per model call, one for the agent span
    assert report.parts == 2  # tiny blocks, yet each part holds its trace whole
    assert (report.records, report.scored, report.failed_parts) == (2, 2, {})
    good, bad = results(tmp_path / "out")

    assert (good["output"], good["expected"]) == ("12 C", "12 C")
    assert good["tool_calls"] == [{"name": "lookup", "arguments": {"city": "Warsaw"}, "output": "12 C"}]
    assert good["expected_tool_calls"] == WARSAW
    assert [
        good[f"{name}.score"] for name in ("trajectory_match", "tool_correctness", "run_budget", "exact")
    ] == [
        1.0,
        1.0,
        1.0,
        1.0,
    ]
    assert good["tool_correctness.details"]["matched"] == [[0, 0, 1.0]]
    assert good["run_budget.details"]["limits"] == {
        "max_tool_calls": {"limit": 1, "actual": 1},
        "max_llm_calls": {"limit": 2, "actual": 2},
    }
    assert "exact.details" not in good  # string evaluators keep their columns

    paris = {"name": "lookup", "arguments": {"city": "Paris"}, "output": "15 C"}
    assert bad["tool_calls"] == [paris, paris]
    assert bad["expected_tool_calls"] == OSLO
    assert [
        bad[f"{name}.score"] for name in ("trajectory_match", "tool_correctness", "run_budget", "exact")
    ] == [
        0.0,
        0.0,
        0.0,
        0.0,
    ]
    assert bad["trajectory_match.details"]["first_difference"] == {
        "message": 0,
        "unmatched": {"name": "lookup", "arguments": {"city": "Paris"}},
        "expected": [OSLO[0]],
    }
    assert bad["tool_correctness.details"]["missing"] == OSLO
    assert bad["tool_correctness.details"]["extra"] == [paris, paris]
    assert bad["run_budget.details"]["exceeded"] == {
        "max_tool_calls": {"limit": 1, "actual": 2, "over": 1},
        "max_llm_calls": {"limit": 2, "actual": 3, "over": 1},
    }
    assert (
        bad["run_budget.explanation"] == "max_tool_calls: 2 > 1 (over by 1); max_llm_calls: 3 > 2 (over by 1)"
    )
    # the summary names the failed runs and how they differ
    assert [(row, name) for _, row, name, _ in report.failed_runs] == [
        (bad["row"], "trajectory_match"),
        (bad["row"], "tool_correctness"),
        (bad["row"], "run_budget"),
    ]
    assert report.failed_runs[1][3].startswith('missing lookup({"city":"Oslo"})')


def test_parts_cut_anywhere_would_split_runs_so_they_are_cut_between_traces(traces: Path) -> None:
    source = Spans(str(traces), kind="agent", block_bytes=64)
    calls = {}
    for whole in (False, True):
        found = []
        for part in source.parts(whole_traces=whole):
            chunk = source.read(part, runs=True)
            found += [len(run.output.tool_calls) for run in chunk.runs if run is not None]
        calls[whole] = found
    # seven parts of one line each: an agent span's part holds none of its tool spans
    assert calls == {False: [0, 0], True: [1, 2]}


def test_a_trace_longer_than_the_largest_part_is_split_and_its_runs_say_so(
    traces: Path, tmp_path: Path
) -> None:
    report = score(
        Spans(str(traces), kind="agent", block_bytes=64, max_trace_bytes=64),
        evaluators=[BUDGET],
        output=tmp_path / "out",
        engine="local",
        output_format="jsonl",
    )
    assert report.parts == 7
    for line in results(tmp_path / "out"):
        assert line["run_budget.details"]["run_truncated"] == (
            "the trace was split between batch parts (longer than max_trace_bytes)"
        )
        assert line["run_budget.details"]["limits"]["max_tool_calls"]["actual"] == 0  # what this part holds


def test_a_bad_expected_tool_calls_attribute_is_a_bad_row_naming_it(traces: Path, tmp_path: Path) -> None:
    line = json.loads(traces.read_text().splitlines()[2])
    spans = line["resourceSpans"][0]["scopeSpans"][0]["spans"]
    agent = next(span for span in spans if span["name"] == "agent")
    for attribute in agent["attributes"]:
        if attribute["key"] == "tracesim.expected.tool_calls":
            attribute["value"] = {"stringValue": '[{"name": "lookup"}, {"arguments": {}}]'}
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(line) + "\n", encoding="utf-8")
    report = score(
        Spans(str(broken), kind="agent"),
        evaluators=[TRAJECTORY],
        output=tmp_path / "out",
        engine="local",
        output_format="jsonl",
    )
    assert report.scored == 0
    reason = (
        "bad tracesim.expected.tool_calls "
        "(tracesim.expected.tool_calls[1].name: the tool's name, a non-empty string)"
    )
    assert report.examples == [(str(broken), 1, reason)]


def test_a_dask_cluster_gives_the_runs_the_scores_of_the_local_engine(traces: Path, tmp_path: Path) -> None:
    pytest.importorskip("distributed", reason="the 'dask' extra is not installed")
    source = Spans(str(traces), kind="agent", block_bytes=64)
    local = score(
        source, evaluators=EVALUATORS, output=tmp_path / "local", engine="local", output_format="jsonl"
    )
    on_dask = score(source, evaluators=EVALUATORS, output=tmp_path / "dask", workers=2, output_format="jsonl")
    assert (on_dask.parts, on_dask.scored, on_dask.failed_parts) == (2, 2, {})
    assert results(tmp_path / "dask") == results(tmp_path / "local")
    assert sorted(on_dask.failed_runs) == sorted(local.failed_runs)
    assert on_dask.tallies["trajectory_match"].mean == 0.5


def test_spans_without_expected_values_get_them_from_a_golden_file(tmp_path: Path) -> None:
    """Spans traced before anyone wrote down what was expected: a golden file gives it by input."""
    path = tmp_path / "traces.jsonl"
    tracesim.configure(jsonl_path=str(path), scoring_mode="off")

    @tracesim.trace(kind="tool")
    def lookup(city: str, unit: str) -> str:
        return "12 C"

    @tracesim.trace(kind="agent")
    def agent(question: str) -> str:
        if question == "own":  # a span's own expected value wins over the golden file's
            tracesim.current_span().set_expected(Expected(tool_calls=[{"name": "convert"}]))
        return lookup("Oslo", unit="C")

    for question in ("Weather in Warsaw?", "own", "not in the file"):
        agent(question)
    tracesim.shutdown()
    golden = tmp_path / "golden.jsonl"
    in_celsius = [{"name": "lookup", "arguments": {"city": "Warsaw", "unit": "C"}}]
    rows = [
        {"question": "Weather in Warsaw?", "expected": "12 C", "expected_tool_calls": in_celsius},
        {"question": "own", "expected_tool_calls": WARSAW},
    ]
    golden.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")

    report = score(
        Spans(str(path), kind="agent", golden=str(golden), golden_key="question"),
        evaluators=[CORRECTNESS, "exact"],
        output=tmp_path / "out",
        engine="local",
        output_format="jsonl",
    )
    warsaw, own, missing = results(tmp_path / "out")
    assert (warsaw["expected"], warsaw["expected_tool_calls"]) == ("12 C", in_celsius)
    assert (warsaw["exact.score"], warsaw["tool_correctness.score"]) == (1.0, 0.5)  # Oslo for Warsaw: half
    assert warsaw["tool_correctness.details"]["partial"][0]["credit"] == 0.5
    assert own["expected_tool_calls"] == [{"name": "convert", "arguments": {}}]
    assert own["tool_correctness.details"]["missing"] == [{"name": "convert", "arguments": {}}]
    assert (missing["tool_correctness.status"], missing["exact.status"]) == ("skipped", "skipped")
    assert report.scored == 3


def test_a_golden_file_with_bad_tool_calls_is_refused_naming_its_line(tmp_path: Path) -> None:
    golden = tmp_path / "golden.jsonl"
    golden.write_text(
        json.dumps({"input": "a", "expected_tool_calls": WARSAW})
        + "\n"
        + json.dumps({"input": "b", "expected_tool_calls": [{"arguments": {}}]})
        + "\n",
        encoding="utf-8",
    )
    with pytest.raises(tracesim.ConfigError, match=r"golden\.jsonl.*line 2.*expected_tool_calls\[0\]\.name"):
        Spans(str(tmp_path / "traces.jsonl"), golden=str(golden))
