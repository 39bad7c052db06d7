"""tracesim-anthropic's example: an agent whose Claude call is a span under the agent's own.

Needs ``pip install 'tracesim[anthropic]'`` and ANTHROPIC_API_KEY (ANTHROPIC_BASE_URL for
another endpoint). The trace goes to .tracesim/traces.jsonl; ``tracesim show`` prints it.
"""

import anthropic

import tracesim

tracesim.configure(service_name="anthropic-example")
tracesim.instrument_anthropic()  # or configure(instrument=["anthropic"])


@tracesim.trace(kind="agent")
def answer(question: str) -> str:
    # open_telemetry=False: the client's own span (metadata only) is left out
    with anthropic.Anthropic(open_telemetry=False) as client:
        reply = client.messages.create(
            model="claude-sonnet-4-5", max_tokens=256, messages=[{"role": "user", "content": question}]
        )
    return "".join(block.text for block in reply.content if block.type == "text")


if __name__ == "__main__":
    print(answer("Where was Marie Curie born?"))
    tracesim.shutdown()
