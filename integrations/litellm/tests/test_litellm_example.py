"""The example and the README snippet run as they are, offline: the agent's steps nest under it."""

from __future__ import annotations

import doctest
import importlib
import re
from pathlib import Path
from typing import Any

import pytest
from llm_server import CHAT, LLMServer, Reply

from tracesim.tracefile import load_spans

EXAMPLE = Path(__file__).resolve().parents[1] / "example.py"
README = EXAMPLE.with_name("README.md")

# Prepended to the program: any lookup of a host that is not this machine fails and is counted.
# The example sets OPENAI_API_KEY's provider up; nothing may go to the provider's servers.
NO_NETWORK = """\
import atexit, socket, sys
_lookups = []
_getaddrinfo = socket.getaddrinfo
def _local_only(host, *args, **kwargs):
    if host not in ("127.0.0.1", "localhost", "::1", None):
        _lookups.append(host)
        raise OSError(f"no network in this test: {host}")
    return _getaddrinfo(host, *args, **kwargs)
socket.getaddrinfo = _local_only
atexit.register(lambda: print("lookups:", sorted(set(_lookups)), file=sys.stderr))
"""


def test_the_example_traces_the_tool_loop_under_its_agent_without_the_network(
    llm_server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    llm_server.script(CHAT, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content("Sunny."))
    env = {"OPENAI_BASE_URL": llm_server.base_url, "OPENAI_API_KEY": "test"}
    done = run_python(NO_NETWORK + EXAMPLE.read_text(encoding="utf-8"), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Sunny."
    assert "lookups: []" in done.stderr
    spans = load_spans(tmp_path / ".tracesim" / "traces.jsonl")
    agent = next(span for span in spans if span.name == "weather_agent")
    children = [span.name for span in spans if span.parent_span_id == agent.span_id]
    assert sorted(children) == ["chat gpt-4o-mini", "chat gpt-4o-mini", "get_weather"]
    assert llm_server.count(CHAT) == 2


def test_the_readme_snippets_run(run_python: Any, tmp_path: Path) -> None:
    snippets = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.DOTALL)
    assert snippets
    for snippet in snippets:
        done = run_python(NO_NETWORK + snippet, cwd=tmp_path, env={"LITELLM_LOCAL_MODEL_COST_MAP": "True"})
        assert done.returncode == 0, done.stderr
        assert "lookups: []" in done.stderr


@pytest.mark.parametrize("module", ["tracesim_litellm", "tracesim_litellm._instrumentor"])
def test_the_docstring_examples_run(module: str) -> None:
    outcome = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0, f"{module} has no example"
    assert outcome.failed == 0
