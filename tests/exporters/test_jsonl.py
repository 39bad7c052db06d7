"""The local trace file: OTLP/JSON encoding rules, rotation, torn lines, several writers."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto_json.collector.trace.v1.trace_service import ExportTraceServiceRequest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

import tracesim
from tracesim.exporters import JsonlExporter
from tracesim.tracefile import TraceFileWarning, load_spans, read_jsonl, rotated_files

RunPython = Callable[..., "subprocess.CompletedProcess[str]"]


HEX32 = re.compile(r"^[0-9a-f]{32}$")
HEX16 = re.compile(r"^[0-9a-f]{16}$")
ANY_VALUE_KEYS = {
    "stringValue",
    "boolValue",
    "intValue",
    "doubleValue",
    "arrayValue",
    "kvlistValue",
    "bytesValue",
}


def _check_any_value(value: dict[str, Any]) -> None:
    assert len(value) == 1, value
    assert set(value) <= ANY_VALUE_KEYS, value
    if "intValue" in value:
        assert isinstance(value["intValue"], str)
        assert re.fullmatch(r"-?\d+", value["intValue"])
    if "doubleValue" in value:
        assert isinstance(value["doubleValue"], (int, float, str))
    if "arrayValue" in value:
        for item in value["arrayValue"].get("values", []):
            _check_any_value(item)


def _check_attributes(attributes: list[dict[str, Any]]) -> None:
    for attribute in attributes:
        assert set(attribute) == {"key", "value"}
        assert isinstance(attribute["key"], str)
        _check_any_value(attribute["value"])


def _check_span(span: dict[str, Any]) -> None:
    assert HEX32.match(span["traceId"])
    assert HEX16.match(span["spanId"])
    if "parentSpanId" in span:
        assert HEX16.match(span["parentSpanId"])
    assert isinstance(span["kind"], int)  # enums as integers
    for key in ("startTimeUnixNano", "endTimeUnixNano"):
        assert isinstance(span[key], str)  # 64-bit integers as strings
        assert span[key].isdigit()
    assert int(span["endTimeUnixNano"]) >= int(span["startTimeUnixNano"])
    _check_attributes(span.get("attributes", []))
    for event in span.get("events", []):
        assert event["timeUnixNano"].isdigit()
        _check_attributes(event.get("attributes", []))
    status = span.get("status", {})
    assert set(status) <= {"code", "message"}
    if "code" in status:
        assert isinstance(status["code"], int)


def test_the_file_holds_one_otlp_json_export_request_per_line(tmp_path: Path) -> None:
    tracesim.configure(service_name="rules", jsonl_path="t.jsonl")

    @tracesim.trace(kind="tool", attributes={"weights": [0.5, 1.5], "enabled": True, "retries": 3})
    def lookup(city: str) -> dict[str, str]:
        return {"city": city}

    @tracesim.trace(kind="agent")
    def agent(question: str) -> dict[str, str]:
        with pytest.raises(KeyError), tracesim.span("failing"):
            raise KeyError("missing")
        return lookup("Warsaw")

    agent("Where?")
    tracesim.force_flush()
    raw_lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert raw_lines
    spans: list[dict[str, Any]] = []
    for line in raw_lines:
        request = json.loads(line)
        # the official OTLP/JSON model accepts the line as an ExportTraceServiceRequest
        assert ExportTraceServiceRequest.from_dict(request).resource_spans
        for resource_spans in request["resourceSpans"]:
            _check_attributes(resource_spans["resource"]["attributes"])
            for scope_spans in resource_spans["scopeSpans"]:
                assert scope_spans["scope"]["name"] == "tracesim"
                spans.extend(scope_spans["spans"])
    for span in spans:
        _check_span(span)
    by_name = {s["name"]: s for s in spans}
    assert by_name["lookup"]["parentSpanId"] == by_name["agent"]["spanId"]
    assert by_name["failing"]["status"]["code"] == 2  # STATUS_CODE_ERROR
    attributes = {a["key"]: a["value"] for a in by_name["lookup"]["attributes"]}
    assert attributes["retries"] == {"intValue": "3"}
    assert attributes["enabled"] == {"boolValue": True}
    assert attributes["weights"] == {"arrayValue": {"values": [{"doubleValue": 0.5}, {"doubleValue": 1.5}]}}
    assert attributes["openinference.span.kind"] == {"stringValue": "TOOL"}
    # and tracesim's reader decodes the same file
    decoded = {s.name: s for s in load_spans(tmp_path / "t.jsonl")}
    assert decoded["lookup"].attributes["retries"] == 3
    assert decoded["failing"].status_code == "ERROR"
    assert decoded["agent"].resource["service.name"] == "rules"


def _provider(exporter: JsonlExporter) -> TracerProvider:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider


def test_the_file_rotates_by_size_and_keeps_a_bounded_number_of_backups(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    exporter = JsonlExporter(path, max_bytes=4096, backups=2)
    tracer = _provider(exporter).get_tracer("t")
    for i in range(200):
        with tracer.start_as_current_span(f"s{i}", attributes={"payload": "x" * 200}):
            pass
    exporter.shutdown()
    files = rotated_files(path, 2)
    assert all(f.exists() for f in files)
    assert not path.with_name("t.3.jsonl").exists()
    for f in files:
        assert f.stat().st_size <= 4096
    names = [s.name for f in reversed(files) for s in load_spans(f)]
    # the newest spans survive, in order, without gaps
    assert names == [f"s{i}" for i in range(200 - len(names), 200)]


def test_a_torn_last_line_is_skipped_with_a_warning_and_terminated_before_appending(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    exporter = JsonlExporter(path)
    tracer = _provider(exporter).get_tracer("t")
    with tracer.start_as_current_span("before-crash"):
        pass
    exporter.shutdown()
    with open(path, "a") as f:
        f.write('{"resourceSpans":[{"resource":')  # a writer died mid-line
    with pytest.warns(TraceFileWarning, match="torn last line"):
        assert [s.name for s in load_spans(path)] == ["before-crash"]

    restarted = JsonlExporter(path)
    tracer = _provider(restarted).get_tracer("t")
    with tracer.start_as_current_span("after-restart"):
        pass
    restarted.shutdown()
    with pytest.warns(TraceFileWarning, match=r"t.jsonl:2: skipped unreadable line"):
        assert [s.name for s in load_spans(path)] == ["before-crash", "after-restart"]


def test_a_line_torn_by_another_writer_while_the_file_is_open_is_terminated_first(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    exporter = JsonlExporter(path)
    tracer = _provider(exporter).get_tracer("t")
    with tracer.start_as_current_span("first"):
        pass
    with open(path, "a") as f:
        f.write('{"resourceSpans":[{"resource":')  # another process died mid-line
    with tracer.start_as_current_span("second"):  # the exporter still has the file open
        pass
    exporter.shutdown()
    # "second" is on a line of its own, not glued to the torn one (which would lose both)
    with pytest.warns(TraceFileWarning, match=r"t.jsonl:2: skipped unreadable line"):
        assert [s.name for s in load_spans(path)] == ["first", "second"]


def test_a_line_that_is_json_but_not_otlp_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text('[1, 2]\n{"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "no ids"}]}]}]}\n')
    with pytest.warns(TraceFileWarning):
        assert load_spans(path) == []
    with pytest.warns(TraceFileWarning, match="not a JSON object"):
        assert list(read_jsonl(path)) == [
            {"resourceSpans": [{"scopeSpans": [{"spans": [{"name": "no ids"}]}]}]}
        ]


def test_several_processes_can_append_to_one_file(tmp_path: Path, run_python: RunPython) -> None:
    code = """
import sys
import tracesim
tracesim.configure(jsonl_path="shared.jsonl", jsonl_max_bytes=20000, jsonl_backups=100, batch_export=False)
@tracesim.trace
def work(tag):
    return tag
for i in range(150):
    work(f"{sys.argv[1]}-{i}")
"""
    import subprocess
    import sys

    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(p)], cwd=tmp_path, stderr=subprocess.PIPE, text=True
        )
        for p in range(4)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
    files = [f for f in rotated_files(tmp_path / "shared.jsonl", 100) if f.exists()]
    assert len(files) > 1  # rotation happened while four writers were active
    tags = [s.attributes["input.value"] for f in files for s in load_spans(f)]
    assert sorted(tags) == sorted(f"{p}-{i}" for p in range(4) for i in range(150))


def test_bad_exporter_arguments_fail_early(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        JsonlExporter(tmp_path / "t.jsonl", max_bytes=0)
    with pytest.raises(ValueError, match="backups"):
        JsonlExporter(tmp_path / "t.jsonl", backups=-1)


def test_pathological_lines_are_skipped_with_their_line_number_and_reading_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    exporter = JsonlExporter(path)
    tracer = _provider(exporter).get_tracer("t")
    for name in ("first", "half", "last"):
        with tracer.start_as_current_span(name):
            pass
    exporter.shutdown()
    first, half, last = path.read_text().splitlines()
    # One request with two spans whose second one has a start time no integer can hold.
    request = json.loads(half)
    spans = request["resourceSpans"][0]["scopeSpans"][0]["spans"]
    spans.append({**spans[0], "name": "broken", "startTimeUnixNano": "HUGE"})
    overflowing = json.dumps(request).replace('"HUGE"', "1e999")
    path.write_text("\n".join([first, "[" * 100_000, '{"resourceSpans": 5}', overflowing, last]) + "\n")

    with pytest.warns(TraceFileWarning) as caught:
        names = [s.name for s in load_spans(path)]
    assert names == ["first", "last"]  # no half of a damaged line either
    messages = [str(w.message) for w in caught]
    assert [m.split(": skipped")[0] for m in messages] == [f"{path}:{n}" for n in (2, 3, 4)]
    assert "a line of JSON nested deeper than 256 levels (the limit on nesting)" in messages[0]

    with pytest.warns(TraceFileWarning, match=r"t.jsonl:2: skipped a line of JSON nested deeper than 256"):
        assert len(list(read_jsonl(path))) == 4
