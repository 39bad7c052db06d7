"""The README's quickstart: trace an agent, a tool and a retrieval step; write the local file.

python examples/quickstart.py && tracesim show
"""

import tracesim

tracesim.configure(service_name="support-bot")  # no exporter named: .tracesim/traces.jsonl


@tracesim.trace(kind="tool")
def lookup(city: str) -> str:
    return {"Warsaw": "Poland"}.get(city, "unknown")


@tracesim.trace(kind="agent")
def answer(question: str) -> str:
    with tracesim.span("retrieve", kind="retriever", input=question) as s:
        docs = ["Marie Curie was born in Warsaw."]
        s.set_output(docs)
    return f"Warsaw, in {lookup('Warsaw')}"


if __name__ == "__main__":
    print(answer("Where was Marie Curie born?"))
    tracesim.force_flush()  # short scripts and tests: wait for the export
