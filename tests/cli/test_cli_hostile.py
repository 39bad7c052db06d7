"""One pathological line never stops ``show``, ``report``, ``replay`` or ``eval``.

Each bad line sits between two good ones: the command exits 0, the good spans or rows are
still processed, and a warning names the bad line (``FILE:2``). Lines that are odd but legal
OTLP/JSON are read, not skipped. The decoder itself refuses bad input with `ValueError` only.
"""

from __future__ import annotations

import contextlib
import doctest
import importlib
import io
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hostile import BAD_LINES, GOOD_NAMES, ODD_LINES, OtlpJsonSink, good_line, sandwich
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from tracesim.cli import main
from tracesim.exporters import ConsoleExporter
from tracesim.tracefile import spans_from_request
from tracesim.tracefile._sdk_spans import readable_spans, request_to_protobuf


@pytest.fixture(scope="module")
def _module_sink() -> Iterator[OtlpJsonSink]:
    server = OtlpJsonSink()  # one server for the module: starting and stopping one costs ~0.5 s
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def json_sink(_module_sink: OtlpJsonSink) -> OtlpJsonSink:
    _module_sink.names.clear()
    return _module_sink


def _parse(text: str) -> Any:
    return json.loads(text)


# What the decoder's messages say: the field and what is wrong with it.
_REFUSAL = r"must be|out of range|nested more than|not base64"


# -- the decoder --------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_the_decoder_refuses_each_bad_line_with_a_value_error(name: str) -> None:
    try:
        request = _parse(BAD_LINES[name])
    except (ValueError, RecursionError):
        return  # not JSON (or too deep for json): the readers' own concern, tested below
    with pytest.raises(ValueError, match=_REFUSAL):
        list(spans_from_request(request))
    with pytest.raises(ValueError, match=_REFUSAL):
        readable_spans(request)


@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_protobuf_conversion_refuses_bad_lines_with_a_value_error_only(name: str) -> None:
    try:
        request = _parse(BAD_LINES[name])
    except (ValueError, RecursionError):
        return
    with contextlib.suppress(ValueError):  # some bad lines are valid protobuf JSON: no error is fine too
        request_to_protobuf(request)


@pytest.mark.parametrize("name", sorted(ODD_LINES))
def test_the_decoder_reads_odd_but_legal_lines(name: str) -> None:
    [record] = spans_from_request(_parse(ODD_LINES[name]))
    assert record.trace_id == "3d5e5a41160e97cc59c387360d4ea56f"
    assert len(readable_spans(_parse(ODD_LINES[name]))) == 1
    assert record.name.encode("utf-8")  # a lone surrogate is kept as visible text, not as itself


# -- every reader, every bad line ------------------------------------------------------------


def _show(path: Path, capsys: pytest.CaptureFixture[str], _: OtlpJsonSink) -> tuple[str, str, list[str]]:
    assert main(["show", str(path)]) == 0
    out, err = capsys.readouterr()
    # Every span of these files is a root: its headline starts the line, with its name.
    headlines = [
        line
        for line in out.splitlines()
        if line and line[0] not in " │├└" and not line.startswith(("trace ", "showing "))
    ]
    return out, err, [line.split("  ")[0] for line in headlines]


def _report(path: Path, capsys: pytest.CaptureFixture[str], _: OtlpJsonSink) -> tuple[str, str, list[str]]:
    html = path.with_suffix(".html")
    assert main(["report", str(path), "--json", "--html", str(html)]) == 0
    out, err = capsys.readouterr()
    names = [row["name"] for row in json.loads(out)["spans"]]
    page = html.read_text(encoding="utf-8")
    assert all(f"<td>{name}</td>" in page for name in GOOD_NAMES)
    return out, err, names


def _report_tables(
    path: Path, capsys: pytest.CaptureFixture[str], _: OtlpJsonSink
) -> tuple[str, str, list[str]]:
    assert main(["report", str(path), "--group-by", "service.name"]) == 0
    out, err = capsys.readouterr()
    rows = [line.split("│") for line in out.splitlines() if line.startswith("│")]
    return out, err, [cells[2].strip() for cells in rows]


def _replay(path: Path, capsys: pytest.CaptureFixture[str], sink: OtlpJsonSink) -> tuple[str, str, list[str]]:
    assert main(["replay", str(path), "--endpoint", sink.url]) == 0
    out, err = capsys.readouterr()
    return out, err, list(sink.names)


READERS = {"show": _show, "report": _report, "report-tables": _report_tables, "replay": _replay}


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("name", sorted(BAD_LINES))
def test_a_bad_line_is_skipped_with_a_warning_and_the_rest_is_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], json_sink: OtlpJsonSink, reader: str, name: str
) -> None:
    path = sandwich(tmp_path / "traces.jsonl", BAD_LINES[name])
    out, err, seen = READERS[reader](path, capsys, json_sink)
    assert sorted(seen) == sorted(GOOD_NAMES)
    assert f"{path}:2" in out + err
    assert "Traceback" not in err


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("name", sorted(ODD_LINES))
def test_an_odd_but_legal_line_is_read_like_any_other(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], json_sink: OtlpJsonSink, reader: str, name: str
) -> None:
    path = sandwich(tmp_path / "traces.jsonl", ODD_LINES[name])
    out, err, seen = READERS[reader](path, capsys, json_sink)
    assert len(seen) == 3, (out, err)
    assert f"{path}:2" not in out + err


def test_a_parent_chain_deeper_than_the_stack_is_shown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "chain.jsonl"
    with path.open("w", encoding="utf-8") as f:
        for i in range(3000):  # each span the parent of the next: recursion would overflow
            span: dict[str, Any] = json.loads(good_line(f"s{i}", f"{i + 1:016x}"))
            body = span["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
            if i:
                body["parentSpanId"] = f"{i:016x}"
            f.write(json.dumps(span) + "\n")
    assert main(["show", str(path), "--no-details"]) == 0
    out = capsys.readouterr().out
    assert all(f"s{i}  " in out for i in (0, 1500, 2999))
    assert main(["report", str(path), "--group-by", "user.id", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["totals"]["spans"] == 3000


# -- as a user runs them: a real process, every bad and odd line in one file ------------------


def _tracesim(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
    return subprocess.run(
        [sys.executable, "-m", "tracesim", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_no_traceback_from_a_real_process(tmp_path: Path, json_sink: OtlpJsonSink) -> None:
    path = tmp_path / "all.jsonl"
    lines = [good_line(GOOD_NAMES[0], "1111111111111111")]
    for i, middle in enumerate([*BAD_LINES.values(), *ODD_LINES.values()]):
        lines += [middle, good_line(f"good-{i}", f"{0x4000 + i:016x}")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    for args in (["show"], ["report"], ["report", "--json"], ["replay", "--endpoint", json_sink.url]):
        done = _tracesim(*args, str(path), cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        assert "good-before" in done.stdout or args[0] == "replay"
        assert f"{path}:2:" in done.stdout + done.stderr  # the first bad line is named
    assert len(json_sink.names) == 1 + len(BAD_LINES) + 2 * len(ODD_LINES)


# -- eval: hostile rows ----------------------------------------------------------------------


BAD_ROWS = {
    "deep-array": b"[" * 100_000,
    "deep-object": b'{"output": ' * 100_000,
    "not-an-object": b"[1, 2]",
    "not-utf8": b'{"output": "\xff"}',
}
ODD_ROWS = {
    "output-1e999": '{"output": 1e999, "expected": "x"}',
    "expected-minus-1e999": '{"output": "x", "expected": -1e999}',
    "nan-everywhere": '{"id": NaN, "output": NaN, "expected": NaN, "input": NaN}',
    "id-1e999": '{"id": 1e999, "output": "x", "expected": "x"}',
    "output-nested-300": '{"output": ' + "[" * 300 + "]" * 300 + ', "expected": "x"}',
    "id-nested-300": '{"id": ' + "[" * 300 + "]" * 300 + ', "output": "x", "expected": "x"}',
    "id-lone-surrogate": '{"id": "\\ud800", "output": "x", "expected": "x"}',
    "huge-int": '{"output": ' + "9" * 4000 + ', "expected": "x"}',
}


def _strict(line: str) -> Any:
    def refuse(token: str) -> Any:
        raise ValueError(f"{token} is not JSON")

    return json.loads(line, parse_constant=refuse)


def test_eval_skips_bad_rows_scores_odd_ones_and_writes_strict_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "rows.jsonl"
    odd = [row.encode() for row in ODD_ROWS.values()]
    rows = [b'{"id": "first", "output": "Paris", "expected": "Paris"}', *BAD_ROWS.values(), *odd]
    rows.append(b'{"id": "last", "output": "Lyon", "expected": "Paris"}')
    data.write_bytes(b"\n".join(rows) + b"\n")
    out = tmp_path / "scores.jsonl"
    code = main(["eval", str(data), "-e", "exact", "-e", "levenshtein", "-o", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "Traceback" not in err
    lines = [_strict(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [line["line"] for line in lines] == list(range(1, len(rows) + 1))
    bad = [line["line"] for line in lines if line.get("status") == "bad_row"]
    assert bad == list(range(2, 2 + len(BAD_ROWS)))
    for number in bad:
        assert f"line {number}:" in err
    scored = [line for line in lines if "results" in line]
    assert len(scored) == 2 + len(ODD_ROWS)
    assert scored[0]["results"]["exact"]["score"] == 1.0
    assert scored[-1]["results"]["exact"]["score"] == 0.0
    by_line = {line["line"]: line for line in lines}
    first_odd = 2 + len(BAD_ROWS)
    assert by_line[first_odd + list(ODD_ROWS).index("id-1e999")]["id"] is None  # no Infinity token
    assert by_line[first_odd + list(ODD_ROWS).index("id-lone-surrogate")]["id"] == "\ud800"


@pytest.mark.parametrize("workers", ["1", "2"])
def test_eval_results_to_stdout_stay_strict_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], workers: str
) -> None:
    data = tmp_path / "rows.jsonl"
    rows = list(ODD_ROWS.values()) * 10  # more than one chunk, so two workers both score
    data.write_text("\n".join(rows) + "\n", encoding="utf-8")
    assert main(["eval", str(data), "-e", "exact", "-o", "-", "--no-progress", "--workers", workers]) == 0
    lines = [_strict(line) for line in capsys.readouterr().out.splitlines()]
    assert [line["line"] for line in lines] == list(range(1, len(rows) + 1))
    assert all("results" in line for line in lines)


@pytest.mark.parametrize(
    "module",
    [
        "tracesim.tracefile._span_records",
        "tracesim._terminal",
        "tracesim.tracefile._trees",
        "tracesim.batch._ledger",
        "tracesim.cli._eval_io",
    ],
)
def test_docstring_examples(module: str) -> None:
    outcome = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert outcome.attempted > 0
    assert outcome.failed == 0


def test_the_console_exporter_shows_what_it_can_decode(caplog: pytest.LogCaptureFixture) -> None:
    stream = io.StringIO()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(ConsoleExporter(stream)))
    tracer = provider.get_tracer("tests.hostile")
    with tracer.start_as_current_span("root"):
        tracer.start_span("before-1970", start_time=-5).end(end_time=1)  # no OTLP time can say this
    provider.shutdown()
    assert stream.getvalue().startswith("root  ")
    assert "before-1970" not in stream.getvalue()
    refused = "the console exporter cannot show a span (span 1: startTimeUnixNano is out of range)"
    assert refused in caplog.text


@pytest.mark.parametrize("timeout", ["-1", "0", "nan", "inf", "soon"])
def test_replay_refuses_a_timeout_the_http_client_cannot_use(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], timeout: str
) -> None:
    path = sandwich(tmp_path / "t.jsonl", good_line("x", "4444444444444444"))
    with pytest.raises(SystemExit) as refused:
        main(["replay", str(path), "--endpoint", "http://127.0.0.1:9", f"--timeout={timeout}"])
    assert refused.value.code == 2
    assert "argument --timeout: expected" in capsys.readouterr().err


@pytest.mark.parametrize("args", [["--last", "0"], ["--last", "-1"], ["--width", "0"], ["--width", "x"]])
def test_show_refuses_counts_below_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    path = sandwich(tmp_path / "t.jsonl", good_line("x", "4444444444444444"))
    with pytest.raises(SystemExit) as refused:
        main(["show", str(path), *args])
    assert refused.value.code == 2
    assert "expected" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["show", "report"])
def test_a_file_that_cannot_be_read_is_a_usage_error(
    command: str, capsys: pytest.CaptureFixture[str]
) -> None:
    if not Path("/proc/self/mem").is_file():
        pytest.skip("needs Linux /proc (a file that opens but cannot be read)")
    assert main([command, "/proc/self/mem"]) == 2
    assert "cannot read /proc/self/mem: " in capsys.readouterr().err
