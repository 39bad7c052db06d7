"""The example and the README snippet run as they are: the MCP tool call is a tool span of the agent's run."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from llm_server import CHAT, LLMServer, Reply

from tracesim.tracefile import load_spans

EXAMPLE = Path(__file__).resolve().parents[1] / "example.py"
README = EXAMPLE.with_name("README.md")


def test_the_example_traces_the_mcp_tool_call_between_its_model_calls(
    llm_server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    llm_server.script(
        CHAT, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content("Sunny in Paris.")
    )
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "test"}
    code = f"import runpy\nrunpy.run_path({str(EXAMPLE)!r}, run_name='__main__')\n"
    done = run_python(code, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Sunny in Paris."
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    (agent,) = [span for span in spans if span.name == "weather_agent"]
    children = sorted(
        (s for s in spans if s.parent_span_id == agent.span_id), key=lambda s: s.start_time_unix_nano
    )
    assert [s.name for s in children] == ["chat gpt-4o-mini", "execute_tool get_weather", "chat gpt-4o-mini"]
    tool = children[1]
    assert json.loads(tool.attributes["gen_ai.tool.call.arguments"]) == {"city": "Paris"}
    assert tool.attributes["gen_ai.tool.call.result"] == "Sunny in Paris."
    assert tool.attributes["network.transport"] == "pipe"


def test_the_readme_snippets_run(run_python: Any, tmp_path: Path) -> None:
    snippets = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert snippets
    for snippet in snippets:
        done = run_python(snippet, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
