"""A small question-answering agent to run experiments on: a retriever and a lookup tool.

It is deterministic on purpose (a dictionary stands in for the model), so the example's
numbers are the same on every machine; swap `generate` for a real LLM call and nothing else
changes. One question is answered badly and one has no document: the report shows both.
"""

from __future__ import annotations

import tracesim

DOCUMENTS = {
    "Marie Curie": "Marie Curie was born in Warsaw in 1867 and won two Nobel Prizes.",
    "Alan Turing": "Alan Turing proposed the imitation game in 1950.",
}
ANSWERS = {
    "Where was Marie Curie born?": "Marie Curie was born in Warsaw.",
    "How many Nobel Prizes did Marie Curie win?": "Marie Curie won two Nobel Prizes.",
    "What did Alan Turing propose in 1950?": "Alan Turing proposed the Turing test in his 1950 paper.",
}


@tracesim.trace(kind="retriever")
def retrieve(question: str) -> list[str]:
    found = [text for name, text in DOCUMENTS.items() if name in question]
    if not found:
        raise LookupError(f"no document about {question!r}")
    return found


@tracesim.trace(kind="llm")
def generate(question: str, documents: list[str]) -> str:
    return ANSWERS[question]


@tracesim.trace(kind="agent")
def answer(question: str) -> str:
    """The task: one question in, one answer out."""
    return generate(question, retrieve(question))
