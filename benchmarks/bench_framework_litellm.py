"""What tracing costs one LiteLLM agent run: tracesim's LiteLLM integration against OpenInference's.

The agent is a hand-written tool loop over ``litellm.completion`` (LiteLLM's ``openai/`` route
to the scripted model server) with one tool, ``get_weather``: one run is two model calls and
one tool call (the harness, ``_frameworks.py``, plays the model). Variants, each in processes
of its own:

* ``bare``: the loop, untraced;
* ``tracesim``: ``tracesim.instrument_litellm()`` with content capture on, spans to an exporter
  that discards: the two model calls are spans, as with OpenInference;
* ``tracesim_agent_spans``: the same, with the loop and the tool also traced
  (``@tracesim.trace(kind="agent")`` / ``kind="tool"``), as tracesim's example does;
* ``openinference``: ``openinference-instrumentation-litellm`` on an SDK provider that discards
  in batches (`discard_provider`), as its users would set it up.

The harness sets ``LITELLM_LOCAL_MODEL_COST_MAP=True`` in every child (LiteLLM fetches its price
list at import otherwise); it is set here too, for a child started by hand.

    python benchmarks/bench_framework_litellm.py [--rounds 5] [--runs 40]
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from typing import Any

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from _frameworks import QUESTION, TOOL, configure_tracesim, discard_provider, run_benchmark

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": TOOL,
            "description": "Today's weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def get_weather(city: str) -> str:
    return f"sunny in {city}"


def _agent(url: str, decorate: Callable[[str], Callable[[Any], Any]] | None = None) -> Callable[[], object]:
    """One agent run: the tool loop until the model answers in text."""
    import litellm

    tool = decorate("tool")(get_weather) if decorate else get_weather

    def run() -> str:
        messages: list[Any] = [{"role": "user", "content": QUESTION}]
        while True:
            message = (
                litellm.completion(
                    model="openai/gpt-4o-mini",
                    api_base=url,
                    api_key="bench",
                    max_retries=0,
                    messages=messages,
                    tools=TOOLS,
                )
                .choices[0]
                .message
            )
            if not message.tool_calls:
                return str(message.content)
            messages.append(message)
            for call in message.tool_calls:
                result = tool(**json.loads(call.function.arguments))
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})

    return decorate("agent")(run) if decorate else run


def bare(url: str) -> Callable[[], object]:
    return _agent(url)


def with_tracesim(url: str) -> Callable[[], object]:
    import tracesim

    configure_tracesim()
    tracesim.instrument_litellm()
    return _agent(url)


def with_tracesim_agent_spans(url: str) -> Callable[[], object]:
    import tracesim

    configure_tracesim()
    tracesim.instrument_litellm()
    return _agent(url, lambda kind: tracesim.trace(kind=kind))


def with_openinference(url: str) -> Callable[[], object]:
    from openinference.instrumentation.litellm import LiteLLMInstrumentor

    LiteLLMInstrumentor().instrument(tracer_provider=discard_provider())
    return _agent(url)


if __name__ == "__main__":
    run_benchmark(
        __doc__,
        {
            "bare": bare,
            "tracesim": with_tracesim,
            "tracesim_agent_spans": with_tracesim_agent_spans,
            "openinference": with_openinference,
        },
    )
