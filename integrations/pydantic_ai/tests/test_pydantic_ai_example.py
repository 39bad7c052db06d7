"""The example and the README snippet run as they are: the agent's run nests in our agent, with its tool."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from llm_server import LLMServer, Reply

from tracesim.tracefile import load_spans

pytest.importorskip("pydantic_ai", reason="pydantic-ai (the 'pydantic_ai' extra) needs Python 3.11 or later")
pytest.importorskip("openai", reason="pydantic-ai-slim[openai] (the 'test' extra) is missing")

EXAMPLE = Path(__file__).resolve().parents[1] / "example.py"
README = EXAMPLE.with_name("README.md")
RESPONSES = "/v1/responses"
# Run before the example: any connection or name lookup beyond this machine is refused, and
# listed on stderr at exit (a library may swallow the error).
LOCAL_ONLY = """
import atexit, socket, sys
_refused = []
_LOCAL = ("127.0.0.1", "::1", "localhost")
_connect, _getaddrinfo = socket.socket.connect, socket.getaddrinfo
def _check(host):
    if host not in _LOCAL:
        _refused.append(host)
        raise OSError(f"not on this machine: {host}")
def connect(self, address):
    if isinstance(address, tuple):
        _check(address[0])
    return _connect(self, address)
def getaddrinfo(host, *args, **kwargs):
    _check(host)
    return _getaddrinfo(host, *args, **kwargs)
socket.socket.connect, socket.getaddrinfo = connect, getaddrinfo
atexit.register(lambda: _refused and print("REFUSED", _refused, file=sys.stderr))
"""


def test_the_example_traces_the_run_its_model_requests_and_tool_under_its_agent(
    llm_server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    # "openai:<model>" is OpenAI's Responses API in pydantic-ai 2
    llm_server.script(
        RESPONSES,
        Reply.tool_call("get_weather", '{"city": "Paris"}'),
        Reply.content("Sunny and 21 C in Paris."),
    )
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "test"}
    done = run_python(LOCAL_ONLY + EXAMPLE.read_text(encoding="utf-8"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "REFUSED" not in done.stderr  # with OPENAI_API_KEY set, nothing went beyond this machine
    assert done.stdout.strip() == "Sunny and 21 C in Paris."
    assert llm_server.count(RESPONSES) == 2  # both requests came here, none went to api.openai.com
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    by_id = {span.span_id: span for span in spans}
    tool = next(span for span in spans if span.name == "execute_tool get_weather")
    assert tool.attributes["gen_ai.tool.call.result"] == "Sunny, 21 C in Paris"
    ancestors = []
    while tool.parent_span_id is not None:
        tool = by_id[tool.parent_span_id]
        ancestors.append(tool.name)
    assert ancestors == ["invoke_agent weather", "assistant"]
    assert [span.name for span in spans].count("chat gpt-4o-mini") == 2


def test_the_readme_snippets_run(run_python: Any, tmp_path: Path) -> None:
    snippets = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert snippets
    for snippet in snippets:
        done = run_python(snippet, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
