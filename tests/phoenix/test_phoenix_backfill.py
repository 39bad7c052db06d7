"""Backfill into a real Phoenix: a trace file replayed there, scored by a batch run, annotated."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pandas", reason="backfill reads batch results (the 'dask' extra)")

import tracesim
from tracesim import _semconv as sc
from tracesim.batch import Spans, backfill, replay, score
from tracesim.tracefile import load_spans

QUESTIONS = {"Where was Curie born?": "Warsaw", "Capital of France?": "Paris", "2+2?": "4"}
ANSWERS = {"Where was Curie born?": "Warsaw", "Capital of France?": "Lyon", "2+2?": "4"}


def test_a_backfill_shows_its_scores_on_the_original_spans_once(
    phoenix: Any, project: str, tmp_path: Path
) -> None:
    traces = tmp_path / "traces.jsonl"
    tracesim.configure(
        jsonl_path=str(traces), scoring_mode="off", resource_attributes={sc.PROJECT_NAME: project}
    )
    for question, golden in QUESTIONS.items():
        with tracesim.span("answer", kind="agent", input=question, expected=golden) as span:
            span.set_output(ANSWERS[question])
    tracesim.shutdown()
    answers = {s.span_id: s for s in load_spans(traces) if s.name == "answer"}
    assert replay([traces], endpoint=phoenix.http_endpoint).ok
    phoenix.spans(project, min_count=3)

    results = tmp_path / "scores"
    score(Spans(str(traces), name="answer"), evaluators=["exact"], output=results, engine="local")
    carriers = tmp_path / "carriers.jsonl"
    report = backfill(results, phoenix=phoenix.http_endpoint, to=carriers)
    assert report.ok, report.failed_parts
    assert (report.annotations, report.carriers) == (3, 3)

    found = phoenix.span_annotations(project, list(answers), min_count=3)
    assert len(found) == 3
    for annotation in found:
        span = answers[annotation["span_id"]]
        right = span.attributes[sc.OUTPUT_VALUE] == span.attributes[sc.EXPECTED_VALUE]
        assert annotation["name"] == "exact"
        assert annotation["identifier"] == "tracesim"
        assert annotation["result"]["score"] == (1.0 if right else 0.0)
        assert annotation["metadata"]["passed"] is right

    # Again: the ledger sends nothing; Phoenix still has one annotation per span and name.
    again = backfill(results, phoenix=phoenix.http_endpoint, to=carriers)
    assert (again.parts, again.already_sent, again.annotations, again.carriers) == (0, 1, 0, 0)
    forced = backfill(results, phoenix=phoenix.http_endpoint, force=True)
    assert forced.annotations == 3
    assert len(phoenix.span_annotations(project, list(answers), min_count=3)) == 3
