"""``tracesim replay`` of a real trace file into a real Phoenix, twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tracesim import _semconv as sc
from tracesim.batch import replay
from tracesim.cli import main
from tracesim.exporters import JsonlExporter
from tracesim.tracefile import load_spans


def _write_trace_file(path: Path, project: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "replay", sc.PROJECT_NAME: project}))
    provider.add_span_processor(SimpleSpanProcessor(JsonlExporter(path)))
    tracer = provider.get_tracer("tracesim.replay")
    for question in ("q1", "q2", "q3"):
        with tracer.start_as_current_span("answer", attributes={sc.SPAN_KIND: "AGENT"}) as root:
            root.set_attribute(sc.INPUT_VALUE, question)
            with tracer.start_as_current_span("search", attributes={sc.SPAN_KIND: "TOOL", "hits": 2}):
                pass
            root.set_attribute(sc.OUTPUT_VALUE, f"answer to {question}")
            root.set_attribute(sc.eval_score("exact"), 1.0)
            root.add_event(sc.EVALUATION_EVENT, {sc.EVALUATION_NAME: "exact", sc.EVALUATION_SCORE_VALUE: 1.0})
            if question == "q3":
                root.set_status(trace.StatusCode.ERROR, "late")
        if question == "q2":  # feedback that came later, on a carrier span linked to the answer
            target = root.get_span_context()
            carrier = tracer.start_span(
                "evaluation thumbs",
                context=trace.set_span_in_context(trace.NonRecordingSpan(target)),
                links=[trace.Link(target)],
                attributes={sc.SPAN_KIND: "EVALUATOR", sc.EVALUATION_ANNOTATOR_KIND: "HUMAN"},
            )
            carrier.add_event(
                sc.EVALUATION_EVENT,
                {sc.EVALUATION_NAME: "thumbs", sc.EVALUATION_SCORE_LABEL: "up", sc.EVALUATION_STATUS: "ok"},
            )
            carrier.end()
    provider.shutdown()


def test_replayed_file_arrives_whole_and_a_second_replay_adds_nothing(
    phoenix: Any, project: str, tmp_path: Path
) -> None:
    path = tmp_path / "traces.jsonl"
    _write_trace_file(path, project)
    local = {s.span_id: s for s in load_spans(path)}
    assert len(local) == 7

    first = replay([path], endpoint=phoenix.http_endpoint, batch_size=4)
    # Phoenix takes only OTLP/protobuf: the first JSON post gets 415, the rest is converted.
    assert (first.ok, first.encoding, first.spans, first.lines) == (True, "protobuf", 7, 7)
    # ... and it is Phoenix: the results became annotations, the carrier's on the answer it rates
    assert (first.phoenix, first.annotations, first.failed_annotations) == (True, 4, 0)
    answers = {i: s for i, s in local.items() if s.name == "answer"}
    found = phoenix.span_annotations(project, list(answers), min_count=4)
    by_span = {(a["span_id"], a["name"]) for a in found}
    assert {(i, "exact") for i in answers} <= by_span
    (thumbs,) = [a for a in found if a["name"] == "thumbs"]
    (rated,) = [s for s in answers.values() if s.attributes[sc.INPUT_VALUE] == "q2"]
    assert (thumbs["span_id"], thumbs["result"]["label"], thumbs["annotator_kind"]) == (
        rated.span_id,
        "up",
        "HUMAN",
    )

    spans = phoenix.spans(project, min_count=7)
    assert {s["context"]["span_id"] for s in spans} == set(local)
    for span in spans:
        original = local[span["context"]["span_id"]]
        assert span["name"] == original.name
        assert span["parent_id"] == original.parent_span_id
        assert span["context"]["trace_id"] == original.trace_id
        expected_attributes = {k: v for k, v in original.attributes.items() if k != sc.SPAN_KIND}
        assert span["attributes"] == pytest.approx(expected_attributes)
        assert [(e["name"], e["attributes"]) for e in span["events"]] == [
            (e.name, dict(e.attributes)) for e in original.events
        ]
        assert span["status_code"] == original.status_code

    second = replay([path], endpoint=phoenix.http_endpoint)
    assert (second.ok, second.spans, second.already_sent, second.annotations) == (True, 0, 7, 0)
    # Even a forced re-send duplicates nothing: Phoenix keeps the first copy of a span id.
    assert main(["replay", str(path), "--endpoint", phoenix.http_endpoint, "--force"]) == 0
    # A sentinel sent after the forced replay: once Phoenix shows it, it has ingested the
    # re-sent copies before it (one ingestion queue, first in, first out).
    sentinel = tmp_path / "sentinel.jsonl"
    provider = TracerProvider(resource=Resource.create({sc.PROJECT_NAME: project}))
    provider.add_span_processor(SimpleSpanProcessor(JsonlExporter(sentinel)))
    provider.get_tracer("t").start_span("sentinel").end()
    provider.shutdown()
    assert replay([sentinel], endpoint=phoenix.http_endpoint, encoding="protobuf").ok
    again = phoenix.spans(project, min_count=8)
    ids = [s["context"]["span_id"] for s in again if s["name"] != "sentinel"]
    assert sorted(ids) == sorted(local)  # seven spans, none twice
    # the forced replay annotated again: an upsert, still one annotation per span and name
    assert len(phoenix.span_annotations(project, list(answers), min_count=4)) == 4
