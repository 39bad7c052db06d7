"""Guards: nothing of a run leaves for OpenAI's servers, and suppression silences the integration.

The Agents SDK sends every run to OpenAI's tracing service when ``OPENAI_API_KEY`` is set, from
its default processor; tracesim replaces it. These tests run the SDK with a key set, in a fresh
interpreter whose sockets refuse (and record) any address that is not this machine's, against
the scripted model server (tests/llm_server.py). The suppression guard is the one every GenAI
integration has (``suppression`` comes from integrations/conftest.py).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from llm_formats import RESPONSES
from llm_server import LLMServer, Reply

import tracesim
from tracesim.testing import capture_spans

pytest.importorskip("agents", reason="openai-agents (the 'openai_agents' extra) is not installed")

ANSWER = "It is sunny in Paris."

# Refuses, and records, every DNS lookup or connection to an address not on this machine.
NET_GUARD = """
import atexit, socket
ATTEMPTS = []
_connect, _connect_ex, _getaddrinfo = socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo

def _remote(host):
    return isinstance(host, str) and not (host.startswith("127.") or host in ("::1", "localhost"))

def _checked(address):
    host = address[0] if isinstance(address, tuple) else address
    if _remote(host):
        ATTEMPTS.append(str(host))
        raise OSError(f"no network in this test: {host}")

def connect(self, address):
    _checked(address)
    return _connect(self, address)

def connect_ex(self, address):
    _checked(address)
    return _connect_ex(self, address)

def getaddrinfo(host, *args, **kwargs):
    _checked((host,))
    return _getaddrinfo(host, *args, **kwargs)

socket.socket.connect, socket.socket.connect_ex, socket.getaddrinfo = connect, connect_ex, getaddrinfo
atexit.register(lambda: print("at exit:", ATTEMPTS))  # registered first: runs after the SDK's own
"""

RUN = """
import tracesim
from agents import Agent, Runner, function_tool
from agents.tracing import get_trace_provider

tracesim.configure(exporters=["jsonl"])
{setup}

@function_tool
def get_weather(city: str) -> str:
    '''The weather in a city.'''
    return f"Sunny in {{city}}"

agent = Agent(name="weather_agent", instructions="Answer.", tools=[get_weather], model="gpt-4o-mini")
print(Runner.run_sync(agent, "What is the weather in Paris?").final_output)
print("after the run:", ATTEMPTS)
get_trace_provider().force_flush()
print("after flush:", ATTEMPTS)
get_trace_provider().shutdown()
tracesim.shutdown()
print("after shutdown:", ATTEMPTS)
"""


@pytest.fixture(scope="module")
def server() -> Iterator[LLMServer]:
    with LLMServer(model="gpt-4o-mini") as running:
        yield running
    assert not running.errors, running.errors


@pytest.fixture(autouse=True)
def _reset(server: LLMServer) -> Iterator[None]:
    server.reset()
    yield
    tracesim.uninstrument_openai_agents()
    tracesim.uninstrument_openai()


def script_run(server: LLMServer) -> None:
    """The model's two answers of one run: call ``get_weather``, then say `ANSWER`."""
    server.script(RESPONSES, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content(ANSWER))


def _run_with_a_key(server: LLMServer, run_python: Any, tmp_path: Path, setup: str) -> list[str]:
    """The script's output lines: the SDK's default model, ``OPENAI_API_KEY`` set, sockets guarded."""
    script_run(server)
    env = {"OPENAI_API_KEY": "sk-test-key-for-the-scripted-server", "OPENAI_BASE_URL": server.base_url}
    done = run_python(NET_GUARD + RUN.format(setup=setup), cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert server.count(RESPONSES) == 2  # the run really went to the scripted server
    return done.stdout.splitlines()


def test_with_an_api_key_set_nothing_tries_to_reach_openai(
    server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    lines = _run_with_a_key(server, run_python, tmp_path, "tracesim.instrument_openai_agents()")
    assert lines == [
        ANSWER,
        "after the run: []",
        "after flush: []",
        "after shutdown: []",
        "at exit: []",
    ]
    names = [json.loads(line)["name"] for line in _span_lines(tmp_path)]
    assert "invoke_agent weather_agent" in names  # traced, through tracesim only


def test_the_guard_sees_the_sdks_own_exporter_when_tracesims_processor_is_not_installed(
    server: LLMServer, run_python: Any, tmp_path: Path
) -> None:
    """The check above can fail: without tracesim's processor, the SDK's exporter (retries off,
    to keep the test short) tries OpenAI's servers as soon as it flushes."""
    setup = (
        "from agents.tracing.processors import default_exporter\n"
        "default_exporter().max_retries = 0\n"
        "tracesim.instrument_openai()\n"
    )
    lines = _run_with_a_key(server, run_python, tmp_path, setup)
    assert lines[:2] == [ANSWER, "after the run: []"]
    assert "api.openai.com" in lines[2]


def _span_lines(tmp_path: Path) -> list[str]:
    """The spans in the trace file, one JSON object per span."""
    lines = []
    for request in (tmp_path / ".tracesim" / "traces.jsonl").read_text(encoding="utf-8").splitlines():
        for resource in json.loads(request)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                lines += [json.dumps(span) for span in scope["spans"]]
    return lines


def test_a_run_under_suppression_is_no_span(server: LLMServer, suppression: Callable[[], Any]) -> None:
    """Guard: OpenTelemetry's suppression key silences the agent, tool and model-call spans."""
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool
    from openai import AsyncOpenAI

    @function_tool
    def get_weather(city: str) -> str:
        """The weather in a city."""
        return f"Sunny in {city}"

    async def run() -> str:
        async with AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
            agent = Agent(name="weather_agent", instructions="Answer.", tools=[get_weather], model=model)
            return str((await Runner.run(agent, "Weather in Paris?")).final_output)

    tracesim.instrument_openai_agents()
    with capture_spans() as captured:
        with suppression():
            server.script(
                RESPONSES, Reply.tool_call("get_weather", '{"city": "Paris"}'), Reply.content(ANSWER)
            )
            assert asyncio.run(run()) == ANSWER
        assert not captured.spans
        script_run(server)
        assert asyncio.run(run()) == ANSWER
        assert captured.spans  # the same run, unsuppressed, is traced: the check is what silenced it
    assert server.count() == 4
