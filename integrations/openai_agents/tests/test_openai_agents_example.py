"""The example, the README snippet and the docstring examples run as they are."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path
from typing import Any

import pytest
from llm_formats import RESPONSES
from llm_server import LLMServer, Reply

from tracesim.tracefile import load_spans

pytest.importorskip("agents", reason="openai-agents (the 'openai_agents' extra) is not installed")

EXAMPLE = Path(__file__).resolve().parents[1] / "example.py"
README = EXAMPLE.with_name("README.md")
ANSWER = "It is sunny in Paris."


def test_the_example_traces_the_run_under_its_agent(
    llm_server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    llm_server.script(RESPONSES, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content(ANSWER))
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "test"}
    done = run_python(EXAMPLE.read_text(encoding="utf-8"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ANSWER
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    by_id = {span.span_id: span for span in spans}
    tool = next(span for span in spans if span.name == "execute_tool get_weather")
    ancestors = []
    while tool.parent_span_id is not None:
        tool = by_id[tool.parent_span_id]
        ancestors.append(tool.name)
    assert ancestors == ["invoke_agent weather_agent", "invoke_workflow Agent workflow", "answer"]
    assert [span.name for span in spans].count("chat gpt-4o-mini") == 2


def test_the_readme_snippets_run(run_python: Any, tmp_path: Path) -> None:
    snippets = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert snippets
    for snippet in snippets:
        done = run_python(snippet, cwd=tmp_path)
        assert done.returncode == 0, done.stderr


@pytest.mark.parametrize("module", ["tracesim_openai_agents", "tracesim_openai_agents._processor"])
def test_the_docstring_examples_run(module: str) -> None:
    outcome = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0, f"{module} has no example"
    assert outcome.failed == 0
