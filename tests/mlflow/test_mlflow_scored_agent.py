"""A scored agent exported to a real MLflow: its results as assessments, read back by MLflow's client."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from opentelemetry.trace import SpanContext

import tracesim
from tracesim.evaluators import Evaluator, ExactMatch, Levenshtein, Measurement

GOLDEN = {"Where was Marie Curie born?": "Marie Curie was born in Warsaw."}


class Judge(Evaluator):
    """Stands for an LLM judge: it says so (``annotator_kind``) and names its model in the details."""

    type_name = "judge"
    annotator_kind = "LLM"
    requires_expected = False

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> Measurement:
        return Measurement(1.0, {"model": "judge-model-1"}, explanation="names the city and the year")


class Broken(Evaluator):
    type_name = "broken"
    requires_expected = False

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        raise RuntimeError("the judge timed out")


def _by_name(assessments: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    names = [a["assessment_name"] for a in assessments]
    assert len(names) == len(set(names)), f"duplicates: {sorted(names)}"
    return {a["assessment_name"]: a for a in assessments}


def _tr(context: SpanContext) -> str:
    return f"tr-{context.trace_id:032x}"


def test_a_scored_agent_shows_results_as_assessments_and_the_expected_output_as_an_expectation(
    mlflow_server: Any, experiment: str
) -> None:
    tracesim.configure(
        service_name="mlflow-agent",
        exporters=["otlp"],
        otlp_endpoint=mlflow_server.url,  # MLflow found behind the OTLP endpoint
        mlflow_experiment_id=experiment,
        spool_dir="none",
    )
    seen: list[SpanContext] = []

    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return {"Warsaw": "Poland"}.get(city, "?")

    evaluators = [Levenshtein(threshold=0.7), ExactMatch(), Judge(), Broken()]

    @tracesim.trace(kind="agent", evaluators=evaluators, expected=GOLDEN.get)
    def answer(question: str) -> str:
        seen.append(tracesim.current_span().span_context)
        lookup("Warsaw")
        return "Marie Curie was born in Warsaw in 1867."

    answer("Where was Marie Curie born?")
    answer("Who painted the Mona Lisa?")  # no expected output: two evaluators skip
    assert tracesim.force_flush(60)
    scored, unscored = seen
    found = mlflow_server.read_assessments([_tr(scored), _tr(unscored)])
    span_id = f"{scored.span_id:016x}"

    by_name = _by_name(found[_tr(scored)])
    assert set(by_name) == {"levenshtein", "exact", "judge", "broken", "expected_response"}
    assert {a["span_id"] for a in by_name.values()} == {span_id}  # on the agent's span, not the trace
    levenshtein = by_name["levenshtein"]
    assert levenshtein["feedback"]["value"] == pytest.approx(0.79)
    assert levenshtein["source"] == {"source_type": "CODE", "source_id": "tracesim.levenshtein"}
    metadata = levenshtein["metadata"]
    assert (metadata["tracesim.passed"], metadata["tracesim.label"]) == ("true", "pass")
    assert float(metadata["tracesim.threshold"]) == pytest.approx(0.7)
    assert len(metadata["tracesim.result_id"]) == 32
    assert by_name["exact"]["feedback"]["value"] == 0.0
    assert by_name["exact"]["metadata"]["tracesim.passed"] == "false"
    judge = by_name["judge"]
    assert judge["source"] == {"source_type": "LLM_JUDGE", "source_id": "judge-model-1"}
    assert judge["rationale"] == "names the city and the year"
    broken = by_name["broken"]["feedback"]
    assert broken.get("value") is None
    assert broken["error"]["error_code"] == "RuntimeError"
    assert "the judge timed out" in broken["error"]["error_message"]
    # the output the scores were measured against: one expectation on the span, not one per evaluator
    expectation = by_name["expected_response"]
    assert expectation["expectation"]["value"] == "Marie Curie was born in Warsaw."
    assert "feedback" not in expectation

    # without an expected output only the judges that need none scored; no expectation
    assert set(_by_name(found[_tr(unscored)])) == {"judge", "broken"}


def test_a_late_result_lands_on_the_span_it_scores(mlflow_server: Any, experiment: str) -> None:
    release = threading.Event()

    class Late(Evaluator):
        type_name = "late"
        requires_expected = False

        def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
            assert release.wait(30)
            return 0.5

    tracesim.configure(
        exporters=["otlp"],
        otlp_endpoint=mlflow_server.url,
        mlflow_experiment_id=experiment,
        spool_dir="none",
        batch_export=False,
        max_defer_s=0.05,  # the span goes without its score; the score follows on a carrier span
    )
    seen: list[SpanContext] = []

    @tracesim.trace(evaluators=[Late()])
    def answer() -> str:
        seen.append(tracesim.current_span().span_context)
        return "Warsaw"

    try:
        answer()
        assert tracesim.force_flush(1) is False  # the score is still being computed
    finally:
        release.set()
    assert tracesim.force_flush(60)
    assert tracesim.scoring_stats().late == 1
    (context,) = seen
    (late,) = mlflow_server.read_assessments([_tr(context)])[_tr(context)]
    assert (late["assessment_name"], late["feedback"]["value"]) == ("late", 0.5)
    assert late["span_id"] == f"{context.span_id:016x}"  # the scored span, not the carrier


def test_score_feedback_is_a_human_assessment(mlflow_server: Any, experiment: str) -> None:
    tracesim.configure(
        exporters=["otlp"], otlp_endpoint=mlflow_server.url, mlflow_experiment_id=experiment, spool_dir="none"
    )
    with tracesim.span("answer", kind="agent") as s:
        s.set_output("Warsaw")
    tracesim.score(s, name="user_rating", value=1.0, label="helpful", explanation="exactly right")
    tracesim.score(s.span_context, name="thumbs", label="up")
    assert tracesim.force_flush(60)
    found = _by_name(mlflow_server.read_assessments([_tr(s.span_context)])[_tr(s.span_context)])
    assert set(found) == {"user_rating", "thumbs"}
    rating = found["user_rating"]
    assert rating["source"] == {"source_type": "HUMAN", "source_id": "tracesim.user_rating"}
    assert (rating["feedback"]["value"], rating["rationale"]) == (1.0, "exactly right")
    assert rating["metadata"]["tracesim.label"] == "helpful"
    assert rating["span_id"] == s.span_id
    assert found["thumbs"]["feedback"]["value"] == "up"  # no score: the label is the value
