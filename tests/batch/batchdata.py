"""Data files for the batch tests: JSONL and CSV rows with the odd cases real files have."""

from __future__ import annotations

import csv
import json
import os
import random
from pathlib import Path
from typing import Any

import tracesim
from tracesim.evaluators import Evaluator

WORDS = ["the", "quick", "brown", "fox", "Paris", "is", "capital", "of", "France", "café", "東京", "🍕"]
EVALUATORS = ["levenshtein:threshold=0.8", "rouge:rouge_type=rougeL", "f1", "exact"]
NAMES = ["levenshtein", "rouge", "f1", "exact"]


def text(rng: random.Random, low: int = 0, high: int = 8) -> str:
    return " ".join(rng.choices(WORDS, k=rng.randint(low, high)))


def answer(rng: random.Random, number: int) -> dict[str, Any]:
    """One good row: about a third exact, some without an expected output, ids of mixed types."""
    expected = text(rng)
    output = expected if number % 3 == 0 else text(rng)
    row_id: Any = number if number % 2 else f"r{number}"
    return {
        "id": row_id,
        "input": f"q{number}",
        "output": output,
        "expected": None if number % 25 == 0 else expected,
    }


def write_jsonl(path: Path, rows: int, seed: int = 3) -> set[int]:
    """A JSONL file with bad lines (torn, not an object, no output) and a blank one; their numbers."""
    rng = random.Random(seed)
    bad: set[int] = set()
    with path.open("w", encoding="utf-8") as handle:
        for number in range(1, rows + 1):
            kind = number % 97
            if kind == 11:
                handle.write('{"output": "torn\n')
            elif kind == 12:
                handle.write("[1, 2]\n")
            elif kind == 13:
                handle.write(json.dumps({"expected": "no output"}) + "\n")
            elif kind == 14:
                handle.write("\n")  # blank: not a row at all
                continue
            else:
                handle.write(json.dumps(answer(rng, number), ensure_ascii=False) + "\n")
                continue
            bad.add(number)
    return bad


def write_csv(path: Path, rows: int, seed: int = 5) -> None:
    """A CSV file whose quoted fields hold line breaks, commas and quotes, with a short row."""
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "input", "output", "expected"])
        for number in range(1, rows + 1):
            if number % 53 == 7:
                writer.writerow([f"r{number}"])  # too few fields: a bad row
                continue
            row = answer(rng, number)
            if number % 5 == 0:
                row["output"] = f'{row["output"]}\n"quoted", and\r\nmore'
            writer.writerow([row["id"], row["input"], row["output"], row["expected"] or ""])


def traced_file(tmp_path: Path) -> Path:
    """A trace file written by tracesim: answers with expected outputs, tools, one truncated value."""
    path = tmp_path / "traces.jsonl"
    tracesim.configure(jsonl_path=str(path), max_value_chars=200, scoring_mode="off")

    @tracesim.trace(kind="tool")
    def search(question: str) -> str:
        return f"notes on {question}"

    for question in ("Where was Curie born?", "Where is Paris?", "long"):
        golden = "Warsaw" if "Curie" in question else None
        with tracesim.span("answer", kind="agent", input=question, expected=golden) as span:
            search(question)
            span.set_output("x" * 500 if question == "long" else "Warsaw")
    assert tracesim.force_flush()
    tracesim.shutdown()
    with path.open("ab") as handle:
        handle.write(b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": 5}]}]}]}\n{"torn')
    return path


class Stall(Evaluator):
    """Exact match that, for the output ``STALL``, waits on the driver once, in a worker process.

    It records its process id in a Dask ``Variable`` and waits for a Dask ``Event``; the test
    kills that process meanwhile, then sets the event, so the part's second run goes through.
    """

    type_name = "stall"
    default_threshold = 1.0

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        from distributed import Event, Variable

        if output == "STALL" and not Event("tracesim-release").is_set():
            Variable("tracesim-stalled-pid").set(os.getpid())
            Event("tracesim-release").wait()
        return 1.0 if output == expected else 0.0
