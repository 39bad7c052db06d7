"""The example and the README snippet run as they are: the agent's model call is a span under its own."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from llm_server import LLMServer

from tracesim.tracefile import load_spans

EXAMPLE = Path(__file__).resolve().parents[1] / "example.py"
README = EXAMPLE.with_name("README.md")


def test_the_example_traces_the_model_call_under_its_agent(
    llm_server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    llm_server.judge = lambda request: "Warsaw."
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "test"}
    done = run_python(EXAMPLE.read_text(encoding="utf-8"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Warsaw."
    spans = {span.name: span for span in load_spans(tmp_path / ".tracesim" / "traces.jsonl")}
    assert spans["chat gpt-4o-mini"].parent_span_id == spans["answer"].span_id


def test_the_readme_snippets_run(run_python: Any, tmp_path: Path) -> None:
    snippets = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert snippets
    for snippet in snippets:
        done = run_python(snippet, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
