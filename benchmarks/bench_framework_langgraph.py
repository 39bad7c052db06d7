"""What tracing costs one LangGraph agent run: tracesim's LangChain integration against OpenInference's.

The agent is ``langchain.agents.create_agent`` (a LangGraph graph) with ``ChatOpenAI`` on the
scripted model server and one tool, ``get_weather``: one run is two model calls and one tool
call (the harness, ``_frameworks.py``, plays the model). Variants, each in processes of its own:

* ``bare``: the agent, untraced;
* ``tracesim``: ``tracesim.instrument_langchain()`` (OpenTelemetry's LangChain instrumentation
  on tracesim's provider) with content capture on, spans to an exporter that discards;
* ``openinference``: ``openinference-instrumentation-langchain`` on an SDK provider that
  discards in batches (`discard_provider`), as its users would set it up.

    python benchmarks/bench_framework_langgraph.py [--rounds 5] [--runs 40]
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from _frameworks import QUESTION, configure_tracesim, discard_provider, run_benchmark


def _agent(url: str) -> Callable[[], object]:
    """One agent run: the question in, the agent's state out."""
    from langchain.agents import create_agent
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from pydantic import SecretStr

    @tool
    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    model = ChatOpenAI(model="gpt-4o-mini", base_url=url, api_key=SecretStr("bench"), max_retries=0)
    agent: Any = create_agent(model=model, tools=[get_weather], name="weather_agent")
    message = {"messages": [{"role": "user", "content": QUESTION}]}
    return lambda: agent.invoke(message)


def bare(url: str) -> Callable[[], object]:
    return _agent(url)


def with_tracesim(url: str) -> Callable[[], object]:
    import tracesim

    configure_tracesim()
    tracesim.instrument_langchain()
    return _agent(url)


def with_openinference(url: str) -> Callable[[], object]:
    from openinference.instrumentation.langchain import LangChainInstrumentor

    LangChainInstrumentor().instrument(tracer_provider=discard_provider())
    return _agent(url)


if __name__ == "__main__":
    run_benchmark(__doc__, {"bare": bare, "tracesim": with_tracesim, "openinference": with_openinference})
