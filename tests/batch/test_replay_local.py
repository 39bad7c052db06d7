"""tracesim replay against a scripted loopback OTLP/HTTP endpoint (Phoenix-like: 415 for JSON)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from _scored import write_scored_file
from opentelemetry.sdk.trace import ReadableSpan
from secret_kinds import SECRETS

from tracesim import _outputs
from tracesim.batch import replay
from tracesim.cli import main
from tracesim.exporters import JsonlExporter

if TYPE_CHECKING:
    from otlp_sink import OtlpSink

Batch = Callable[..., list[ReadableSpan]]


@pytest.fixture
def trace_file(tmp_path: Path, make_batch: Batch) -> Path:
    path = tmp_path / "traces.jsonl"
    exporter = JsonlExporter(path)
    for i in range(4):
        exporter.export(make_batch(f"r{i}"))
    exporter.shutdown()
    return path


def _all_names() -> list[str]:
    return [f"r{i}-{j}" for i in range(4) for j in range(3)]


def test_json_endpoint_gets_each_line_byte_for_byte(sink: OtlpSink, trace_file: Path) -> None:
    sink.accept_json = True
    report = replay([trace_file], endpoint=sink.url, batch_size=3)
    assert (report.ok, report.requests, report.spans, report.encoding) == (True, 4, 12, "json")
    assert sink.bodies == [line.rstrip(b"\n") for line in trace_file.read_bytes().splitlines(keepends=True)]
    assert set(sink.content_types) == {"application/json"}


def test_protobuf_only_endpoint_gets_converted_requests_after_a_415(sink: OtlpSink, trace_file: Path) -> None:
    report = replay([trace_file], endpoint=sink.url.removesuffix("/v1/traces"), batch_size=100)
    assert (report.ok, report.encoding, report.requests, report.lines) == (True, "protobuf", 1, 4)
    assert sorted(sink.delivered_names) == sorted(_all_names())
    assert sink.content_types == ["application/json", "application/x-protobuf"]


def test_rerun_sends_nothing_twice_and_force_sends_again(sink: OtlpSink, trace_file: Path) -> None:
    first = replay([trace_file], endpoint=sink.url, batch_size=3)
    second = replay([trace_file], endpoint=sink.url, batch_size=3)
    assert (first.spans, second.spans, second.already_sent, second.requests) == (12, 0, 4, 0)
    assert second.already_sent_spans == 12  # counted in spans, as everything else is
    assert len(sink.delivered_names) == 12
    forced = replay([trace_file], endpoint=sink.url, batch_size=3, force=True)
    assert forced.spans == 12
    ledger = [
        json.loads(line) for line in trace_file.with_name("traces.jsonl.replayed").read_text().splitlines()
    ]
    assert {entry["endpoint"] for entry in ledger} == {sink.url}


def test_a_run_that_failed_half_way_resumes_with_what_was_not_accepted(
    sink: OtlpSink, trace_file: Path
) -> None:
    sink.reject = lambda names: 400 if names[0].startswith(("r1", "r3")) else None
    first = replay([trace_file], endpoint=sink.url, batch_size=3, encoding="protobuf")
    assert (first.ok, first.spans, first.failed_requests, first.failed_spans) == (False, 6, 2, 6)
    assert any("HTTP 400" in p for p in first.problems)
    sink.reject = lambda names: None
    second = replay([trace_file], endpoint=sink.url, batch_size=3, encoding="protobuf")
    assert (second.ok, second.spans, second.already_sent) == (True, 6, 2)
    assert sorted(sink.delivered_names) == sorted(_all_names())  # each span exactly once


def test_429_and_5xx_are_retried(sink: OtlpSink, trace_file: Path) -> None:
    sink.script = [429, 503, 500]
    report = replay([trace_file], endpoint=sink.url, batch_size=100, encoding="protobuf")
    assert (report.ok, report.spans) == (True, 12)


def test_unreachable_endpoint_fails_after_retries(trace_file: Path) -> None:
    report = replay([trace_file], endpoint="http://127.0.0.1:9/v1/traces", batch_size=100, max_attempts=2)
    assert (report.ok, report.failed_requests, report.failed_spans) == (False, 1, 12)
    assert "ConnectError" in report.problems[0]


def test_bad_lines_are_skipped_and_counted(sink: OtlpSink, trace_file: Path) -> None:
    with open(trace_file, "ab") as f:
        f.write(b'{"not": "otlp"}\n{"resourceSpans": [{"scopeSp')  # a torn last line
    report = replay([trace_file], endpoint=sink.url, encoding="protobuf")
    assert (report.ok, report.spans, report.skipped_lines) == (True, 12, 2)
    assert any("torn last line" in p for p in report.problems)


def test_endpoint_and_headers_come_from_the_standard_variables(
    sink: OtlpSink, trace_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", sink.url.removesuffix("/v1/traces"))
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=a%20b")
    report = replay([trace_file], headers={"x-extra": "1"})
    assert (report.ok, report.endpoint) == (True, sink.url)
    assert sink.headers[-1]["x-team"] == "a b"
    assert sink.headers[-1]["x-extra"] == "1"


def test_cli_prints_a_summary_and_sets_the_exit_status(
    sink: OtlpSink, trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["replay", str(trace_file), "--endpoint", sink.url, "--headers", "api_key=k"]) == 0
    out = capsys.readouterr().out
    assert sink.headers[-1]["api_key"] == "k"
    assert "spans sent" in out
    assert "12" in out
    assert "protobuf" in out
    sink.status = 400
    assert main(["replay", str(trace_file), "--endpoint", sink.url, "--force", "--encoding", "protobuf"]) == 1
    assert "run the same command again" in capsys.readouterr().out
    assert main(["replay", str(trace_file.with_name("missing.jsonl"))]) == 2


def test_rotated_lines_are_not_sent_again(sink: OtlpSink, tmp_path: Path, make_batch: Batch) -> None:
    path = tmp_path / "traces.jsonl"
    exporter = JsonlExporter(path)
    for i in range(4):
        exporter.export(make_batch(f"a{i}"))
    exporter.shutdown()
    assert replay([path], endpoint=sink.url, encoding="protobuf").spans == 12
    path.rename(tmp_path / "traces.1.jsonl")  # what rotation does
    exporter = JsonlExporter(path)
    for i in range(2):
        exporter.export(make_batch(f"b{i}"))
    exporter.shutdown()
    again = replay([tmp_path / "traces.1.jsonl", path], endpoint=sink.url, encoding="protobuf")
    assert (again.ok, again.spans, again.already_sent) == (True, 6, 4)
    assert len(sink.span_ids) == len(set(sink.span_ids)) == 18  # every span exactly once
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "traces.1.jsonl",
        "traces.jsonl",
        "traces.jsonl.replayed",
    ]


def test_replaying_while_the_exporter_rotates_sends_every_span_once(
    sink: OtlpSink, tmp_path: Path, make_batch: Batch
) -> None:
    path = tmp_path / "traces.jsonl"
    exporter = JsonlExporter(path, max_bytes=4096, backups=3)  # a batch line is ~1.5 KB
    files = [path, *(path.with_name(f"traces.{i}.jsonl") for i in (3, 2, 1))]
    for round_ in range(8):
        for i in range(3):
            exporter.export(make_batch(f"r{round_}-{i}"))
        report = replay([f for f in files if f.is_file()], endpoint=sink.url, encoding="protobuf")
        assert report.ok
    exporter.shutdown()
    assert len(sink.span_ids) == len(set(sink.span_ids)) == 8 * 3 * 3


def test_a_ledger_from_before_content_keys_still_counts(
    sink: OtlpSink, trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The old ledger: one per file, keyed by offset, length and the first 16 hex of SHA-256.
    offset, entries = 0, []
    for raw in trace_file.read_bytes().splitlines(keepends=True):
        entries.append(
            {"endpoint": sink.url, "line": f"{offset}:{len(raw)}:{hashlib.sha256(raw).hexdigest()[:16]}"}
        )
        offset += len(raw)
    trace_file.with_name("traces.jsonl.replayed").write_text(
        "".join(json.dumps(e) + "\n" for e in entries[:2])
    )
    rotated = trace_file.rename(trace_file.with_name("traces.1.jsonl"))
    report = replay([rotated], endpoint=sink.url, encoding="protobuf")
    assert (report.already_sent, report.lines) == (2, 2)
    assert sorted(sink.delivered_names) == [f"r{i}-{j}" for i in (2, 3) for j in range(3)]
    assert main(["report", str(rotated.parent), "--json"]) == 0  # the ledger is no trace file
    assert json.loads(capsys.readouterr().out)["totals"]["spans"] == 12


def test_a_damaged_ledger_costs_a_resend_not_a_crash(sink: OtlpSink, trace_file: Path) -> None:
    ledger = trace_file.with_name("traces.jsonl.replayed")
    ledger.write_text('[1, 2]\n"text"\n{"endpoint": 5}\n' + "[" * 100_000 + "\n{torn")
    assert replay([trace_file], endpoint=sink.url, encoding="protobuf").spans == 12
    ledger.unlink()
    ledger.mkdir()  # cannot be read or written: replay still works, it just cannot resume
    assert replay([trace_file], endpoint=sink.url, encoding="protobuf").spans == 12


def test_results_replayed_to_a_collector_that_is_not_phoenix_stay_on_the_spans(
    sink: OtlpSink, tmp_path: Path, make_batch: Batch
) -> None:
    path = write_scored_file(tmp_path / "scored.jsonl", {"exact": 1.0})

    asked = replay([path], endpoint=sink.url)  # asks GET /arize_phoenix_version: 501 here
    assert (asked.ok, asked.spans, asked.phoenix, asked.annotations) == (True, 1, False, 0)
    assert len(sink.headers) == 2  # the 415 and the converted request: no annotation was posted
    off = replay([path], endpoint=sink.url, force=True, annotations=False)
    assert (off.ok, off.spans, off.phoenix) == (True, 1, None)


@pytest.mark.parametrize("kind", sorted(SECRETS))
def test_a_secret_in_the_endpoint_is_in_no_ledger_line_or_console_line_and_replay_resumes(
    sink: OtlpSink, trace_file: Path, kind: str, capsys: pytest.CaptureFixture[str]
) -> None:
    secret, fragment = SECRETS[kind]
    url = (
        sink.url.replace("http://", "http://admin:hunter2pass@")
        if kind == "url_password"
        else f"{sink.url}?note={secret}"
    )
    replayed = ["replay", str(trace_file), "--endpoint", url, "--encoding", "protobuf"]

    assert main(replayed) == 0
    first = capsys.readouterr()
    assert main(replayed) == 0
    second = capsys.readouterr()

    ledger = trace_file.with_name("traces.jsonl.replayed").read_text(encoding="utf-8")
    for where, text in {
        "ledger": ledger,
        "first": first.out + first.err,
        "again": second.out + second.err,
    }.items():
        assert fragment not in text, (where, text)
    assert sorted(sink.delivered_names) == sorted(_all_names())  # once: the second run resumed
    assert "spans sent before (ledger)" in second.out
    assert {json.loads(line)["endpoint"] for line in ledger.splitlines()} == {_outputs.text(url)}


def test_an_older_ledger_with_the_password_in_the_clear_still_resumes(
    sink: OtlpSink, trace_file: Path
) -> None:
    url = sink.url.replace("http://", "http://admin:hunter2pass@")
    keys = [hashlib.sha256(line.rstrip(b"\r\n")).hexdigest() for line in trace_file.read_bytes().splitlines()]
    older = "".join(json.dumps({"endpoint": url, "sha256": key}) + "\n" for key in keys)
    trace_file.with_name("traces.jsonl.replayed").write_text(older, encoding="utf-8")

    report = replay([trace_file], endpoint=url, encoding="protobuf")

    assert (report.spans, report.already_sent) == (0, 4)
    assert sink.delivered_names == []


def test_a_refused_endpoint_with_a_password_is_reported_without_it(
    trace_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from otlp_sink import refused_url

    url = refused_url().replace("http://", "http://admin:hunter2pass@")
    with trace_file.open("r+b") as handle:  # one line: one request, retried
        first = handle.readline()
        handle.seek(0)
        handle.truncate()
        handle.write(first)

    assert main(["replay", str(trace_file), "--endpoint", url, "--encoding", "protobuf"]) == 1

    captured = capsys.readouterr()
    assert "spans not sent to http://admin:[REDACTED:password]@127.0.0.1:" in " ".join(captured.out.split())
    assert "hunter2pass" not in captured.out + captured.err
