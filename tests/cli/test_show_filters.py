"""``tracesim show``: trace headers, filters, the summary line, error details and attributes.

The file of most tests holds five traces written with exact times through the OpenTelemetry SDK:

0. ``answer`` at T0, its ``calculator`` child failing; levenshtein passes.
1. ``answer`` at T0+10 s; levenshtein fails, judge passes.
2. ``answer`` at T0+20 s; the judge errored (timed out).
3. ``answer`` at T0+30 s; a late judge result, failing, on a carrier span.
4. ``summarize`` at T0+1 h, failing.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import Status, StatusCode
from report.tracefiles import TraceWriter, result, trace_id

import tracesim
from tracesim import _semconv as sc
from tracesim.cli import main
from tracesim.exporters import JsonlExporter
from tracesim.tracefile._trees import MAX_ATTRIBUTES

HEADER = re.compile(r"trace ([0-9a-f]{32})  (\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")


@pytest.fixture
def five(tmp_path: Path) -> tuple[Path, list[str]]:
    """The file described above, and its trace ids in start order."""
    w = TraceWriter(tmp_path / "traces.jsonl")
    roots = [
        w.span(
            "answer",
            kind="AGENT",
            start_s=0,
            results=[result("levenshtein", 0.9, passed=True, threshold=0.8)],
        ),
        w.span(
            "answer",
            kind="AGENT",
            start_s=10,
            results=[
                result("levenshtein", 0.5, passed=False, threshold=0.8),
                result("judge", 5, passed=True),
            ],
        ),
        w.span(
            "answer",
            kind="AGENT",
            start_s=20,
            results=[result("judge", status="error", error_type="Timeout")],
        ),
        w.span("answer", kind="AGENT", start_s=30),
        w.span("summarize", kind="AGENT", start_s=3600, error=True),
    ]
    w.span("calculator", kind="TOOL", start_s=0.01, duration_s=0.01, parent=roots[0], error=True)
    w.carrier(roots[3], [result("judge", 2, passed=False)], start_s=31)
    w.close()
    return w.path, [trace_id(root) for root in roots]


def _show(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[list[str], str]:
    """The trace ids ``tracesim show`` printed headers for, in order, and its last line."""
    assert main(["show", *args]) == 0
    lines = capsys.readouterr().out.splitlines()
    return [m[1] for line in lines if (m := HEADER.fullmatch(line))], lines[-1]


def test_each_trace_has_a_header_with_its_id_and_start_and_the_output_ends_with_a_count(
    five: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, ids = five
    assert main(["show", str(path), "--no-details"]) == 0
    out = capsys.readouterr().out
    headers = [HEADER.fullmatch(line) for line in out.splitlines() if line.startswith("trace ")]
    assert [(m[1], m[2]) for m in headers if m] == [
        (ids[0], "2026-09-21T14:13:20.000Z"),
        (ids[1], "2026-09-21T14:13:30.000Z"),
        (ids[2], "2026-09-21T14:13:40.000Z"),
        (ids[3], "2026-09-21T14:13:50.000Z"),
        (ids[4], "2026-09-21T15:13:20.000Z"),
    ]
    first = out.split("\n\n")[0].splitlines()
    assert first[1:] == ["answer  AGENT  100.0 ms", "└─ calculator  TOOL  10.0 ms  ERROR boom"]
    assert out.endswith("\n\nshowing 5 of 5 traces\n")


@pytest.mark.parametrize(
    ("args", "kept"),
    [
        (["--errors"], [0, 4]),  # an error anywhere in the trace, not only at its root
        (["--failed"], [1, 2, 3]),  # failed, errored, and failed later on a carrier span
        (["--failed", "judge"], [2, 3]),
        (["--failed=levenshtein"], [1]),
        (["--name", "calc*"], [0]),
        (["--name", "summarize", "--name", "calc*"], [0, 4]),  # any of them
        (["--name", "Calc*"], []),  # case matters, as in span names
        (["--last", "2"], [3, 4]),  # the two that started last
        (["--errors", "--failed"], []),  # every filter must hold
        (["--since", "30m"], [4]),  # before the newest span read, not before now
        (["--since", "1h"], [1, 2, 3, 4]),  # trace 0 started 100 ms before the newest end - 1 h
        (["--since", "2026-09-21T14:13:30Z"], [1, 2, 3, 4]),
        (["--since", "2026-09-21 14:13:30.001"], [2, 3, 4]),  # no zone: UTC
    ],
)
def test_filters_keep_whole_traces(
    five: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str], args: list[str], kept: list[int]
) -> None:
    path, ids = five
    shown, summary = _show(capsys, str(path), *args)
    assert shown == [ids[i] for i in kept]
    assert summary.startswith(f"showing {len(kept)} of 5 traces (filters: ")


def test_trace_takes_any_prefix_of_the_id(
    five: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, ids = five
    assert _show(capsys, str(path), "--trace", ids[2][:6].upper()) == (
        [ids[2]],
        f"showing 1 of 5 traces (filters: --trace {ids[2][:6].upper()})",
    )
    assert _show(capsys, str(path), "--trace", ids[2]) == (
        [ids[2]],
        f"showing 1 of 5 traces (filters: --trace {ids[2]})",
    )


def test_the_summary_names_the_filters_and_what_last_left_out(
    five: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, ids = five
    shown, summary = _show(capsys, str(path), "--errors", "--last", "1", "--name", "*a*", "--since", "2h")
    assert shown == [ids[4]]
    assert summary == (
        "showing 1 of 5 traces (filters: --errors, --name '*a*', --since 2h (from 2026-09-21T13:13:20.100Z),"
        " --last 1; 1 earlier matching trace left out)"
    )
    assert _show(capsys, str(path), "--name", "nothing") == (
        [],
        "showing 0 of 5 traces (filters: --name nothing)",
    )


def test_failed_before_a_file_reads_the_file(
    five: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, ids = five
    assert _show(capsys, "--failed", str(path)) == (
        [ids[1], ids[2], ids[3]],
        "showing 3 of 5 traces (filters: --failed)",
    )


def test_failed_with_an_evaluator_not_in_the_files_is_a_usage_error(
    five: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    path, _ = five
    assert main(["show", str(path), "--failed", "judgee"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert (
        "--failed judgee: no result of this evaluator in the files (found: judge, levenshtein)"
        in captured.err
    )


@pytest.mark.parametrize("since", ["15", "m", "-1h", "yesterday", "2026-13-01"])
def test_since_refuses_what_it_cannot_read(
    five: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str], since: str
) -> None:
    path, _ = five
    with pytest.raises(SystemExit) as refused:
        main(["show", str(path), f"--since={since}"])
    assert refused.value.code == 2
    assert (
        "expected a duration like 15m, 2h or 1d, or a time like 2026-09-21T14:00:00Z"
        in capsys.readouterr().err
    )


def test_a_real_process_prints_the_filtered_trees(five: tuple[Path, list[str]], tmp_path: Path) -> None:
    path, ids = five
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TRACESIM_", "OTEL_"))}
    done = subprocess.run(
        [sys.executable, "-m", "tracesim", "show", str(path), "--failed", "judge", "--last", "1"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        f"trace {ids[3]}  2026-09-21T14:13:50.000Z",
        "answer  AGENT  100.0 ms",
        "└─ tracesim.score  EVALUATOR  1.0 ms",
        "      scores: ✗ judge 2 fail",
        "",
        "showing 1 of 5 traces (filters: --failed judge, --last 1; 1 earlier matching trace left out)",
    ]


# -- error spans ------------------------------------------------------------------------------


class LookupFailed(Exception):
    """An exception of the user's own, so ``error.type`` is qualified by its module."""


def _to_int(value: str) -> int:
    try:
        return int(value)
    except ValueError as exc:
        raise LookupFailed(f"no number in {value!r}") from exc


def _parse(value: str) -> int:
    return _to_int(value.strip())


def _parse_all(values: list[str]) -> list[int]:
    parsed = []
    for value in values:
        parsed.append(_parse(value))
    return parsed


def _traced_failures(path: Path) -> None:
    """An agent whose tool raises a chained exception, and a span raising a built-in one."""
    tracesim.configure(exporters=["jsonl"], jsonl_path=path, batch_export=False)

    @tracesim.trace(kind="tool")
    def lookup(values: list[str]) -> list[int]:
        return _parse_all(values)

    @tracesim.trace(kind="agent")
    def agent(values: list[str]) -> list[int]:
        return lookup(values)

    @tracesim.trace
    def check(value: int) -> None:
        raise ValueError(f"{value} is negative")

    with pytest.raises(LookupFailed):
        agent(["1", "x"])
    with pytest.raises(ValueError, match="negative"):
        check(-1)
    tracesim.shutdown()


def test_an_error_span_shows_its_type_message_and_last_frames(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "errors.jsonl"
    _traced_failures(path)
    assert main(["show", str(path), "--errors", "--name", "agent"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].startswith("agent  AGENT  ")
    assert lines[1].endswith("  ERROR LookupFailed: no number in 'x'")
    assert lines[2:5] == [
        '│  in: ["1","x"]',
        f"│  error: {__name__}.LookupFailed: no number in 'x'",
        "│  traceback: as in lookup below",  # the same frames: shown once, where it was raised
    ]
    tool = lines.index(next(line for line in lines if line.startswith("└─ lookup  TOOL  ")))
    detail = [line.removeprefix("      ") for line in lines[tool + 1 :]]
    assert detail[:3] == [
        'in: ["1","x"]',
        f"error: {__name__}.LookupFailed: no number in 'x'",  # the qualified type the status lacks
        "traceback (last 3 of 4 frames):",  # lookup, _parse_all, _parse, _to_int; not tracesim's wrapper
    ]
    frame = r'  File ".*test_show_filters\.py", line \d+, in '
    assert re.fullmatch(frame + "_parse_all", detail[3])
    assert detail[4] == "    parsed.append(_parse(value))"
    assert re.fullmatch(frame + "_parse", detail[5])
    assert detail[6] == "    return _to_int(value.strip())"
    assert re.fullmatch(frame + "_to_int", detail[7])
    assert detail[8] == '    raise LookupFailed(f"no number in {value!r}") from exc'
    assert detail[9:] == ["", "showing 1 of 2 traces (filters: --errors, --name agent)"]
    # The frames of the cause (ValueError) are not shown: the last traceback is the error's.


def test_the_error_line_is_left_out_when_the_status_says_the_same(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "errors.jsonl"
    _traced_failures(path)
    assert main(["show", str(path), "--name", "check"]) == 0
    out = capsys.readouterr().out
    assert "ERROR ValueError: -1 is negative" in out
    assert "error:" not in out
    assert "traceback:" in out
    assert '    raise ValueError(f"{value} is negative")' in out
    assert main(["show", str(path), "--name", "check", "--no-details"]) == 0
    assert "traceback" not in capsys.readouterr().out  # one line per span


def _foreign_error(path: Path, stack: str, message: str = "closed") -> None:
    """A span another SDK might write: status ERROR, an exception event, no ``error.type``."""
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(JsonlExporter(path)))
    with provider.get_tracer("tests.show").start_as_current_span("send", record_exception=False) as span:
        attributes = {"exception.type": "IllegalStateException", "exception.message": message}
        span.add_event("exception", {**attributes, "exception.stacktrace": stack})
        span.set_status(Status(StatusCode.ERROR))
    provider.shutdown()


def test_frames_of_other_languages_are_the_innermost_ones(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    java = "java.lang.IllegalStateException: closed\n" + "".join(
        f"\tat com.acme.Frame{i}.call(Frame{i}.java:{i})\n" for i in range(5)
    )
    _foreign_error(tmp_path / "java.jsonl", java)
    assert main(["show", str(tmp_path / "java.jsonl")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.fullmatch(r"send  \d+ µs  ERROR", lines[1])
    assert lines[2:7] == [
        "   error: IllegalStateException: closed",
        "   stack (first 3 of 5 frames):",
        "     at com.acme.Frame0.call(Frame0.java:0)",
        "     at com.acme.Frame1.call(Frame1.java:1)",
        "     at com.acme.Frame2.call(Frame2.java:2)",
    ]


def test_a_huge_stack_trace_shows_a_few_short_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    frames = "".join(
        f'  File "/{"deep/" * 200}mod{i}.py", line {i}, in f{i}\n    {"x" * 5000}\n' for i in range(2000)
    )
    _foreign_error(tmp_path / "huge.jsonl", f"Traceback (most recent call last):\n{frames}E: y", "m" * 10_000)
    assert main(["show", str(tmp_path / "huge.jsonl"), "--width", "80"]) == 0
    lines = capsys.readouterr().out.splitlines()
    detail = [line.removeprefix("   ") for line in lines[2:-2]]
    assert detail[0] == "error: IllegalStateException: " + "m" * 56 + "…"  # 80 characters of the error
    assert detail[1] == "traceback (last 3 of 2,000 frames):"
    assert re.fullmatch(
        r'  File "…(/deep)+/mod1997\.py", line 1997, in f1997', detail[2]
    )  # whole directories
    assert len(detail) == 8
    assert max(len(line) for line in detail[1:]) == 80


# -- attributes -------------------------------------------------------------------------------


def test_attributes_lists_what_a_user_set_bounded(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    w = TraceWriter(tmp_path / "attributes.jsonl")
    mine: dict[str, Any] = {f"app.k{i:02d}": i for i in range(MAX_ATTRIBUTES + 5)}
    mine["app.a_long"] = "v" * 500
    root = w.span(
        "answer",
        kind="AGENT",
        attributes={
            **mine,
            sc.GEN_AI_AGENT_NAME: "answer",  # tracesim's own naming of an agent span: not repeated
            sc.INPUT_VALUE: "hi",
            sc.EXPECTED_VALUE: "hello",
            sc.eval_score("judge"): 1.0,
        },
    )
    llm = {
        "gen_ai.request.model": "gpt-4o",
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 2,
        "gen_ai.provider.name": "openai",
        "llm.input_messages.0.message.content": "hi",
    }
    w.span("chat gpt-4o", kind="LLM", parent=root, attributes=llm)
    w.close()
    assert main(["show", str(w.path), "-v", "--no-details", "--width", "40"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[2] == "│  app.a_long = " + "v" * 39 + "…"  # sorted by name, values cut at --width
    assert lines[3 : 2 + MAX_ATTRIBUTES] == [f"│  app.k{i:02d} = {i}" for i in range(MAX_ATTRIBUTES - 1)]
    assert lines[2 + MAX_ATTRIBUTES] == "│  … 6 more attributes"
    assert lines[3 + MAX_ATTRIBUTES].startswith("└─ chat gpt-4o  LLM  100.0 ms  gpt-4o 10→2 tokens  ")
    assert (
        lines[4 + MAX_ATTRIBUTES] == "      gen_ai.provider.name = openai"
    )  # model, tokens, messages: shown
    assert lines[5 + MAX_ATTRIBUTES].startswith("LLM total: 1 call")
    assert main(["show", str(w.path), "--attributes", "--name", "answer", "--width", "40"]) == 0
    out = capsys.readouterr().out
    assert "│  in: hi\n│  expected: hello\n│  app.a_long = " in out
