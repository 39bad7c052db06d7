"""The examples and the README snippets run as they are: the model call nests in the chain, in the
agent; LangGraph's agent is a run whose tool calls a rule scores."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from llm_server import CHAT, LLMServer, Reply

from tracesim.tracefile import load_spans

EXAMPLE = Path(__file__).resolve().parents[1] / "example.py"
README = EXAMPLE.with_name("README.md")
LANGGRAPH_EXAMPLE = EXAMPLE.with_name("example_langgraph.py")


def test_the_example_traces_the_model_call_under_its_agent(
    llm_server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    llm_server.judge = lambda request: "Warsaw."
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "test"}
    done = run_python(EXAMPLE.read_text(encoding="utf-8"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Warsaw."
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    by_id = {span.span_id: span for span in spans}
    chat = next(span for span in spans if span.name == "chat gpt-4o-mini")
    ancestors = []
    while chat.parent_span_id is not None:
        chat = by_id[chat.parent_span_id]
        ancestors.append(chat.name.split()[0])
    assert ancestors == ["invoke_workflow", "answer"]  # the chain's span, under the agent's


def test_the_readme_snippets_run(run_python: Any, tmp_path: Path) -> None:
    snippets = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert snippets
    for snippet in snippets:
        done = run_python(snippet, cwd=tmp_path)
        assert done.returncode == 0, done.stderr


def _weather_model(path: str, body: dict[str, Any]) -> Reply | None:
    """A model asking for ``get_weather`` until the request carries the tool's result."""
    if path != CHAT:
        return None
    if any(message.get("role") == "tool" for message in body["messages"]):
        return Reply.content("It is sunny in Paris.")
    return Reply.tool_call("get_weather", '{"city": "Paris"}')


def test_the_langgraph_example_is_a_run_its_rule_scores(
    llm_server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    pytest.importorskip("langchain.agents", reason="langchain (the 'langgraph' extra) is missing")
    llm_server.policy = _weather_model
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "test"}
    done = run_python(LANGGRAPH_EXAMPLE.read_text(encoding="utf-8"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "It is sunny in Paris."
    assert llm_server.count(CHAT) == 2
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    by_name = {span.name: span for span in spans}
    agent = by_name["invoke_agent weather_agent"]
    assert agent.parent_span_id == by_name["answer"].span_id
    assert by_name["execute_tool get_weather"].parent_span_id == agent.span_id
    assert agent.attributes["tracesim.eval.tool_call_accuracy.score"] == 1.0
