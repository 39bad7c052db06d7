"""tracesim-litellm's example: an agent that answers with a tool, its LiteLLM calls as spans.

Needs ``pip install 'tracesim[litellm]'`` and OPENAI_API_KEY (OPENAI_BASE_URL for another
endpoint; any model LiteLLM routes works the same, e.g. ``anthropic/claude-3-5-haiku-latest``
with ANTHROPIC_API_KEY). The trace goes to .tracesim/traces.jsonl; ``tracesim show`` prints it.
"""

import json
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # LiteLLM's own price list, offline

import tracesim

tracesim.configure(service_name="litellm-example")
tracesim.instrument_litellm()  # or configure(instrument=["litellm"]); before `from litellm import ...`

import litellm  # noqa: E402

MODEL = os.environ.get("EXAMPLE_MODEL", "openai/gpt-4o-mini")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


@tracesim.trace(kind="tool")
def get_weather(city: str) -> str:
    return f"Sunny, 21 C in {city}."


@tracesim.trace(kind="agent")
def weather_agent(question: str) -> str:
    messages: list = [{"role": "user", "content": question}]
    for _ in range(5):
        message = (
            litellm.completion(
                model=MODEL, messages=messages, tools=TOOLS, api_base=os.environ.get("OPENAI_BASE_URL")
            )
            .choices[0]
            .message
        )
        if not message.tool_calls:
            return str(message.content)
        messages.append(message)
        for call in message.tool_calls:
            result = get_weather(**json.loads(call.function.arguments))
            messages.append({"role": "tool", "tool_call_id": call.id, "content": result})
    return "No answer after five steps."


if __name__ == "__main__":
    print(weather_agent("What is the weather in Paris?"))
    tracesim.shutdown()
