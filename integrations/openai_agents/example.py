"""tracesim-openai-agents' example: an OpenAI Agents SDK agent with a tool, its run traced.

Needs ``pip install 'tracesim[openai_agents]'`` and OPENAI_API_KEY (OPENAI_BASE_URL for another
endpoint). The run goes to .tracesim/traces.jsonl, and nowhere else: tracesim replaces the
SDK's exporter to OpenAI's servers. ``tracesim show`` prints it: the agent, its two model calls
with their tokens, the tool call with its arguments and result.
"""

from agents import Agent, Runner, function_tool

import tracesim

tracesim.configure(service_name="openai-agents-example")
tracesim.instrument_openai_agents()  # or configure(instrument=["openai_agents"])


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"Sunny in {city}"


agent = Agent(
    name="weather_agent",
    instructions="Answer in one sentence.",
    tools=[get_weather],
    model="gpt-4o-mini",
)


@tracesim.trace(kind="agent")
def answer(question: str) -> str:
    return str(Runner.run_sync(agent, question).final_output)


if __name__ == "__main__":
    print(answer("What is the weather in Paris?"))
    tracesim.shutdown()
