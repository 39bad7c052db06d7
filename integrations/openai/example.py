"""tracesim-openai's example: an agent whose OpenAI call is a span under the agent's own.

Needs ``pip install 'tracesim[openai]'`` and OPENAI_API_KEY (OPENAI_BASE_URL for another
endpoint). The trace goes to .tracesim/traces.jsonl; ``tracesim show`` prints it.
"""

import openai

import tracesim

tracesim.configure(service_name="openai-example")
tracesim.instrument_openai()  # or configure(instrument=["openai"])


@tracesim.trace(kind="agent")
def answer(question: str) -> str:
    with openai.OpenAI() as client:
        reply = client.chat.completions.create(
            model="gpt-4o-mini", messages=[{"role": "user", "content": question}]
        )
    return reply.choices[0].message.content or ""


if __name__ == "__main__":
    print(answer("Where was Marie Curie born?"))
    tracesim.shutdown()
