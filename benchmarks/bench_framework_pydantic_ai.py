"""What tracing costs one pydantic-ai agent run: tracesim's integration against OpenInference's.

The agent is a ``pydantic_ai.Agent`` on ``OpenAIChatModel`` (chat completions) on the scripted
model server, with one tool, ``get_weather``: one run is two model calls and one tool call (the
harness, ``_frameworks.py``, plays the model). Runs go through ``run_sync``, on the one event
loop pydantic-ai keeps for the thread, with one provider (one client), as an application's
would. Variants, each in processes of its own:

* ``bare``: pydantic-ai as installed, uninstrumented (its default);
* ``tracesim``: ``tracesim.instrument_pydantic_ai()`` (pydantic-ai's own OpenTelemetry output on
  tracesim's provider, message format 6, content following tracesim's capture) with content
  capture on, spans redacted and sent to an exporter that discards;
* ``openinference``: ``openinference-instrumentation-pydantic-ai`` as its README sets it up:
  pydantic-ai's own output turned on for every agent (``Agent.instrument_all``, its default
  settings, content included) on an SDK provider that discards in batches
  (`discard_provider`), with OpenInference's span processor on that provider rewriting each
  span's attributes into OpenInference's at its end.

    python benchmarks/bench_framework_pydantic_ai.py [--rounds 5] [--runs 40]
"""

from __future__ import annotations

from collections.abc import Callable

from _frameworks import QUESTION, configure_tracesim, discard_provider, run_benchmark


def _agent(url: str) -> Callable[[], object]:
    """One agent run: the question in, the run's final output out."""
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(base_url=url, api_key="bench"))
    agent = Agent(model, name="weather_agent", instructions="Answer in one sentence.")

    @agent.tool_plain
    def get_weather(city: str) -> str:
        """Today's weather in a city."""
        return f"sunny in {city}"

    def run() -> object:
        return agent.run_sync(QUESTION).output

    return run


def bare(url: str) -> Callable[[], object]:
    return _agent(url)


def with_tracesim(url: str) -> Callable[[], object]:
    import tracesim

    configure_tracesim()
    tracesim.instrument_pydantic_ai()
    return _agent(url)


def with_openinference(url: str) -> Callable[[], object]:
    from openinference.instrumentation.pydantic_ai import OpenInferenceSpanProcessor
    from pydantic_ai import Agent, InstrumentationSettings

    provider = discard_provider()
    # the README adds it before the exporting processor; here after it, to the provider the
    # harness builds: it rewrites the span in place at its end, before the batch is exported
    provider.add_span_processor(OpenInferenceSpanProcessor())
    Agent.instrument_all(InstrumentationSettings(tracer_provider=provider))
    return _agent(url)


if __name__ == "__main__":
    run_benchmark(__doc__, {"bare": bare, "tracesim": with_tracesim, "openinference": with_openinference})
