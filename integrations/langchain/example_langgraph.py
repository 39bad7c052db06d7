"""tracesim-langchain's LangGraph example: an agent's model calls and tool call as one scored run.

Needs ``pip install 'tracesim-langchain[langgraph]'`` and OPENAI_API_KEY (OPENAI_BASE_URL for
another endpoint). ``create_agent`` builds a LangGraph graph; the LangChain integration traces it
as ``invoke_agent weather_agent`` with its ``chat`` and ``execute_tool`` spans inside, and the
rule below scores the agent's tool calls by the agent's name. The trace goes to
.tracesim/traces.jsonl; ``tracesim show`` prints it, run and score included.
"""

from langchain.agents import create_agent
from langchain_core.tools import tool
from langchain_openai import ChatOpenAI

import tracesim

tracesim.configure(
    service_name="langgraph-example",
    evaluators=[
        {
            "match": "weather_agent",  # the agent's name (gen_ai.agent.name)
            "kind": "agent",
            "evaluators": ["tool_call_accuracy"],
            "expected": {"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}]},
        }
    ],
)
tracesim.instrument_langchain()  # or configure(instrument=["langchain"])


@tool
def get_weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny, 21 C in {city}"


agent = create_agent(model=ChatOpenAI(model="gpt-4o-mini"), tools=[get_weather], name="weather_agent")


@tracesim.trace(kind="agent")
def answer(question: str) -> str:
    state = agent.invoke({"messages": [{"role": "user", "content": question}]})
    return str(state["messages"][-1].content)


if __name__ == "__main__":
    print(answer("What is the weather in Paris?"))
    tracesim.shutdown()
