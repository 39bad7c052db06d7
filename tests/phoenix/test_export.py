"""Spans with tracesim's attribute names, exported to a real Phoenix over OTLP/HTTP and gRPC."""

from __future__ import annotations

import json
from typing import Any

import pytest
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from tracesim import _semconv as sc
from tracesim.exporters import otlp_exporter


def _endpoint(phoenix: Any, protocol: str) -> str:
    return phoenix.grpc_endpoint if protocol == "grpc" else phoenix.http_endpoint


def _emit(provider: TracerProvider) -> dict[str, str]:
    """One agent call with a retriever child and a failing tool child; returns name -> span id."""
    tracer = provider.get_tracer("tracesim.tests")
    ids: dict[str, str] = {}
    with tracer.start_as_current_span("answer") as root:
        root.set_attributes(
            {
                sc.SPAN_KIND: "AGENT",
                sc.GEN_AI_OPERATION_NAME: "invoke_agent",
                sc.INPUT_VALUE: "Where was Marie Curie born?",
                sc.INPUT_MIME_TYPE: sc.MIME_TEXT,
                sc.OUTPUT_VALUE: "Warsaw",
                sc.EXPECTED_VALUE: "Warsaw, Poland",
                sc.eval_score("levenshtein"): 0.43,
                sc.eval_label("levenshtein"): "fail",
                sc.eval_passed("levenshtein"): False,
            }
        )
        root.add_event(
            sc.EVALUATION_EVENT,
            {
                sc.EVALUATION_NAME: "levenshtein",
                sc.EVALUATION_SCORE_VALUE: 0.43,
                sc.EVALUATION_SCORE_LABEL: "fail",
                sc.EVALUATION_EXPLANATION: "normalised edit similarity below 0.8",
                sc.EVALUATION_PASSED: False,
                sc.EVALUATION_THRESHOLD: 0.8,
                sc.EVALUATION_DETAILS: json.dumps({"distance": 8}),
            },
        )
        ids["answer"] = format(root.get_span_context().span_id, "016x")
        with tracer.start_as_current_span("retrieve", attributes={sc.SPAN_KIND: "RETRIEVER"}) as child:
            child.set_attribute(sc.INPUT_VALUE, "Marie Curie birthplace")
            ids["retrieve"] = format(child.get_span_context().span_id, "016x")
        with tracer.start_as_current_span("lookup", attributes={sc.SPAN_KIND: "TOOL"}) as tool:
            tool.record_exception(TimeoutError("search timed out"))
            tool.set_status(trace.StatusCode.ERROR, "search timed out")
            ids["lookup"] = format(tool.get_span_context().span_id, "016x")
    return ids


@pytest.mark.parametrize("protocol", ["http/protobuf", "grpc"])
def test_spans_arrive_with_names_links_attributes_events(phoenix: Any, project: str, protocol: str) -> None:
    provider = TracerProvider(resource=Resource.create({"service.name": "e2e", sc.PROJECT_NAME: project}))
    provider.add_span_processor(BatchSpanProcessor(otlp_exporter(protocol, _endpoint(phoenix, protocol))))
    ids = _emit(provider)
    provider.shutdown()

    spans = {s["name"]: s for s in phoenix.spans(project, min_count=3)}
    assert set(spans) == {"answer", "retrieve", "lookup"}
    root, retrieve, lookup = spans["answer"], spans["retrieve"], spans["lookup"]
    assert {name: s["context"]["span_id"] for name, s in spans.items()} == ids
    assert root["parent_id"] is None
    assert retrieve["parent_id"] == lookup["parent_id"] == ids["answer"]
    assert len({s["context"]["trace_id"] for s in spans.values()}) == 1

    # Phoenix lifts openinference.span.kind out of the attributes into span_kind.
    assert (root["span_kind"], retrieve["span_kind"], lookup["span_kind"]) == ("AGENT", "RETRIEVER", "TOOL")
    attributes = root["attributes"]
    assert attributes[sc.INPUT_VALUE] == "Where was Marie Curie born?"
    assert attributes[sc.OUTPUT_VALUE] == "Warsaw"
    assert attributes[sc.EXPECTED_VALUE] == "Warsaw, Poland"
    assert attributes[sc.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert attributes[sc.eval_score("levenshtein")] == pytest.approx(0.43)
    assert attributes[sc.eval_label("levenshtein")] == "fail"
    assert attributes[sc.eval_passed("levenshtein")] is False

    (event,) = root["events"]
    assert event["name"] == sc.EVALUATION_EVENT
    assert event["attributes"] == {
        sc.EVALUATION_NAME: "levenshtein",
        sc.EVALUATION_SCORE_VALUE: pytest.approx(0.43),
        sc.EVALUATION_SCORE_LABEL: "fail",
        sc.EVALUATION_EXPLANATION: "normalised edit similarity below 0.8",
        sc.EVALUATION_PASSED: False,
        sc.EVALUATION_THRESHOLD: pytest.approx(0.8),
        sc.EVALUATION_DETAILS: '{"distance": 8}',
    }
    assert (lookup["status_code"], lookup["status_message"]) == ("ERROR", "search timed out")
    (exception,) = lookup["events"]
    assert exception["name"] == "exception"
    assert exception["attributes"]["exception.type"] == "TimeoutError"
