"""A scored agent, traced with tracesim's own API, seen in a real Phoenix: live and replayed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import tracesim
from tracesim.batch import replay
from tracesim.evaluators import ExactMatch, Levenshtein
from tracesim.tracefile import load_spans

GOLDEN = {"Where was Marie Curie born?": "Marie Curie was born in Warsaw."}


def _make_agent() -> Any:
    @tracesim.trace(kind="tool")
    def lookup(city: str) -> str:
        return {"Warsaw": "Poland"}.get(city, "?")

    @tracesim.trace(kind="agent", evaluators=[Levenshtein(threshold=0.7), ExactMatch()], expected=GOLDEN.get)
    def answer(question: str) -> str:
        with tracesim.span("retrieve", kind="retriever", input=question) as s:
            s.set_output(["Marie Curie was born in Warsaw in 1867."])
        lookup("Warsaw")
        return "Marie Curie was born in Warsaw in 1867."

    return answer


def _check_trace(spans: list[dict[str, Any]], question: str) -> dict[str, Any]:
    """The agent span of ``question``'s trace, after checking its tree."""
    (root,) = [s for s in spans if s["name"] == "answer" and s["attributes"]["input.value"] == question]
    trace_id = root["context"]["trace_id"]
    children = {s["name"]: s for s in spans if s["context"]["trace_id"] == trace_id and s is not root}
    assert set(children) == {"retrieve", "lookup"}
    assert all(c["parent_id"] == root["context"]["span_id"] for c in children.values())
    assert root["parent_id"] is None
    assert root["span_kind"] == "AGENT"
    assert children["retrieve"]["span_kind"] == "RETRIEVER"
    assert children["lookup"]["span_kind"] == "TOOL"
    assert children["retrieve"]["attributes"]["input.value"] == question
    assert json.loads(children["retrieve"]["attributes"]["output.value"]) == [
        "Marie Curie was born in Warsaw in 1867."
    ]
    attributes = root["attributes"]
    assert attributes["output.value"] == "Marie Curie was born in Warsaw in 1867."
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.agent.name"] == "answer"
    return root


def _check_scored(root: dict[str, Any]) -> None:
    attributes = root["attributes"]
    assert attributes["tracesim.expected.value"] == "Marie Curie was born in Warsaw."
    assert attributes["tracesim.eval.levenshtein.score"] == pytest.approx(0.79)
    assert attributes["tracesim.eval.levenshtein.label"] == "pass"
    assert attributes["tracesim.eval.levenshtein.passed"] is True
    assert attributes["tracesim.eval.exact.passed"] is False
    events = {e["attributes"]["gen_ai.evaluation.name"]: e for e in root["events"]}
    assert set(events) == {"levenshtein", "exact"}
    assert all(e["name"] == "gen_ai.evaluation.result" for e in events.values())
    levenshtein = events["levenshtein"]["attributes"]
    assert levenshtein["gen_ai.evaluation.score.value"] == pytest.approx(0.79)
    assert levenshtein["gen_ai.evaluation.score.label"] == "pass"
    assert levenshtein["tracesim.evaluation.threshold"] == pytest.approx(0.7)
    assert levenshtein["tracesim.evaluation.status"] == "ok"
    assert json.loads(levenshtein["tracesim.evaluation.details"])["distance"] == 8


def _check_skipped(root: dict[str, Any]) -> None:
    attributes = root["attributes"]
    assert "tracesim.expected.value" not in attributes
    assert attributes["tracesim.eval.levenshtein.status"] == "skipped"
    statuses = {e["attributes"]["tracesim.evaluation.status"] for e in root["events"]}
    assert statuses == {"skipped"}


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_a_scored_agent_exports_to_phoenix_with_its_scores(
    phoenix: Any, project: str, protocol: str, tmp_path: Path
) -> None:
    endpoint = phoenix.grpc_endpoint if protocol == "grpc" else phoenix.http_endpoint
    tracesim.configure(
        service_name=project,  # also the Phoenix project
        exporters=["otlp"],
        otlp_protocol=protocol,
        otlp_endpoint=endpoint,
        spool_dir=tmp_path / "spool",
        # Over OTLP/HTTP tracesim finds Phoenix by itself; over gRPC its REST API is elsewhere.
        phoenix_annotations_url=phoenix.http_endpoint if protocol == "grpc" else None,
    )
    answer = _make_agent()
    answer("Where was Marie Curie born?")
    answer("Who painted the Mona Lisa?")
    tracesim.score(tracesim.current_span(), name="ignored", value=1.0)  # no span here: nothing recorded
    assert tracesim.force_flush(60)

    spans = phoenix.spans(project, min_count=6)
    assert len(spans) == 6
    scored = _check_trace(spans, "Where was Marie Curie born?")
    _check_scored(scored)
    assert {s["status_code"] for s in spans} == {"OK"}  # every call returned
    _check_skipped(_check_trace(spans, "Who painted the Mona Lisa?"))

    # the same results as Phoenix span annotations, for its evaluation views
    annotations = phoenix.span_annotations(project, [scored["context"]["span_id"]], min_count=2)
    by_name = {a["name"]: a for a in annotations}
    assert set(by_name) == {"levenshtein", "exact"}
    assert by_name["levenshtein"]["result"]["score"] == pytest.approx(0.79)
    assert by_name["levenshtein"]["result"]["label"] == "pass"
    assert by_name["levenshtein"]["annotator_kind"] == "CODE"
    assert by_name["exact"]["result"]["label"] == "fail"
    # the output it was measured against, beside the score (Phoenix has no field for it)
    assert by_name["exact"]["metadata"]["expected"] == "Marie Curie was born in Warsaw."


def test_a_call_scored_and_sent_by_a_worker_process_reaches_phoenix_with_its_annotations(
    phoenix: Any, project: str, tmp_path: Path
) -> None:
    # The worker process sends the span over OTLP; the annotations go from this process, with
    # the results the worker sent back.
    tracesim.configure(
        service_name=project,
        exporters=["otlp"],
        otlp_endpoint=phoenix.http_endpoint,
        spool_dir=tmp_path / "spool",
        scoring_processes=1,
        scoring_export="workers",
    )
    answer = _make_agent()
    answer("Where was Marie Curie born?")
    assert tracesim.force_flush(120)
    assert tracesim.scoring_stats().written_by_workers == 1

    spans = phoenix.spans(project, min_count=3)
    assert len(spans) == 3
    scored = _check_trace(spans, "Where was Marie Curie born?")
    _check_scored(scored)
    annotations = phoenix.span_annotations(project, [scored["context"]["span_id"]], min_count=2)
    by_name = {a["name"]: a for a in annotations}
    assert by_name["levenshtein"]["result"]["score"] == pytest.approx(0.79)
    assert by_name["exact"]["result"]["label"] == "fail"
    assert by_name["exact"]["metadata"]["expected"] == "Marie Curie was born in Warsaw."


def test_human_feedback_reaches_phoenix_on_a_carrier_span(phoenix: Any, project: str) -> None:
    tracesim.configure(
        service_name=project, exporters=["otlp"], otlp_endpoint=phoenix.http_endpoint, spool_dir="none"
    )
    with tracesim.span("answer", kind="agent") as s:
        s.set_output("Warsaw")
    tracesim.score(s, name="user_rating", value=1.0, label="helpful", explanation="exactly right")
    assert tracesim.force_flush(60)
    spans = {sp["name"]: sp for sp in phoenix.spans(project, min_count=2)}
    carrier = spans["evaluation user_rating"]
    assert carrier["span_kind"] == "EVALUATOR"
    assert carrier["parent_id"] == spans["answer"]["context"]["span_id"]
    assert carrier["attributes"]["tracesim.eval.user_rating.label"] == "helpful"
    assert carrier["attributes"]["tracesim.evaluation.annotator_kind"] == "HUMAN"
    (event,) = carrier["events"]
    assert event["attributes"]["gen_ai.evaluation.explanation"] == "exactly right"
    # inside the answer's time: Phoenix's trace latency (first start to last end) stays the call's
    assert carrier["start_time"] == carrier["end_time"] == spans["answer"]["end_time"]
    # and, found to be Phoenix, the feedback is an annotation of the answer, where Phoenix shows it
    (annotation,) = phoenix.span_annotations(project, [spans["answer"]["context"]["span_id"]])
    assert (annotation["name"], annotation["annotator_kind"]) == ("user_rating", "HUMAN")
    assert annotation["result"] == {"score": 1.0, "label": "helpful", "explanation": "exactly right"}


def test_a_local_file_replayed_to_phoenix_gives_the_same_traces(
    phoenix: Any, project: str, tmp_path: Path
) -> None:
    tracesim.configure(service_name=project, jsonl_path="traces.jsonl")
    answer = _make_agent()
    answer("Where was Marie Curie born?")
    answer("Who painted the Mona Lisa?")
    tracesim.shutdown()
    local = load_spans(tmp_path / "traces.jsonl")
    assert len(local) == 6

    report = replay([tmp_path / "traces.jsonl"], endpoint=phoenix.http_endpoint)
    assert report.ok
    assert (report.phoenix, report.annotations) == (True, 2)  # levenshtein and exact; skipped ones are not
    (curie,) = [s for s in local if s.name == "answer" and s.attributes.get("tracesim.expected.value")]
    found = phoenix.span_annotations(project, [curie.span_id], min_count=2)
    assert {a["metadata"]["expected"] for a in found} == {"Marie Curie was born in Warsaw."}
    spans = phoenix.spans(project, min_count=6)
    assert {s["context"]["span_id"] for s in spans} == {s.span_id for s in local}
    _check_scored(_check_trace(spans, "Where was Marie Curie born?"))
    _check_skipped(_check_trace(spans, "Who painted the Mona Lisa?"))

    again = replay([tmp_path / "traces.jsonl"], endpoint=phoenix.http_endpoint)
    assert again.spans == 0  # the ledger knows every line was accepted
    assert again.already_sent == report.lines
    assert len(phoenix.all_spans(project)) == 6


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_the_standard_otel_variables_alone_send_an_unchanged_script_to_phoenix(
    phoenix: Any, protocol: str, tmp_path: Path
) -> None:
    """A user's script, untouched, pointed at Phoenix by the environment only."""
    import os
    import subprocess
    import sys

    example = Path(__file__).resolve().parents[2] / "examples" / "online_scoring" / "agent.py"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = (
        phoenix.grpc_endpoint if protocol == "grpc" else phoenix.http_endpoint
    )
    env["OTEL_EXPORTER_OTLP_PROTOCOL"] = protocol
    before = {s["context"]["span_id"] for s in phoenix.all_spans("support-bot")}
    result = subprocess.run(
        [sys.executable, str(example)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / ".tracesim" / "traces.jsonl").exists()  # an OTLP endpoint replaces the file
    spans = [
        s
        for s in phoenix.spans("support-bot", min_count=len(before) + 3)
        if s["context"]["span_id"] not in before
    ]
    by_question = {s["attributes"]["input.value"]: s for s in spans}
    assert set(by_question) == {
        "Where was Marie Curie born?",
        "What did Alan Turing propose in 1950?",
        "How high is Mount Everest?",
    }
    curie = by_question["Where was Marie Curie born?"]["attributes"]
    assert curie["tracesim.eval.levenshtein.score"] == pytest.approx(0.79)
    assert curie["tracesim.eval.rouge.passed"] is True
    assert by_question["How high is Mount Everest?"]["attributes"]["tracesim.eval.rouge.status"] == "skipped"
    if protocol == "http/protobuf":  # found to be Phoenix from the variable alone: annotations too
        curie_id = by_question["Where was Marie Curie born?"]["context"]["span_id"]
        names = {a["name"] for a in phoenix.span_annotations("support-bot", [curie_id], min_count=2)}
        assert {"levenshtein", "rouge"} <= names
