"""configure(instrument=[...]) and TRACESIM_INSTRUMENT turn integrations on by name."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from llm_server import LLMServer
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import tracesim
from tracesim._config import INTEGRATIONS
from tracesim.integrations._registry import INSTRUMENTORS

for _module in (
    "opentelemetry.instrumentation.genai.openai",
    "opentelemetry.instrumentation.genai.anthropic",
    "opentelemetry.instrumentation.genai.langchain",
):
    pytest.importorskip(_module, reason="the 'openai', 'anthropic' and 'langchain' extras are needed here")
pytest.importorskip("anthropic", reason="the 'anthropic' extra is not installed")
import anthropic  # noqa: E402  (after the skips above)

ALL = ["openai", "anthropic", "langchain"]
FRAMEWORKS = ["pydantic_ai", "openai_agents", "litellm", "mcp"]


@pytest.fixture(autouse=True)
def _uninstrumented() -> Iterator[None]:
    yield
    tracesim.uninstrument_openai()
    tracesim.uninstrument_anthropic()
    tracesim.uninstrument_langchain()
    tracesim.uninstrument_pydantic_ai()
    tracesim.uninstrument_openai_agents()
    tracesim.uninstrument_litellm()
    tracesim.uninstrument_mcp()


def test_the_setting_accepts_exactly_the_integrations_there_are() -> None:
    assert tuple(INSTRUMENTORS) == INTEGRATIONS == (*ALL, *FRAMEWORKS)


def test_the_frameworks_are_turned_on_by_their_names_as_written_either_way(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("pydantic_ai", reason="pydantic-ai (the pydantic_ai extra) needs Python 3.11+")
    # as the instrument= entries, or as pip writes the extras (pydantic-ai), in any case
    monkeypatch.setenv("TRACESIM_INSTRUMENT", "pydantic-ai, OpenAI_Agents,litellm,MCP")
    tracesim.configure(exporters=[InMemorySpanExporter()], batch_export=False)
    assert [INSTRUMENTORS[name]() for name in FRAMEWORKS] == [False, False, False, False]  # all on already


@pytest.mark.parametrize("source", ["argument", "environment"])
def test_configure_turns_on_every_named_integration(
    source: str, llm_server: LLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory = InMemorySpanExporter()
    if source == "environment":
        monkeypatch.setenv("TRACESIM_INSTRUMENT", " OpenAI, anthropic,langchain ")
        tracesim.configure(exporters=[memory], batch_export=False)
    else:
        tracesim.configure(exporters=[memory], batch_export=False, instrument=ALL)

    assert [INSTRUMENTORS[name]() for name in ALL] == [False, False, False]  # all on already
    with anthropic.Anthropic(
        base_url=llm_server.root_url, api_key="test", max_retries=0, open_telemetry=False
    ) as client:
        client.messages.create(model="claude-x", max_tokens=8, messages=[{"role": "user", "content": "hi"}])
    assert [span.name for span in memory.get_finished_spans()] == ["chat claude-x"]


def test_an_unknown_integration_is_refused_with_the_accepted_names() -> None:
    with pytest.raises(tracesim.ConfigError, match="anthropic") as caught:
        tracesim.configure(exporters=["console"], instrument=["openai", "llamaindex"])
    assert caught.value.setting == "instrument"
