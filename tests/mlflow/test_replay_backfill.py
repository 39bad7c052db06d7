"""``tracesim replay`` and ``backfill`` into a real MLflow: results as assessments, once per run or rerun."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import tracesim
from tracesim import _semconv as sc
from tracesim.batch import replay
from tracesim.cli import main
from tracesim.evaluators import Levenshtein
from tracesim.tracefile import load_spans

QUESTIONS = {"Where was Curie born?": "Warsaw", "Capital of France?": "Paris", "2+2?": "4"}
ANSWERS = {"Where was Curie born?": "Warsaw", "Capital of France?": "Lyon", "2+2?": "4"}


def _names(found: dict[str, Any]) -> Counter[tuple[str, str, str]]:
    """(trace, span, assessment name) of every assessment read back, counted."""
    return Counter(
        (trace, a["span_id"], a["assessment_name"]) for trace, items in found.items() for a in items or []
    )


def test_a_replayed_trace_file_brings_its_results_once(
    mlflow_server: Any, experiment: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    path = tmp_path / "traces.jsonl"
    tracesim.configure(jsonl_path=str(path))  # a local trace file, sent to MLflow later

    @tracesim.trace(kind="agent", evaluators=[Levenshtein(threshold=0.7)], expected=QUESTIONS.get)
    def answer(question: str) -> str:
        return ANSWERS[question]

    for question in QUESTIONS:
        answer(question)
    with tracesim.span("chat", kind="agent") as rated:
        rated.set_output("hello")
    tracesim.score(rated, name="user_rating", value=0.0, label="unhelpful", explanation="off topic")
    assert tracesim.shutdown(30)
    spans = load_spans(path)
    traces = {f"tr-{s.trace_id}" for s in spans}
    assert len(traces) == 4

    # the experiment from the setting, as the exporter sends it
    monkeypatch.setenv("MLFLOW_EXPERIMENT_ID", experiment)
    first = replay([path], endpoint=mlflow_server.url)
    assert first.ok, first.problems
    assert (first.mlflow, first.phoenix) == (True, False)
    # three scores, three expected outputs, one human rating
    assert (first.assessments, first.failed_assessments) == (7, 0)
    found = mlflow_server.read_assessments(sorted(traces))
    counted = _names(found)
    assert set(counted.values()) == {1}
    assert Counter(name for _, _, name in counted) == {
        "levenshtein": 3,
        "expected_response": 3,
        "user_rating": 1,
    }
    (rating,) = [a for items in found.values() for a in items if a["assessment_name"] == "user_rating"]
    assert rating["span_id"] == rated.span_id  # the carrier's result, on the span it rates
    assert rating["source"]["source_type"] == "HUMAN"
    assert (rating["feedback"]["value"], rating["rationale"]) == (0.0, "off topic")

    # again, from the command line: the ledger says all was sent; nothing is posted
    monkeypatch.delenv("MLFLOW_EXPERIMENT_ID")
    assert (
        main(
            [
                "replay",
                str(path),
                "--endpoint",
                mlflow_server.url,
                "--headers",
                f"x-mlflow-experiment-id={experiment}",
            ]
        )
        == 0
    )
    assert "spans sent before (ledger)" in capsys.readouterr().out
    # forced: the spans go again, and the assessments MLflow has are found there, not posted twice
    forced = replay(
        [path], endpoint=mlflow_server.url, headers={"x-mlflow-experiment-id": experiment}, force=True
    )
    assert forced.ok, forced.problems
    assert (forced.assessments, forced.assessments_already_there) == (0, 7)
    assert _names(mlflow_server.read_assessments(sorted(traces))) == counted


def test_a_backfill_shows_its_scores_in_mlflow_once(
    mlflow_server: Any, experiment: str, tmp_path: Path, capsys: Any
) -> None:
    pytest.importorskip("pandas", reason="backfill reads batch results (the 'dask' extra)")
    from tracesim.batch import Spans, backfill, score

    traces = tmp_path / "traces.jsonl"
    tracesim.configure(jsonl_path=str(traces), scoring_mode="off")
    for question, golden in QUESTIONS.items():
        with tracesim.span("answer", kind="agent", input=question, expected=golden) as span:
            span.set_output(ANSWERS[question])
    tracesim.shutdown()
    answers = {s.span_id: s for s in load_spans(traces) if s.name == "answer"}
    headers = {"x-mlflow-experiment-id": experiment}
    assert replay([traces], endpoint=mlflow_server.url, headers=headers).ok

    results = tmp_path / "scores"
    score(Spans(str(traces), name="answer"), evaluators=["exact"], output=results, engine="local")
    report = backfill(results, mlflow=mlflow_server.url)
    assert report.ok, report.failed_parts
    assert report.assessments == 3
    assert report.destinations == [f"mlflow:{mlflow_server.url}"]
    trace_ids = sorted(f"tr-{s.trace_id}" for s in answers.values())
    found = [a for items in mlflow_server.read_assessments(trace_ids).values() for a in items]
    assert len(found) == 3
    for assessment in found:
        span = answers[assessment["span_id"]]
        right = span.attributes[sc.OUTPUT_VALUE] == span.attributes[sc.EXPECTED_VALUE]
        assert assessment["assessment_name"] == "exact"
        assert assessment["feedback"]["value"] == (1.0 if right else 0.0)
        assert assessment["metadata"]["tracesim.passed"] == str(right).lower()

    # again: the ledger sends nothing; forced, MLflow's copies are found and none is added
    again = backfill(results, mlflow=mlflow_server.url)
    assert (again.parts, again.already_sent, again.assessments) == (0, 1, 0)
    assert main(["backfill", str(results), "--mlflow", mlflow_server.url]) == 0
    out = capsys.readouterr().out
    assert "MLflow assessments" in out
    assert f"mlflow:{mlflow_server.url}" in out
    assert backfill(results, mlflow=mlflow_server.url, force=True).ok
    assert len([a for items in mlflow_server.read_assessments(trace_ids).values() for a in items]) == 3
