"""What tracing costs one OpenAI Agents SDK run: tracesim's integration against OpenInference's.

The agent is an ``agents.Agent`` on the SDK's default model class, ``OpenAIResponsesModel``
(the Responses API), on the scripted model server, with one tool, ``get_weather``: one run is
two model calls and one tool call (the harness, ``_frameworks.py``, plays the model). Runs
share one event loop and one client, as an application's would. Variants, each in processes
of its own:

* ``bare``: the SDK as installed, untraced by anyone else; its own default processor is in
  place and, with no ``OPENAI_API_KEY`` (the harness clears it), batches the runs and skips
  the export to OpenAI's servers;
* ``tracesim``: ``tracesim.instrument_openai_agents()`` (the OpenTelemetry project's processor
  extended by tracesim, replacing the SDK's; the model calls traced by tracesim's openai
  integration) with content capture on, spans to an exporter that discards;
* ``openinference``: ``openinference-instrumentation-openai-agents`` on an SDK provider that
  discards in batches (`discard_provider`), as its users would set it up. Its default
  ``exclusive_processor=True`` replaces the SDK's processor too; its spans include an LLM span
  per model call, made from the SDK's own record.

    python benchmarks/bench_framework_openai_agents.py [--rounds 5] [--runs 40]
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from _frameworks import QUESTION, configure_tracesim, discard_provider, run_benchmark


def _agent(url: str) -> Callable[[], object]:
    """One agent run: the question in, the run's final output out."""
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool
    from openai import AsyncOpenAI

    @function_tool
    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    client = AsyncOpenAI(base_url=url, api_key="bench", max_retries=0)
    model = OpenAIResponsesModel(model="gpt-4o-mini", openai_client=client)
    agent = Agent(
        name="weather_agent", instructions="Answer in one sentence.", tools=[get_weather], model=model
    )
    loop = asyncio.new_event_loop()  # one loop for every run: the client's connections live on it

    def run() -> object:
        return loop.run_until_complete(Runner.run(agent, QUESTION)).final_output

    return run


def bare(url: str) -> Callable[[], object]:
    return _agent(url)


def with_tracesim(url: str) -> Callable[[], object]:
    import tracesim

    configure_tracesim()
    tracesim.instrument_openai_agents()
    return _agent(url)


def with_openinference(url: str) -> Callable[[], object]:
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    OpenAIAgentsInstrumentor().instrument(tracer_provider=discard_provider())
    return _agent(url)


if __name__ == "__main__":
    run_benchmark(__doc__, {"bare": bare, "tracesim": with_tracesim, "openinference": with_openinference})
