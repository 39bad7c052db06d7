"""A small deterministic question-answering agent, used by ``tracesim demo``.

It retrieves from a tiny built-in knowledge base, calls a calculator tool for arithmetic and
"generates" an answer by picking the best-matching sentence, so it runs offline, needs no
model, and gives the same trees every time. Its answers are scored online against a golden
file (`GOLDEN`, written next to the traces) with metrics that need no NLTK data, and its runs
against the tool calls each question needs (`TOOL_CALLS`: the calculator for arithmetic, no
tool otherwise) with ``trajectory_match``.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable
from typing import Any

import tracesim

KNOWLEDGE = (
    "Marie Curie was born in Warsaw in 1867.",
    "Marie Curie won the Nobel Prize in Physics in 1903 and in Chemistry in 1911.",
    "Ada Lovelace wrote the first published algorithm for Babbage's Analytical Engine.",
    "Alan Turing proposed the Turing test in 1950.",
    "The Eiffel Tower is in Paris and was completed in 1889.",
    "Warsaw is the capital of Poland.",
    "Paris is the capital of France.",
    "The speed of light in vacuum is 299,792,458 metres per second.",
    "Water boils at 100 degrees Celsius at sea level.",
    "Mount Everest is 8,849 metres high.",
)

QUESTIONS = (
    "Where was Marie Curie born?",
    "When did Marie Curie win the Nobel Prize in Chemistry?",
    "Who wrote the first published algorithm?",
    "What did Alan Turing propose in 1950?",
    "Where is the Eiffel Tower?",
    "What is the capital of Poland?",
    "What is the capital of France?",
    "How fast is light in vacuum?",
    "At what temperature does water boil?",
    "How high is Mount Everest?",
    "What is 17 * 23?",
    "What is (1903 - 1867) / 4?",
)

# The reference answers a reviewer wrote. One question has none, so its scores are "skipped".
GOLDEN = {
    "Where was Marie Curie born?": "Marie Curie was born in Warsaw.",
    "When did Marie Curie win the Nobel Prize in Chemistry?": "She won the Nobel Prize in Chemistry in 1911.",
    "Who wrote the first published algorithm?": "Ada Lovelace.",
    "What did Alan Turing propose in 1950?": "Alan Turing proposed the Turing test in 1950.",
    "Where is the Eiffel Tower?": "The Eiffel Tower is in Paris.",
    "What is the capital of Poland?": "Warsaw is the capital of Poland.",
    "What is the capital of France?": "Paris.",
    "How fast is light in vacuum?": "About 300,000 kilometres per second.",
    "At what temperature does water boil?": "Water boils at 100 degrees Celsius at sea level.",
    "What is 17 * 23?": "391",
    "What is (1903 - 1867) / 4?": "9",
}

# The tool calls each answered question needs: the calculator for arithmetic, none otherwise.
TOOL_CALLS: dict[str, list[dict[str, Any]]] = {
    "What is 17 * 23?": [{"name": "calculator", "arguments": {"expression": "17 * 23"}}],
    "What is (1903 - 1867) / 4?": [{"name": "calculator", "arguments": {"expression": "(1903 - 1867) / 4"}}],
}

EVALUATORS = (
    {"type": "levenshtein", "threshold": 0.7},
    {"type": "rouge", "rouge_type": "rougeL"},
    {"type": "f1"},
    {"type": "trajectory_match", "mode": "strict"},
)

_WORD = re.compile(r"[a-z0-9]+")
_STOP = frozenset(
    {"the", "a", "an", "is", "was", "in", "of", "at", "to", "and", "for"}
    | {"what", "who", "where", "when", "how", "did", "does"}
)
_ARITHMETIC = re.compile(r"^what is ([0-9+\-*/(). ]+)\?$", re.IGNORECASE)
_OPS: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}


def _words(text: str) -> set[str]:
    return {w for w in _WORD.findall(text.lower()) if w not in _STOP}


@tracesim.trace(kind="retriever")
def retrieve(query: str, top_k: int = 2) -> list[str]:
    """The ``top_k`` knowledge-base sentences sharing the most words with ``query``."""
    scored = sorted(KNOWLEDGE, key=lambda doc: (-len(_words(doc) & _words(query)), KNOWLEDGE.index(doc)))
    return [doc for doc in scored[:top_k] if _words(doc) & _words(query)]


@tracesim.trace(kind="tool")
def calculator(expression: str) -> float:
    """Evaluate + - * / arithmetic safely."""

    def walk(node: ast.AST) -> Any:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        raise ValueError(f"unsupported expression: {expression!r}")

    return float(walk(ast.parse(expression, mode="eval")))


@tracesim.trace(kind="llm")
def generate(question: str, documents: list[str]) -> str:
    """Stand-in for a model: answer with the document closest to the question."""
    if not documents:
        return "I don't know."
    return max(documents, key=lambda doc: len(_words(doc) & _words(question)))


def write_golden(path: str) -> None:
    """Write `GOLDEN` as a JSON-lines dataset: ``{"question", "expected", "expected_tool_calls"}``
    per line."""
    import json

    from tracesim import _outputs

    lines = (
        json.dumps(
            {"question": question, "expected": expected, "expected_tool_calls": TOOL_CALLS.get(question, [])}
        )
        + "\n"
        for question, expected in GOLDEN.items()
    )
    _outputs.write_text(path, "".join(lines))


def answer(question: str) -> str:
    """Answer ``question`` from the knowledge base, or with the calculator for arithmetic."""
    arithmetic = _ARITHMETIC.match(question.strip())
    if arithmetic:
        value = calculator(arithmetic.group(1))
        return f"{value:g}"
    with tracesim.span("plan", kind="chain", input=question) as plan:
        steps = ["retrieve", "generate"]
        plan.set_output(steps)
    return generate(question, retrieve(question))


def scored_agent(golden_path: str) -> Callable[[str], str]:
    """`answer`, traced as an agent and scored against the golden file at ``golden_path``."""
    golden = tracesim.Golden(golden_path, key="question")
    return tracesim.trace(kind="agent", name="answer", evaluators=EVALUATORS, expected=golden)(answer)


def run_demo(agent: Callable[[str], str]) -> list[tuple[str, str]]:
    """Ask every demo question; return (question, answer) pairs."""
    return [(question, agent(question)) for question in QUESTIONS]
