"""A scored application for the scrape test: ``python _scored_app.py TRACES.jsonl PORT LLM_URL``.

It traces ``answer(question)`` with two evaluators and serves tracesim's metrics for Prometheus
on ``127.0.0.1:PORT``; spans go to ``TRACES.jsonl``. Each answer first asks the OpenAI-compatible
server at ``LLM_URL`` (``tests/llm_server.py``) with the real ``openai`` client, instrumented by
tracesim, so LLM cost is counted too. It answers every question of `CASES` once
(one round), waits until scoring is done, prints ``round 1 scored`` and reads a line from
stdin: ``again`` plays the same round once more (``round 2 scored``), anything else or the end
of stdin ends the program. The outcomes are fixed by the cases: per round, ``graded`` passes 4,
fails 2, errs 1 and skips 1; ``exact`` passes 2, fails 5 and skips 1; ``length`` scores 7
without a verdict (undecided) and skips 1.
"""

from __future__ import annotations

import sys

import openai

import tracesim
from tracesim.evaluators import ExactMatch, evaluator

MODEL = "gpt-4o-mini"  # priced in tracesim's shipped table

GRADES = {"good": 0.9, "fair": 0.6, "poor": 0.2}
# question: (the answer given, the expected answer or None)
CASES: dict[str, tuple[str, str | None]] = {
    "q1": ("good", "good"),
    "q2": ("good", "good"),
    "q3": ("fair", "good"),
    "q4": ("fair", "good"),
    "q5": ("poor", "good"),
    "q6": ("poor", "good"),
    "q7": ("boom", "good"),
    "q8": ("good", None),
}


@evaluator(threshold=0.5)
def graded(output: str, expected: str) -> float:
    """The answer's grade; "boom" has none (an evaluator error)."""
    if output == "boom":
        raise ValueError("no grade for boom")
    return GRADES[output]


@evaluator(threshold=None)
def length(output: str, expected: str) -> float:
    """The answer's length: a score without a verdict (outcome undecided)."""
    return float(len(output))


def main(traces: str, port: int, llm_url: str) -> int:
    tracesim.configure(
        service_name="scored-app",
        exporters=["jsonl"],
        jsonl_path=traces,
        metrics=["prometheus"],
        prometheus_host="127.0.0.1",
        prometheus_port=port,
        instrument=["openai"],
    )
    client = openai.OpenAI(base_url=llm_url, api_key="test", max_retries=0)

    @tracesim.trace(
        kind="agent", evaluators=[graded, ExactMatch(), length], expected=lambda question: CASES[question][1]
    )
    def answer(question: str) -> str:
        client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": question}])
        return CASES[question][0]

    for round_number in (1, 2):
        for question in CASES:
            answer(question)
        if not tracesim.force_flush():
            print("force_flush timed out", file=sys.stderr)
            return 1
        print(f"round {round_number} scored", flush=True)
        if round_number == 1 and sys.stdin.readline().strip() != "again":
            break
    sys.stdin.read()  # serve the metrics until the test closes stdin
    client.close()
    tracesim.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], int(sys.argv[2]), sys.argv[3]))
