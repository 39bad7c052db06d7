"""tracesim-pydantic-ai's example: a pydantic-ai agent with a tool, its run traced under our own agent.

Needs ``pip install 'tracesim[pydantic_ai]' 'pydantic-ai-slim[openai]'`` and OPENAI_API_KEY
(OPENAI_BASE_URL for another endpoint). The trace goes to .tracesim/traces.jsonl;
``tracesim show`` prints it: the agent's run, each model request and the tool call.
"""

from pydantic_ai import Agent

import tracesim

tracesim.configure(service_name="pydantic-ai-example")
tracesim.instrument_pydantic_ai()  # or configure(instrument=["pydantic_ai"])

weather = Agent("openai:gpt-4o-mini", name="weather", instructions="Answer in one sentence.")


@weather.tool_plain
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"Sunny, 21 C in {city}"


@tracesim.trace(kind="agent")
def assistant(question: str) -> str:
    return weather.run_sync(question).output


if __name__ == "__main__":
    print(assistant("What is the weather in Paris?"))
    tracesim.shutdown()
