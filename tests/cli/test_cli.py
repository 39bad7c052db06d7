"""The ``tracesim`` command: demo and show, run as a user runs them."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tracesim import _demo_agent
from tracesim.cli import main
from tracesim.tracefile import load_spans


def _tracesim(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tracesim", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_demo_writes_every_call_with_input_output_and_the_right_tree(tmp_path: Path) -> None:
    result = _tracesim("demo", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    path = tmp_path / ".tracesim" / "traces.jsonl"
    assert f"written to {path}" in result.stdout
    spans = load_spans(path)
    roots = [s for s in spans if s.parent_span_id is None]
    assert [r.attributes["input.value"] for r in sorted(roots, key=lambda s: s.start_time_unix_nano)] == list(
        _demo_agent.QUESTIONS
    )
    by_id = {s.span_id: s for s in spans}
    for span in spans:
        assert "input.value" in span.attributes, span.name
        assert "output.value" in span.attributes, span.name
        assert span.resource["service.name"] == "tracesim-demo"
        if span.parent_span_id is not None:
            parent = by_id[span.parent_span_id]
            assert parent.name == "answer"
            assert parent.trace_id == span.trace_id
    for root in roots:
        children = sorted(
            (s for s in spans if s.parent_span_id == root.span_id), key=lambda s: s.start_time_unix_nano
        )
        names = [c.name for c in children]
        assert names in (["plan", "retrieve", "generate"], ["calculator"]), names
        assert root.attributes["openinference.span.kind"] == "AGENT"
        # scored online against the golden file, results on the agent span itself
        events = root.event("gen_ai.evaluation.result")
        results = {e.attributes["gen_ai.evaluation.name"]: e.attributes for e in events}
        assert set(results) == {"levenshtein", "rouge", "f1", "trajectory_match"}
        question = root.attributes["input.value"]
        if question in _demo_agent.GOLDEN:  # its run too: the calculator for arithmetic, else no tool
            assert root.attributes["tracesim.eval.trajectory_match.score"] == 1.0
            assert root.attributes["tracesim.expected.value"] == _demo_agent.GOLDEN[question]
            assert all(r["tracesim.evaluation.status"] == "ok" for r in results.values())
        else:
            assert all(r["tracesim.evaluation.status"] == "skipped" for r in results.values())
    curie = next(r for r in roots if r.attributes["input.value"] == "Where was Marie Curie born?")
    assert curie.attributes["tracesim.eval.rouge.passed"] is True
    lovelace = next(
        r for r in roots if r.attributes["input.value"] == "Who wrote the first published algorithm?"
    )
    assert lovelace.attributes["tracesim.eval.levenshtein.passed"] is False
    assert (tmp_path / ".tracesim" / "demo-golden.jsonl").is_file()
    calculator = next(s for s in spans if s.name == "calculator" and s.attributes["input.value"] == "17 * 23")
    assert calculator.attributes["output.value"] == "391.0"
    assert "answer  AGENT" in result.stdout


def test_show_prints_the_trees_of_a_file(tmp_path: Path) -> None:
    assert _tracesim("demo", "--quiet", cwd=tmp_path).returncode == 0
    result = _tracesim("show", ".tracesim/traces.jsonl", "--last", "1", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    last = max(load_spans(tmp_path / ".tracesim" / "traces.jsonl"), key=lambda s: s.start_time_unix_nano)
    assert re.fullmatch(rf"trace {last.trace_id}  \d{{4}}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{{3}}Z", lines[0])
    assert lines[1].startswith("answer  AGENT  ")
    assert lines[2] == "│  in: What is (1903 - 1867) / 4?"
    assert lines[3] == "│  out: 9"
    assert lines[4] == "│  expected: 9"
    scores = "✓ f1 1 pass  ✓ levenshtein 1 pass  ✓ rouge 1 pass  ✓ trajectory_match 1 pass"  # by name
    assert lines[5] == f"│  scores: {scores}"
    assert lines[6].startswith("└─ calculator  TOOL  ")
    n = len(_demo_agent.QUESTIONS)
    assert lines[-2:] == [
        "",
        f"showing 1 of {n} traces (filters: --last 1; {n - 1} earlier matching traces left out)",
    ]
    brief = _tracesim("show", "--no-details", cwd=tmp_path)
    assert brief.stdout.count("answer  AGENT") == n
    assert brief.stdout.count("\ntrace ") == n - 1  # the first one starts the output
    assert "in:" not in brief.stdout
    assert brief.stdout.endswith(f"\nshowing {n} of {n} traces\n")


def test_show_reports_a_missing_file_and_a_torn_line(tmp_path: Path) -> None:
    missing = _tracesim("show", "nope.jsonl", cwd=tmp_path)
    assert missing.returncode == 2
    assert "no such file: nope.jsonl" in missing.stderr
    assert _tracesim("demo", "--quiet", cwd=tmp_path).returncode == 0
    with open(tmp_path / ".tracesim" / "traces.jsonl", "a") as f:
        f.write('{"resourceSpans": [')
    torn = _tracesim("show", "--no-details", cwd=tmp_path)
    assert torn.returncode == 0
    assert "torn last line" in torn.stderr
    assert torn.stdout.count("answer  AGENT") == len(_demo_agent.QUESTIONS)


def test_the_command_lists_its_subcommands(tmp_path: Path) -> None:
    result = _tracesim("--help", cwd=tmp_path)
    assert result.returncode == 0
    for command in ("demo", "show"):
        assert command in result.stdout


def test_without_file_names_the_commands_read_the_configured_file_or_say_where_spans_go(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import tracesim

    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
    for command in (["show"], ["report"], ["replay", "--endpoint", "http://127.0.0.1:9"]):
        assert main(command) == 2
        said = capsys.readouterr().err
        assert "no such file: .tracesim/traces.jsonl" in said, command
        assert "writes no trace file (exporters: otlp)" in said, command
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT")

    monkeypatch.setenv("TRACESIM_JSONL_PATH", "elsewhere/spans.jsonl")
    tracesim.configure()
    with tracesim.span("answer", input="q") as span:
        span.set_output("a")
    tracesim.shutdown()
    assert main(["show"]) == 0
    assert "answer" in capsys.readouterr().out
    assert main(["report"]) == 0
    assert "1 span" in capsys.readouterr().out
