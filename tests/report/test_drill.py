"""The report's drill-down: which calls fail, why, with their input, output and trace id."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import tracesim
from tracesim._report import read_report
from tracesim.cli import main
from tracesim.evaluators import ExactMatch, LevenshteinDistance

GOLDEN = {"Capital of France?": "Paris", "Capital of Japan?": "Tokyo", "2+2?": "4", "Boil?": "100 C"}
ANSWERS = {"Capital of France?": "Paris", "Capital of Japan?": "Kyoto", "2+2?": "five", "Boil?": "100 C"}


def traced(path: Path) -> None:
    tracesim.configure(jsonl_path=str(path), scoring_mode="inline")

    @tracesim.trace(kind="tool")
    def search(question: str) -> str:
        raise TimeoutError("search backend took longer than 5 s")

    @tracesim.trace(kind="agent", evaluators=[ExactMatch(), LevenshteinDistance(threshold=1)])
    def answer(question: str) -> str:
        if question == "search":
            return search(question)  # the TimeoutError propagates through answer too
        if question == "divide":
            return str(1 / 0)
        return ANSWERS[question]

    for question, golden in GOLDEN.items():
        with tracesim.expect(golden):
            answer(question)
    for question in ("search", "search", "divide"):
        with pytest.raises((TimeoutError, ZeroDivisionError)):
            answer(question)
    tracesim.shutdown()


def test_the_worst_cases_come_with_the_call_they_judged(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    traced(path)
    report = read_report([path])

    exact = [c for c in report.worst_cases if c.evaluator == "exact"]
    assert {c.output for c in exact[:2]} == {"Kyoto", "five"}  # the two failures first
    assert all(c.passed is False for c in exact[:2])
    assert all(c.passed for c in exact[2:])
    first = exact[0]
    assert first.span == "answer"
    assert first.expected in ("Tokyo", "4")
    assert first.input is not None
    assert len(first.trace_id) == 32
    assert len(first.span_id) == 16
    # a distance: the worst is the largest, whatever its order among the failures
    distances = [c.score for c in report.worst_cases if c.evaluator == "levenshtein_distance"]
    assert distances == sorted(distances, reverse=True)
    assert distances[0] == 4.0  # "five" vs "4"


def test_errors_are_counted_by_type_where_they_were_raised(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    traced(path)
    report = read_report([path])
    by_type = {e.type: e for e in report.error_types}
    assert set(by_type) == {"TimeoutError", "ZeroDivisionError"}
    # two calls, each failing in search and again in answer: two errors, both raised in search
    assert by_type["TimeoutError"].count == 2
    assert by_type["TimeoutError"].spans == ("search",)
    assert by_type["TimeoutError"].message == "search backend took longer than 5 s"
    assert by_type["ZeroDivisionError"].count == 1
    assert by_type["ZeroDivisionError"].spans == ("answer",)
    assert report.totals.errors == 5  # the span table still counts every failed span


def test_text_and_json_show_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "traces.jsonl"
    traced(path)
    assert main(["report", str(path)]) == 0
    out = capsys.readouterr().out
    assert "Errors by type (each counted once, where it was raised)" in out
    assert "TimeoutError" in out
    assert "search backend took longer than 5 s" in out
    assert "Worst cases (up to 3 per evaluator" in out
    assert "   out: Kyoto" in out
    assert "   expected: Tokyo" in out
    assert main(["report", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert {c["evaluator"] for c in doc["worst_cases"]} == {"exact", "levenshtein_distance"}
    assert doc["error_types"][0]["type"] == "TimeoutError"


def test_the_html_page_has_them_escaped(tmp_path: Path) -> None:
    path = tmp_path / "traces.jsonl"
    traced(path)
    page = tmp_path / "report.html"
    assert main(["report", str(path), "--html", str(page)]) == 0
    html = page.read_text(encoding="utf-8")
    assert '<section id="errors"><h2>Errors by type</h2>' in html
    assert '<section id="worst"><h2>Worst cases</h2>' in html
    assert "search backend took longer than 5 s" in html
    assert '<td class="text">Kyoto</td>' in html
