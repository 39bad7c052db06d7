"""What MLflow stores and shows holds no secret: the spans, and every field of the assessments."""

from __future__ import annotations

import json
from typing import Any

from leaky_evaluator import EVERY_SECRET, SECRETS, Leaky

import tracesim
from tracesim.evaluators import Evaluator


class Failing(Evaluator):
    type_name = "failing"
    requires_expected = False

    def measure(self, output: Any, expected: Any, *, input: Any = None) -> float:
        raise RuntimeError(f"could not reach the judge with {EVERY_SECRET}")


def _no_secret(stored: str) -> None:
    unescaped = stored.replace("\\n", "\n").replace("\\\\", "\\").replace('\\"', '"')
    for kind, (_, fragment) in SECRETS.items():
        assert fragment not in stored, kind
        assert fragment not in unescaped, kind


def test_nothing_in_mlflow_holds_a_secret(mlflow_server: Any, experiment: str) -> None:
    tracesim.configure(
        exporters=["otlp"], otlp_endpoint=mlflow_server.url, mlflow_experiment_id=experiment, spool_dir="none"
    )
    traced: list[str] = []

    @tracesim.trace(evaluators=[Leaky(), Failing()], expected=f"expected {EVERY_SECRET}")
    def answer(question: str) -> str:
        traced.append(tracesim.current_span().trace_id)
        return f"the answer is {EVERY_SECRET}"

    answer(f"what is {EVERY_SECRET}?")
    with tracesim.span("rated") as rated:
        rated.set_output(EVERY_SECRET)
    tracesim.score(rated, name="user_rating", value=1.0, label=EVERY_SECRET, explanation=EVERY_SECRET)
    assert tracesim.force_flush(60)
    ids = [f"tr-{traced[0]}", f"tr-{rated.trace_id}"]
    traces = mlflow_server.read_traces(ids)

    scored, human = (traces[i] for i in ids)
    _no_secret(json.dumps(traces))
    # the fields arrived, redacted: not dropped
    by_name = {a["assessment_name"]: a for a in scored["info"]["assessments"]}
    assert set(by_name) == {"leaky", "failing", "expected_response"}
    leaky = by_name["leaky"]
    assert leaky["feedback"]["value"] == 0.5
    assert "[REDACTED:" in leaky["rationale"]
    assert "[REDACTED:" in leaky["metadata"]["tracesim.label"]
    details = json.loads(leaky["metadata"]["tracesim.details"])
    assert "[REDACTED:" in details["seen"]
    assert sum("[REDACTED:" in key for key in details) == len(SECRETS)
    assert "[REDACTED:" in by_name["failing"]["feedback"]["error"]["error_message"]
    assert "[REDACTED:" in by_name["expected_response"]["expectation"]["value"]
    (rating,) = human["info"]["assessments"]
    assert "[REDACTED:" in rating["rationale"]
    assert "[REDACTED:" in rating["metadata"]["tracesim.label"]
    # and the spans themselves, as the exporter sent them
    assert len(scored["data"]["spans"]) == 1
    assert "[REDACTED:" in json.dumps(scored["data"]["spans"])
