"""The README and examples say what the code does."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tracesim._config import SETTINGS
from tracesim.exporters import load_spans

REPO = Path(__file__).resolve().parents[1]


def test_the_readme_configuration_table_lists_every_setting_and_variable() -> None:
    readme = (REPO / "README.md").read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(\w+)` \|.*$", readme, re.MULTILINE)}
    for setting in SETTINGS:
        assert setting.name in rows, f"README lacks a row for {setting.name}"
        for variable in setting.env:
            assert f"`{variable}`" in rows[setting.name], f"README row {setting.name} lacks {variable}"


def test_the_readme_names_the_two_commands_and_ci_runs_the_test_one() -> None:
    readme = (REPO / "README.md").read_text()
    assert "make demo" in readme
    assert "make test" in readme
    assert "make test" in (REPO / ".ci" / "run").read_text()


def test_the_quickstart_example_runs_and_writes_the_tree(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "quickstart.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "Warsaw, in Poland"
    spans = {s.name: s for s in load_spans(tmp_path / ".tracesim" / "traces.jsonl")}
    assert spans["retrieve"].parent_span_id == spans["answer"].span_id
    assert spans["lookup"].parent_span_id == spans["answer"].span_id
    assert spans["answer"].resource["service.name"] == "support-bot"


def test_the_online_scoring_example_scores_against_its_golden_file(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "online_scoring" / "agent.py")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    spans = {s.attributes["input.value"]: s for s in load_spans(tmp_path / ".tracesim" / "traces.jsonl")}
    curie = spans["Where was Marie Curie born?"].attributes
    assert curie["tracesim.eval.levenshtein.score"] == 0.79
    assert curie["tracesim.eval.levenshtein.passed"] is False
    assert curie["tracesim.eval.rouge.passed"] is True
    assert curie["tracesim.expected.value"] == "Marie Curie was born in Warsaw."
    everest = spans["How high is Mount Everest?"].attributes
    assert everest["tracesim.eval.rouge.status"] == "skipped"


def test_the_readme_catalogue_examples_are_real() -> None:
    from tracesim.evaluators import from_config

    readme = (REPO / "README.md").read_text()
    output, expected = "Marie Curie was born in Warsaw in 1867.", "Marie Curie was born in Warsaw."
    rows = re.findall(r"^\| `(\w+)` \| `\w+` \|.*\| ([0-9.]+)(?: \((\w+)[^)]*\))? \|$", readme, re.MULTILINE)
    assert len(rows) == 11
    for type_name, score, label in rows:
        result = from_config({"type": type_name}).evaluate(output, expected)
        assert result.score is not None
        assert round(result.score, 4) == float(score), type_name
        assert (result.label or "") == label, type_name


def test_the_llm_judge_example_traces_its_model_calls_and_judges_online(tmp_path: Path) -> None:
    pytest.importorskip(
        "opentelemetry.instrumentation.genai.openai",
        reason="the 'openai' extra (opentelemetry-instrumentation-genai-openai) is not installed",
    )
    from llm_server import LLMServer

    with LLMServer() as server:
        server.judge = lambda request: (
            '{"reason": "Same facts.", "score": 5}'
            if "<rubric>" in json.dumps(request)
            else "Warsaw, Poland."
        )
        env = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "example"}
        result = subprocess.run(
            [sys.executable, str(REPO / "examples" / "llm_judge" / "agent.py")],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert result.returncode == 0, result.stderr
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    agents = [s for s in spans if s.name == "answer"]
    llm_calls = [s for s in spans if s.name == "chat gpt-4o-mini"]
    assert len(agents) == 2
    assert len(llm_calls) == 2  # the agent's calls; the judge's own calls are not spans
    assert {s.parent_span_id for s in llm_calls} == {s.span_id for s in agents}
    for agent in agents:
        assert agent.attributes["tracesim.eval.llm_similarity.score"] == 5.0
        assert agent.attributes["session.id"] == "demo-session"
