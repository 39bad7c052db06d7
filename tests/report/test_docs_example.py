"""docs/report.md shows what the command prints: its timeline example and its JSON shape."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tracesim._report import read_report
from tracesim.cli import main

from .tracefiles import TraceWriter, write_timeline

DOCS = Path(__file__).resolve().parents[2] / "docs" / "report.md"


def _block(after: str) -> list[str]:
    """The lines of the fenced block that starts with the line ``after``."""
    text = DOCS.read_text(encoding="utf-8")
    start = text.index(f"```\n{after}\n") + len(f"```\n{after}\n")
    return text[start : text.index("```", start)].splitlines()


def test_the_timeline_example_is_the_output(
    writer: Callable[..., TraceWriter], capsys: pytest.CaptureFixture[str]
) -> None:
    w = writer("timeline.jsonl")
    write_timeline(w)
    w.close()

    assert main(["report", str(w.path)]) == 0

    printed = [line.rstrip() for line in capsys.readouterr().out.splitlines()]
    documented = _block("$ tracesim report timeline.jsonl")
    assert documented[-1] == "..."
    assert documented[:-1] == printed[: len(documented) - 1]
    assert printed[len(documented) - 2].startswith("└───────┴")  # the example ends with the timeline


def test_the_json_shape_lists_every_key_in_order(known_file: Path) -> None:
    shape = "\n".join(_block("{"))
    top = re.findall(r'^  "(\w+)":', shape, re.MULTILINE)
    document = read_report([known_file]).to_dict()

    assert top == [*document, "gates"]
    totals = re.search(r'"totals": \{(.*?)\}\},', shape, re.DOTALL)
    assert totals is not None
    assert re.findall(r'"(\w+)"', totals.group(1)) == [
        *(k for k in document["totals"] if k not in ("status", "scoring")),
        "status", *document["totals"]["status"], "scoring", *document["totals"]["scoring"],
    ]  # fmt: skip


def test_the_json_row_examples_have_every_key(known_file: Path) -> None:
    text = DOCS.read_text(encoding="utf-8")
    examples = [json.loads(block) for block in re.findall(r"```json\n(\{.*?\})\n```", text, re.DOTALL)]
    document = read_report([known_file]).to_dict()

    span_row, evaluator_row = examples
    assert list(span_row) == list(document["spans"][0])
    assert list(evaluator_row) == list(document["evaluator_totals"][0])
    assert list(evaluator_row["histogram"]) == list(document["evaluator_totals"][0]["histogram"])
