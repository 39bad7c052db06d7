"""The weather agent the run tests share: a hand-written tool loop over the real ``openai`` client.

The model (the scripted server, `llm_server.LLMServer`) asks for ``lookup`` calls; the agent runs
them as ``@tracesim.trace(kind="tool")`` functions and answers when the model writes text.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import openai
from llm_server import LLMServer

import tracesim

LOOKUP: Any = {
    "type": "function",
    "function": {
        "name": "lookup",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
"""The ``lookup`` tool as the model is offered it."""

TEMPERATURES = {"Warsaw": "12 C", "Paris": "15 C"}


@tracesim.trace(kind="tool")
def lookup(city: str) -> str:
    """The agent's tool: a city's temperature, ``unknown`` for a city it does not know."""
    return TEMPERATURES.get(city, "unknown")


def weather_agent(
    server: LLMServer,
    *,
    rounds: int = 5,
    before: Callable[[str], object] | None = None,
    after_reply: Callable[[], object] | None = None,
    **trace_options: Any,
) -> Callable[[str], str]:
    """A traced agent named ``agent`` (``trace_options`` go to its ``@tracesim.trace``) calling
    `lookup`; ``before`` runs first in the call with the question,
    ``after_reply`` after each model reply."""

    @tracesim.trace(kind="agent", name="agent", **trace_options)
    def agent(question: str) -> str:
        if before is not None:
            before(question)
        messages: list[Any] = [{"role": "user", "content": question}]
        with openai.OpenAI(base_url=server.base_url, api_key="test", max_retries=0) as client:
            for _ in range(rounds):
                reply = client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=[LOOKUP])
                if after_reply is not None:
                    after_reply()
                message = reply.choices[0].message
                if not message.tool_calls:
                    return str(message.content)
                messages.append(message.model_dump(exclude_none=True))
                for call in message.tool_calls:
                    found = lookup(**json.loads(call.function.arguments))  # type: ignore[union-attr]
                    messages.append({"role": "tool", "tool_call_id": call.id, "content": found})
        return "gave up"

    return agent
