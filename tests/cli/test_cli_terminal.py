"""A trace file cannot drive the terminal: every untrusted string is shown, never obeyed.

Each payload (window title, clear screen, colours, carriage return, 8-bit CSI, bidi override)
goes into every place a trace file can put text: span name, span kind, input and output, status
message, service name, a group-by attribute, a custom attribute's name and value, evaluator name
and label, exception type, message and stack trace. Then each output (``show`` with its filters
and ``--attributes``, ``report`` tables, ``--json`` and ``--html``, the console exporter,
``replay`` and ``eval`` summaries) must contain none of the raw control characters, and show
the payload visibly.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from html import escape
from pathlib import Path

import pytest
from hostile import MARKUP_PAYLOADS, RAW_CONTROLS, TERMINAL_PAYLOADS, OtlpJsonSink
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter
from opentelemetry.trace import Status, StatusCode

from tracesim import _semconv as sc
from tracesim._terminal import visible
from tracesim.cli import main
from tracesim.exporters import ConsoleExporter, JsonlExporter

PAYLOADS = {**TERMINAL_PAYLOADS, **{f"markup-{i}": markup for i, markup in enumerate(MARKUP_PAYLOADS)}}


def _raw_controls(text: str) -> list[str]:
    return [c for c in RAW_CONTROLS if c in text]


def _preview(payload: str) -> str:
    """How a value shows in a tree: whitespace (``\\r`` included) collapsed, the rest made visible."""
    return visible(" ".join(payload.split()))


def _trace(exporter: SpanExporter, payload: str) -> None:
    """One agent span and one child, with ``payload`` in every field a reader shows."""
    provider = TracerProvider(resource=Resource.create({"service.name": payload}))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("tests.terminal")
    attributes = {
        sc.SPAN_KIND: "AGENT",
        "input.value": payload,
        "output.value": payload,
        "user.id": payload,
        f"custom.{payload}": payload,
    }
    frame = f'  File "{payload}.py", line 7, in {payload}\n    {payload}()'
    stack = f"Traceback (most recent call last):\n{frame}\nE: {payload}"
    with tracer.start_as_current_span(payload, attributes=attributes) as span:
        with tracer.start_as_current_span("child", attributes={sc.SPAN_KIND: payload}):
            pass
        result = {
            sc.EVALUATION_NAME: payload,
            sc.EVALUATION_SCORE_VALUE: 0.5,
            sc.EVALUATION_SCORE_LABEL: payload,
            sc.EVALUATION_PASSED: False,
            sc.EVALUATION_THRESHOLD: 0.8,
            sc.EVALUATION_STATUS: "ok",
        }
        span.add_event(sc.EVALUATION_EVENT, result)
        span.add_event(sc.EVALUATION_EVENT, {sc.EVALUATION_NAME: payload, sc.ERROR_TYPE: payload})
        exception: dict[str, str] = {
            "exception.type": "E",
            "exception.message": payload,
            "exception.stacktrace": stack,
        }
        span.add_event("exception", exception)
        span.set_status(Status(StatusCode.ERROR, payload))
    provider.shutdown()


@pytest.fixture(params=sorted(PAYLOADS))
def payload(request: pytest.FixtureRequest) -> str:
    return PAYLOADS[request.param]


@pytest.fixture
def trace_file(tmp_path: Path, payload: str) -> Path:
    path = tmp_path / "traces.jsonl"
    _trace(JsonlExporter(path), payload)
    return path


def test_show(trace_file: Path, payload: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(trace_file), "--attributes", "--width", "1000"]) == 0
    out = capsys.readouterr().out
    assert _raw_controls(out) == []
    assert out.splitlines()[1].startswith(f"{visible(payload)}  AGENT  ")
    for shown in (
        f"in: {_preview(payload)}",
        f"ERROR {visible(payload)}",
        f"child  {visible(payload)}",
        f"error: E: {_preview(payload)}",
        f'File "{_preview(payload)}.py", line 7, in {_preview(payload)}',
        f"{_preview(payload)}()",
        f"custom.{visible(payload)} = {_preview(payload)}",
    ):
        assert shown in out
    assert f"✗ {_preview(payload)} 0.5 {_preview(payload)}" in out
    assert f"! {_preview(payload)} error ({_preview(payload)})" in out


def test_show_filters_name_what_they_were_given(
    trace_file: Path, payload: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["show", str(trace_file), "--name", payload, "--failed", payload, "--trace", payload]) == 0
    out = capsys.readouterr().out
    assert _raw_controls(out) == []
    assert out.startswith("showing 0 of 1 trace (filters: --trace ")
    assert visible(payload) in out
    assert main(["show", str(trace_file), "--failed", f"{payload}-missing"]) == 2
    err = capsys.readouterr().err
    assert _raw_controls(err) == []
    assert f"(found: {visible(payload)})" in err


def _rows(table: str) -> list[list[str]]:
    return [
        [cell.strip() for cell in line.split("│")[1:-1]]
        for line in table.splitlines()
        if line.startswith("│")
    ]


def _shown(cell: str, payload: str) -> bool:
    """The cell shows ``payload`` made visible, whole: output that is not a terminal cuts no name."""
    return cell == visible(payload)


@pytest.mark.parametrize("group_by", ["service.name", "user.id"])
def test_report_tables(
    trace_file: Path, payload: str, group_by: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(trace_file), "--group-by", group_by]) == 0
    out = capsys.readouterr().out
    assert _raw_controls(out) == []
    spans, evaluators = out.split("\nEvaluators")
    assert sorted(row[:3] for row in _rows(spans)) == sorted(
        [
            [visible(payload), visible(payload), "AGENT"],  # group, span, kind
            [visible(payload), "child", visible(payload)],
        ]
    )
    [evaluator] = _rows(evaluators)[:1]
    assert all(_shown(cell, payload) for cell in evaluator[:3])  # group, evaluator, span
    assert _shown(evaluator[-1], payload + " 1")  # top labels


def test_report_json_is_exact_and_harmless(
    trace_file: Path, payload: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["report", str(trace_file), "--json", "--group-by", "service.name"]) == 0
    out = capsys.readouterr().out
    assert _raw_controls(out) == []
    document = json.loads(out)
    assert {row["name"] for row in document["spans"]} == {payload, "child"}
    assert {row["group"] for row in document["spans"]} == {payload}
    assert document["evaluators"][0]["name"] == payload
    assert document["evaluators"][0]["labels"] == {payload: 1}


def test_report_html(trace_file: Path, payload: str, tmp_path: Path) -> None:
    page_path = tmp_path / "report.html"
    assert main(["report", str(trace_file), "--html", str(page_path), "--group-by", "user.id"]) == 0
    page = page_path.read_text(encoding="utf-8")
    assert _raw_controls(page) == []
    assert f"<td>{escape(visible(payload))}</td>" in page
    assert f"<title>{escape(visible(payload))}" in page  # the latency chart's row title


def test_console_exporter(payload: str) -> None:
    stream = io.StringIO()
    _trace(ConsoleExporter(stream), payload)
    out = stream.getvalue()
    assert _raw_controls(out) == []
    assert out.startswith(f"{visible(payload)}  AGENT  ")
    assert f"out: {_preview(payload)}" in out


@pytest.fixture
def json_sink() -> Iterator[OtlpJsonSink]:
    server = OtlpJsonSink()
    try:
        yield server
    finally:
        server.close()


def test_replay_prints_an_endpoint_answer_as_text(
    trace_file: Path, payload: str, json_sink: OtlpJsonSink, capsys: pytest.CaptureFixture[str]
) -> None:
    json_sink.answer = (400, f"refused: {payload}".encode())
    assert main(["replay", str(trace_file), "--endpoint", json_sink.url, "--encoding", "json"]) == 1
    out = capsys.readouterr().out
    assert _raw_controls(out) == []
    assert f"HTTP 400: refused: {visible(payload)}" in out.replace("\n", "")


def test_eval_prints_names_and_paths_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.jsonl"
    data.write_text('{"output": "a", "expected": "a"}\n', encoding="utf-8")
    (tmp_path / "[").mkdir()
    out = tmp_path / "[" / "]o.jsonl"  # ".../[/]o.jsonl": a rich closing tag with nothing open
    assert main(["eval", str(data), "-e", "exact", "-o", str(out), "--no-progress"]) == 0
    printed = capsys.readouterr().out
    assert f"results: {out}" in printed.replace("\n", "")
    assert main(["eval", str(data), "-e", "exact:name=\x1b]0;pwned\x07", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert _raw_controls(err) == []
    assert "␛]0;pwned␇" in err
